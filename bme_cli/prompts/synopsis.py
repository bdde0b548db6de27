"""The synopsis task (spec §6.3): a bounded "previously on" text for the whole story."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..task import JsonTask
from . import replyschema as rs
from .common import language_rule

MAX_SYNOPSIS_CHARS = 1500
SCHEMA_SYNOPSIS_CHARS = 1000  # the prompt asks for ~600
REPLY_SCHEMA = rs.record({"summary": rs.text(SCHEMA_SYNOPSIS_CHARS)}, required=["summary"])
_TARGET = {
    "en": "at most about 120 words (600 characters)",
    "zh": "at most about 200 Chinese characters",
}


class SynopsisEvent(BaseModel):
    """One event line: where it happened, how compressed it is, how much it matters."""

    model_config = ConfigDict(frozen=True)
    seq: int
    level: int = 0
    importance: float = 5.0
    summary: str


class CharacterState(BaseModel):
    """A character's name and current state."""

    model_config = ConfigDict(frozen=True)
    name: str
    state: str = ""


class ThreadState(BaseModel):
    """A plot thread's title and status."""

    model_config = ConfigDict(frozen=True)
    title: str
    status: str = "active"


class SynopsisInput(BaseModel):
    """The bounded input of one synopsis: selected events, characters, threads, previous text."""

    model_config = ConfigDict(frozen=True)
    language: str = "en"
    current_seq: int
    events: list[SynopsisEvent]
    characters: list[CharacterState] = Field(default_factory=list)
    threads: list[ThreadState] = Field(default_factory=list)
    previous: str = ""
    omitted_events: int = 0


class SynopsisReply(BaseModel):
    """`{"summary": ...}`; an empty summary means "no synopsis this time"."""

    summary: str = Field(max_length=MAX_SYNOPSIS_CHARS)


def _system(inp: SynopsisInput) -> str:
    return "\n".join([
        "You write the 'previously on' synopsis of a long role-play story: the core conflict, "
        "the key turning points and where the main characters stand now.",
        f"Keep it to {_TARGET.get(inp.language, _TARGET['en'])}; do not invent facts.",
        "Summaries marked (level N) already condense several earlier events.",
        language_rule(inp.language, "the synopsis"),
        'Answer with strict JSON: {"summary": "..."}',
    ])


def _user(inp: SynopsisInput) -> str:
    lines = []
    if inp.previous:
        lines += ["Previous synopsis:", inp.previous, ""]
    head = "Events (oldest first)"
    if inp.omitted_events:
        head += f"; {inp.omitted_events} less important or older events are left out"
    lines.append(head + ":")
    for e in inp.events:
        level = f" (level {e.level})" if e.level else ""
        lines.append(f"[message {e.seq}]{level} {e.summary}")
    chars = "; ".join(f"{c.name}: {c.state or '(state unknown)'}" for c in inp.characters)
    threads = "; ".join(f"{t.title}: {t.status or 'active'}" for t in inp.threads)
    lines += ["", f"Characters: {chars or '(none)'}", f"Plot threads: {threads or '(none)'}",
              f"The story is now at message {inp.current_seq}."]
    return "\n".join(lines)


def build_synopsis_task(inp: SynopsisInput) -> JsonTask[SynopsisReply]:
    """The JSON task that writes (or rewrites) the synopsis (maxRetries 1)."""
    return JsonTask(kind="synopsis", system=_system(inp), user=_user(inp),
                    response_model=SynopsisReply, data=inp, max_retries=1, json_schema=REPLY_SCHEMA)
