"""The compression task (spec §6.1): merge several same-type, same-level nodes into one.

The input is plain data (the offline heuristic reads it as is); the reply is validated
before the step touches the graph (spec §10.2).
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..task import JsonTask
from . import replyschema as rs
from .common import cell_text, language_rule

MAX_FIELD_CHARS = 1200
_LENGTH_RULE = {
    "en": "Keep the main text field to about 60 words (300 characters).",
    "zh": "Keep the main text field to about 150 Chinese characters.",
}


class ColumnSpec(BaseModel):
    """One schema column: its name, what it holds, whether it must be filled."""

    model_config = ConfigDict(frozen=True)
    name: str
    hint: str = ""
    required: bool = False


class CompressNodeView(BaseModel):
    """One child as the model sees it: where it sits in the chat and its non-empty fields."""

    model_config = ConfigDict(frozen=True)
    seq: int
    seq_range: tuple[int, int]
    importance: float = 5.0
    fields: dict[str, str] = Field(default_factory=dict)


class CompressInput(BaseModel):
    """Everything the compression prompt (or the offline heuristic) needs for one chunk."""

    model_config = ConfigDict(frozen=True)
    type_id: str
    type_label: str
    columns: list[ColumnSpec]
    instruction: str = ""
    level: int = 0
    language: str = "en"
    nodes: list[CompressNodeView]


class CompressReply(BaseModel):
    """`{"fields": {column: text}}`; at least one non-empty value, each value bounded."""

    fields: dict[str, str] = Field(max_length=40)

    @field_validator("fields", mode="before")
    @classmethod
    def _texts(cls, v: Any) -> Any:
        # Models often answer participants as a list or leave a column null.
        if isinstance(v, dict):
            return {str(k): cell_text(x) for k, x in v.items()}
        return v

    @model_validator(mode="after")
    def _bounded(self) -> "CompressReply":
        if not any(self.fields.values()):
            raise ValueError("every field is empty")
        too_long = [k for k, x in self.fields.items() if len(x) > MAX_FIELD_CHARS]
        if too_long:
            raise ValueError(f"fields longer than {MAX_FIELD_CHARS} characters: {', '.join(too_long)}")
        return self


def _system(inp: CompressInput) -> str:
    cols = ", ".join(f'"{c.name}"' for c in inp.columns)
    instruction = inp.instruction.strip() or "Compress them into one concise record."
    return "\n".join([
        "You are a memory compressor for a long role-play story. You merge several memory "
        f"records of the same type ({inp.type_label}) into one higher-level record.",
        instruction,
        "Rules: keep causes and consequences, irreversible outcomes and unresolved "
        "foreshadowing; drop repetition and small talk; do not invent facts.",
        _LENGTH_RULE.get(inp.language, _LENGTH_RULE["en"]),
        language_rule(inp.language, "every field value"),
        f'Answer with strict JSON: {{"fields": {{{cols}}}}} where every value is a string.',
    ])


def _user(inp: CompressInput) -> str:
    lines = [f"{len(inp.nodes)} {inp.type_label} records (level {inp.level}) to merge:"]
    for i, node in enumerate(inp.nodes, 1):
        lines.append(f"record {i} [messages {node.seq_range[0]}-{node.seq_range[1]}]")
        lines += [f"  {k}: {v}" for k, v in node.fields.items() if v]
    required = [c.name for c in inp.columns if c.required]
    if required:
        lines.append(f"Required fields: {', '.join(required)}.")
    return "\n".join(lines)


SCHEMA_FIELD_CHARS = 600  # the prompt asks for ~300; MAX_FIELD_CHARS is what validation allows


def reply_schema(inp: CompressInput) -> dict[str, Any]:
    """Bounded: the type's columns as the only keys, required ones required."""
    fields = rs.record({c.name: rs.text(SCHEMA_FIELD_CHARS) for c in inp.columns},
                       required=[c.name for c in inp.columns if c.required])
    return rs.record({"fields": fields}, required=["fields"])


def build_compress_task(inp: CompressInput) -> JsonTask[CompressReply]:
    """The JSON task that merges one chunk of nodes (maxRetries 1, as in ST-BME)."""
    return JsonTask(kind="compress", system=_system(inp), user=_user(inp),
                    response_model=CompressReply, data=inp, max_retries=1, json_schema=reply_schema(inp))
