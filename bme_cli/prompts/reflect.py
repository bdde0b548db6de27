"""The reflection task (spec §6.4): one higher-level conclusion from recent events."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..task import JsonTask
from . import replyschema as rs
from .common import language_rule

REPLY_SCHEMA = rs.record({"insight": rs.text(400), "trigger": rs.text(300), "suggestion": rs.text(300),
                          "importance": rs.whole(1, 10)}, required=["insight", "trigger", "suggestion", "importance"])


class ReflectEvent(BaseModel):
    """A recent event as the reflection sees it."""

    model_config = ConfigDict(frozen=True)
    seq: int
    summary: str
    participants: str = ""
    status: str = ""


class ReflectEntity(BaseModel):
    """A character or thread: its label and its current state or status."""

    model_config = ConfigDict(frozen=True)
    label: str
    state: str = ""


class Contradiction(BaseModel):
    """A valid `contradicts` edge, by the labels of its two ends."""

    model_config = ConfigDict(frozen=True)
    source: str
    target: str


class ReflectInput(BaseModel):
    """The input of one reflection: recent events, characters, threads and contradictions."""

    model_config = ConfigDict(frozen=True)
    language: str = "en"
    events: list[ReflectEvent]
    characters: list[ReflectEntity] = Field(default_factory=list)
    threads: list[ReflectEntity] = Field(default_factory=list)
    contradictions: list[Contradiction] = Field(default_factory=list)


class ReflectReply(BaseModel):
    """`{insight, trigger, suggestion, importance}`; an empty insight means "nothing to add"."""

    insight: str = Field("", max_length=600)
    trigger: str = Field("", max_length=400)
    suggestion: str = Field("", max_length=400)
    importance: float | None = None

    @field_validator("trigger", "suggestion", "insight", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("importance", mode="before")
    @classmethod
    def _clamped(cls, v: Any) -> Any:
        # Out-of-range scores are clamped, not rejected: the step clamps to [5, 10] anyway.
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return min(10.0, max(0.0, float(v)))
        return v


def _system(inp: ReflectInput) -> str:
    return "\n".join([
        "You reflect on a long role-play story. Do not retell events: distil the one conclusion "
        "most worth remembering, such as a change in a relationship, a trend, a hidden motive "
        "or an unresolved clue.",
        "insight: the conclusion; trigger: the event or contradiction behind it; suggestion: "
        "what later narration and memory retrieval should keep in mind; importance: 1-10.",
        language_rule(inp.language, "insight, trigger and suggestion"),
        'Answer with strict JSON: {"insight": "...", "trigger": "...", "suggestion": "...", '
        '"importance": 7}',
    ])


def _user(inp: ReflectInput) -> str:
    lines = ["Recent events (oldest first):"]
    for e in inp.events:
        extra = f" (with {e.participants})" if e.participants else ""
        lines.append(f"[message {e.seq}] {e.summary}{extra}")
    lines.append("Characters: " + ("; ".join(f"{c.label}: {c.state or '(none)'}" for c in inp.characters)
                                   or "(none)"))
    lines.append("Plot threads: " + ("; ".join(f"{t.label}: {t.state or 'active'}" for t in inp.threads)
                                     or "(none)"))
    if inp.contradictions:
        lines.append("Contradictions:")
        lines += [f"{c.source} -> {c.target} (contradicts)" for c in inp.contradictions]
    return "\n".join(lines)


def build_reflect_task(inp: ReflectInput) -> JsonTask[ReflectReply]:
    """The JSON task that produces one reflection (maxRetries 1)."""
    return JsonTask(kind="reflect", system=_system(inp), user=_user(inp),
                    response_model=ReflectReply, data=inp, max_retries=1, json_schema=REPLY_SCHEMA)
