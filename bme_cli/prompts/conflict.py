"""The precise conflict check task (spec §3.6): is a new memory new, a correction, or a duplicate?

bme shows the model every close match of the SAME type (up to 3, not only the best one),
and the target it names must be one of them (checked by memory.conflict).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from ..task import JsonTask
from . import replyschema as rs
from .extract import LANGUAGE_NAMES, ShortStr, clean_fields

CONFLICT_RETRIES = 1
SCHEMA_FIELD_CHARS = 300


class ConflictMatch(BaseModel):
    """An existing memory close to the new one."""

    id: str
    type: str
    fields: dict[str, Any]
    text: str
    similarity: float


class ConflictInput(BaseModel):
    """The new memory (type, fields, embedding text) and its closest same-type memories."""

    type: str
    fields: dict[str, Any]
    text: str
    matches: list[ConflictMatch]
    language: Literal["en", "zh"] = "en"


def _action(v: Any) -> Any:
    return v.strip().lower() if isinstance(v, str) else v


class ConflictReply(BaseModel):
    """add: a different memory; update: correct or extend targetId; skip: a pure duplicate."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    action: Annotated[Literal["add", "update", "skip"], BeforeValidator(_action)]
    target_id: ShortStr = Field(None, alias="targetId")
    merged_fields: Annotated[dict[str, Any], BeforeValidator(lambda v: clean_fields(v))] = Field(
        default_factory=dict, alias="mergedFields")


SYSTEM_PROMPT = """You keep a memory store free of duplicates. Given a new memory and the \
existing memories most similar to it, decide how the new one relates to them:
- "add": it is about something different; keep it as a new memory;
- "update": it corrects or adds to one existing memory; name that memory's id in "targetId" \
and give the combined fields in "mergedFields" (every field, merged, written in {language});
- "skip": it says nothing the existing memory does not already say.
Answer with strict JSON only: {{"action": "add" | "update" | "skip", "targetId": "<id or null>", \
"mergedFields": {{}}}}"""


def _fields_text(fields: dict[str, Any]) -> str:
    return "\n".join(f"    {k}: {v}" for k, v in fields.items() if v not in (None, ""))


def reply_schema(inp: ConflictInput) -> dict[str, Any]:
    """Bounded: the action, a target among the shown matches, the fields the memories have."""
    columns = list(dict.fromkeys([*inp.fields, *(k for m in inp.matches for k in m.fields)]))
    return rs.record({"action": rs.choice(("add", "update", "skip")),
                      "targetId": rs.nullable(rs.choice(m.id for m in inp.matches)) if inp.matches else {"type": "null"},
                      "mergedFields": rs.record({c: rs.text(SCHEMA_FIELD_CHARS) for c in columns})},
                     required=["action", "targetId", "mergedFields"])


def build_conflict_task(inp: ConflictInput) -> JsonTask[ConflictReply]:
    """The conflict-check JsonTask (max_retries 1)."""
    lines = [f"New memory [{inp.type}]: {inp.text}", "", "Existing memories:"]
    for m in inp.matches:
        lines.append(f"  - id {m.id} [{m.type}], similarity {m.similarity:.3f}")
        lines.append(_fields_text(m.fields))
    lines += ["", "Answer with the JSON object now."]
    system = SYSTEM_PROMPT.format(language=LANGUAGE_NAMES.get(inp.language, "English"))
    return JsonTask(kind="conflict", system=system, user="\n".join(lines),
                    response_model=ConflictReply, data=inp, max_retries=CONFLICT_RETRIES,
                    json_schema=reply_schema(inp))
