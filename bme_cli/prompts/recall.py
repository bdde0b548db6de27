"""The LLM precise-recall task (spec §4.6, fixed per §10.8): pick the memories that matter now.

The model sees the recent messages, the latest user message and up to 30 scored candidates,
and answers `{"selected_ids": [...], "reason": "..."}`. The caller keeps only candidate ids,
caps the list at `max_nodes`, and falls back to its own ranking when nothing usable comes back.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..task import JsonTask
from . import replyschema as rs

EMPTY_CONTEXT = {"en": "(no earlier messages)", "zh": "（没有更早的消息）"}
_MARKERS = {"en": ("type=", "score="), "zh": ("类型=", "评分=")}


class RecallCandidate(BaseModel):
    """One memory the model may choose: its id, type label, non-empty fields and fused score."""

    model_config = ConfigDict(frozen=True)
    id: str
    type_label: str
    fields: dict[str, str] = Field(default_factory=dict)
    score: float = 0.0


class RecallInput(BaseModel):
    """Everything the recall prompt (or the offline heuristic) needs."""

    model_config = ConfigDict(frozen=True)
    recent_messages: list[str] = Field(default_factory=list)   # "[user]: text", chronological
    user_message: str = ""
    candidates: list[RecallCandidate]
    max_nodes: int = Field(8, ge=1)
    language: str = "en"


class RecallReply(BaseModel):
    """The model's choice: candidate ids in priority order and a short reason."""

    selected_ids: list[str]
    reason: str = ""

    @field_validator("selected_ids", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> Any:
        # Models sometimes answer numbers or pad ids with spaces; keep the strings usable.
        if isinstance(v, list):
            return [str(x).strip() for x in v if x is not None and str(x).strip()]
        return v

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, v: Any) -> Any:
        return "" if v is None else str(v)


def candidate_line(c: RecallCandidate, language: str = "en") -> str:
    """`[id] type=<label>, k: v, ... (score=0.123)`, the line format of spec §4.6."""
    type_mark, score_mark = _MARKERS["zh" if language == "zh" else "en"]
    fields = "".join(f", {k}: {v}" for k, v in c.fields.items() if v)
    return f"[{c.id}] {type_mark}{c.type_label}{fields} ({score_mark}{c.score:.3f})"


def _system(inp: RecallInput) -> str:
    return "\n".join([
        "You choose which stored memories a role-play model should be reminded of before its next reply.",
        "Read the recent conversation and the latest user message, then pick the candidate memories "
        "that matter most, in this order of priority:",
        "1. memories directly about the current scene (who and what is present or being discussed);",
        "2. memories that keep cause and effect continuous (what led here, promises, open consequences);",
        "3. background memories that could still shape what happens next.",
        f"Pick at most {inp.max_nodes}. Use only ids from the candidate list; pick none that do not help.",
        'Answer with strict JSON: {"selected_ids": ["<id>", ...], "reason": "<one sentence>"}.',
    ])


def _user(inp: RecallInput) -> str:
    lang = "zh" if inp.language == "zh" else "en"
    context = "\n---\n".join(inp.recent_messages) or EMPTY_CONTEXT[lang]
    lines = ["Recent conversation:", context, "", "Latest user message:", inp.user_message or "(none)", "",
             f"Candidate memories ({len(inp.candidates)}):"]
    lines.extend(candidate_line(c, lang) for c in inp.candidates)
    return "\n".join(lines)


REASON_CHARS = 200


def reply_schema(inp: RecallInput) -> dict[str, Any]:
    """Bounded: at most max_nodes ids, each one of the candidates', and a short reason."""
    ids = rs.choice(c.id for c in inp.candidates) if inp.candidates else rs.text(0)
    return rs.record({"selected_ids": rs.items(ids, inp.max_nodes), "reason": rs.text(REASON_CHARS)},
                     required=["selected_ids", "reason"])


def build_recall_task(inp: RecallInput) -> JsonTask[RecallReply]:
    """The JSON task that selects memories (maxRetries 1, as in ST-BME)."""
    return JsonTask(kind="recall", system=_system(inp), user=_user(inp),
                    response_model=RecallReply, data=inp, max_retries=1, json_schema=reply_schema(inp))
