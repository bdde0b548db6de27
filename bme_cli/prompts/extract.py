"""The extraction task (spec §3.3-3.4): the reply model and the prompt builder (the typed
input is extract_input.py, the bounded reply schema extract_schema.py).

The reply model is lenient the way a model's JSON needs: unknown keys are ignored, numbers
given as strings are coerced, over-long strings are clipped, field values that are not
scalars are dropped, and an operation that cannot be read is dropped and *counted*
(`invalid_ops`, `excess_ops`) rather than failing the whole reply. Model output is only
ever data: it is never executed, and never used as a path.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from pydantic.json_schema import SkipJsonSchema

from ..graph.schema import RELATION_TYPES, Schema
from ..task import JsonTask
# The input models live in extract_input.py; imported from here too, where the task is.
from .extract_input import (DialogueMessage, ExtractInput, OverviewGroup, OverviewNode,  # noqa: F401
                            SchemaColumn, SchemaType, schema_types)
from .extract_schema import reply_schema

MAX_OPS = 64
MAX_FIELD_CHARS = 2000
MAX_FIELDS = 32
MAX_KEY_CHARS = 64
MAX_ID_CHARS = 200
MAX_THOUGHT_CHARS = 4000
OVERVIEW_PER_TYPE = 10  # ST-BME shows the last 10 nodes of each type
EXTRACT_RETRIES = 2


# -- lenient scalars ------------------------------------------------------------------------
def _clip(limit: int):
    def convert(v: Any) -> Any:
        if v is None:
            return None
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, (int, float)):
            v = str(v)
        if not isinstance(v, str):
            return None
        return v.strip()[:limit] or None
    return convert


def _lenient_float(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _lenient_int(v: Any) -> int | None:
    f = _lenient_float(v)
    return int(f) if f is not None else None


ShortStr = Annotated[str | None, BeforeValidator(_clip(MAX_ID_CHARS))]
LooseFloat = Annotated[float | None, BeforeValidator(_lenient_float)]
LooseInt = Annotated[int | None, BeforeValidator(_lenient_int)]


def _cell(value: Any) -> Any:
    """A field value kept as a scalar: strings clipped, lists of scalars joined, junk -> _DROP."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else _DROP
    if isinstance(value, str):
        return value.strip()[:MAX_FIELD_CHARS]
    if isinstance(value, (list, tuple)) and all(isinstance(x, (str, int, float)) for x in value):
        return ", ".join(str(x).strip() for x in value if str(x).strip())[:MAX_FIELD_CHARS]
    return _DROP


_DROP = object()


def clean_fields(raw: Any, *, keep_none: bool = False) -> dict[str, Any]:
    """Node fields made safe: string keys <= 64 chars, scalar values <= 2000 chars, <= 32 keys.

    Empty strings and None are dropped unless keep_none (an update may clear a field).
    """
    if not isinstance(raw, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY_CHARS:
            continue
        v = _cell(value)
        if v is _DROP or ((v is None or v == "") and not keep_none):
            continue
        out[key.strip()] = v
        if len(out) >= MAX_FIELDS:
            break
    return out


# -- reply ----------------------------------------------------------------------------------
class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class LinkSpec(_Lenient):
    """A link from the operation's node to an existing node (by id) or a created one (by ref)."""

    target_node_id: ShortStr = Field(None, alias="targetNodeId")
    target_ref: ShortStr = Field(None, alias="targetRef")
    relation: Annotated[str, BeforeValidator(lambda v: _clip(64)(v) or "related")] = "related"
    strength: LooseFloat = None


def _links(v: Any) -> Any:
    # A single link object, or junk entries in the list, should not sink the operation.
    if isinstance(v, dict):
        v = [v]
    if not isinstance(v, list):
        return []
    return [x for x in v if isinstance(x, (dict, LinkSpec))][:MAX_OPS]


Links = Annotated[list[LinkSpec], BeforeValidator(_links)]
Fields = Annotated[dict[str, Any], BeforeValidator(lambda v: clean_fields(v))]
UpdateFields = Annotated[dict[str, Any], BeforeValidator(lambda v: clean_fields(v, keep_none=True))]


class CreateOp(_Lenient):
    """Create a node of a schema type (or update the existing one, for latestOnly types)."""

    action: Literal["create"] = "create"
    type: Annotated[str, BeforeValidator(_clip(MAX_KEY_CHARS))]
    fields: Fields = Field(default_factory=dict)
    importance: LooseFloat = None
    clusters: Annotated[list[str], BeforeValidator(
        lambda v: [c.strip()[:64] for c in v if isinstance(c, str) and c.strip()][:10]
        if isinstance(v, list) else [])] = Field(default_factory=list)
    ref: ShortStr = None
    links: Links = Field(default_factory=list)


class UpdateOp(_Lenient):
    """Merge fields into an existing node; links and ref are bme additions (kept by the conflict check)."""

    action: Literal["update"] = "update"
    node_id: Annotated[str, BeforeValidator(_clip(MAX_ID_CHARS))] = Field(alias="nodeId")
    fields: UpdateFields = Field(default_factory=dict)
    seq: LooseInt = None
    source_node_id: ShortStr = Field(None, alias="sourceNodeId")
    temporal_strength: LooseFloat = Field(None, alias="temporalStrength")
    importance: LooseFloat = None
    ref: ShortStr = None
    links: Links = Field(default_factory=list)


class DeleteOp(_Lenient):
    """Archive a node (soft delete) and invalidate its edges."""

    action: Literal["delete"] = "delete"
    node_id: Annotated[str, BeforeValidator(_clip(MAX_ID_CHARS))] = Field(alias="nodeId")


Operation = Annotated[Union[CreateOp, UpdateOp, DeleteOp], Field(discriminator="action")]
_OP_ADAPTER: TypeAdapter[Any] = TypeAdapter(Operation)


class ExtractReply(_Lenient):
    """The model's answer: its reasoning and the operations to run (spec §3.4)."""

    thought: Annotated[str, BeforeValidator(lambda v: _clip(MAX_THOUGHT_CHARS)(v) or "")] = ""
    operations: list[Operation]
    # Computed by the validator (kept out of the JSON schema a model is shown):
    invalid_ops: SkipJsonSchema[int] = 0  # operations that could not be read, dropped
    excess_ops: SkipJsonSchema[int] = 0   # operations beyond MAX_OPS, dropped
    cut_off: SkipJsonSchema[int] = 0      # 1 when the reply was cut off and only its complete
                                          # operations were kept (set by jsonreply.salvage)

    @model_validator(mode="before")
    @classmethod
    def _sort_operations(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("operations"), list):
            return data  # no operations array: the reply is unusable (validation fails)
        ok: list[Any] = []
        # Carried over when an already-checked reply is validated again; never below 0, so
        # a model cannot hide the operations it made bme skip.
        invalid = max(0, _lenient_int(data.get("invalid_ops")) or 0)
        excess = max(0, _lenient_int(data.get("excess_ops")) or 0)
        cut_off = min(1, max(0, _lenient_int(data.get("cut_off")) or 0))
        for raw in data["operations"]:
            if isinstance(raw, dict) and isinstance(raw.get("action"), str):
                raw = {**raw, "action": raw["action"].strip().lower()}
            try:
                op = _OP_ADAPTER.validate_python(raw)
            except ValidationError:
                invalid += 1
                continue
            if len(ok) >= MAX_OPS:
                excess += 1
            else:
                ok.append(op)
        return {**data, "operations": ok, "invalid_ops": invalid, "excess_ops": excess, "cut_off": cut_off}


# -- prompt ---------------------------------------------------------------------------------
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese (简体中文)"}

SYSTEM_PROMPT = """You are a memory extractor for a long role-play or conversation. You read the \
newest part of a dialogue and record what is worth remembering as structured nodes in a \
knowledge graph, so that it can be recalled many turns later.

Node types you may create: {type_list}.

Answer with strict JSON only, no markdown fences, in this shape:
{{
  "thought": "a short analysis of what happened and what changed",
  "operations": [
    {{"action": "create", "type": "event", "ref": "ev1",
      "fields": {{"summary": "...", "participants": "A, B", "status": "ongoing"}},
      "importance": 6,
      "links": [{{"targetNodeId": "<an id from the graph overview>", "relation": "involved_in", "strength": 0.9}},
                {{"targetRef": "loc1", "relation": "occurred_at"}}]}},
    {{"action": "create", "type": "location", "ref": "loc1", "fields": {{"name": "...", "state": "..."}}}},
    {{"action": "update", "nodeId": "<an id from the graph overview>", "fields": {{"state": "..."}}}}
  ]
}}

Rules:
1. Create at most ONE event node for this batch; fold smaller happenings into it. Its summary \
says what happened with cause and result, names who did what, and keeps concrete details: \
names, numbers, dates, objects, places.
2. When a character, location or other named thing already appears in the graph overview, \
update that node by its id instead of creating a new one; create only what is new.
3. "nodeId" and "targetNodeId" must be ids listed in the graph overview; to link to a node \
created in this same answer, give that node a "ref" and use "targetRef".
4. Relations must be one of: {relations}. Use "contradicts" for information that conflicts \
with a memory, "evolves" for new information that revises an old memory, "temporal_update" \
for a state that changed over time.
5. Record only what the dialogue shows. Do not invent names, facts or motives.
6. importance runs from 1 to 10: 5 for an ordinary event, 8 or more for a key turning point.
7. Write summaries as short abstractions in your own words, not copied lines.
8. Write every field value in {language}.
9. If nothing is worth remembering, return an empty "operations" list."""

USER_PROMPT = """## Dialogue to extract (messages #{start} to #{end})

{dialogue}

## Current graph

{overview}

## Node types

{schema}

Output the JSON object with "thought" and "operations" now. Field values in {language}."""


def speaker_line(m: DialogueMessage) -> str:
    """`<name> (<date>): <content>`, a message as the prompt shows it after its seq and role."""
    when = f" ({m.date})" if m.date else ""
    return f"{m.name or m.role}{when}: {m.text}"


def render_dialogue(messages: list[DialogueMessage]) -> str:
    """`#<seq> [<role>] <name>: <content>` lines separated by blank lines (dated when known)."""
    return "\n\n".join(f"#{m.seq} [{m.role}] {speaker_line(m)}" for m in messages)


def render_overview(groups: list[OverviewGroup]) -> str:
    """Per type a header with the active count, then the last nodes as `- [id] label`."""
    parts = []
    for g in groups:
        if not g.count:
            continue
        lines = [f"### {g.type} ({g.label}): {g.count} node(s)"]
        for n in g.nodes:
            lines.append(f"  - [{n.id}] {n.label}" + (f" ({n.detail})" if n.detail else ""))
        parts.append("\n".join(lines))
    return "\n\n".join(parts) if parts else "(the graph is empty: no nodes yet)"


def render_schema(types: list[SchemaType]) -> str:
    """Each type with its columns: name, a required marker, and the hint."""
    blocks = []
    for t in types:
        head = f'type "{t.id}" ({t.label})' + (" - one node per name, update it" if t.latest_only else "")
        cols = [f"  {c.name}{' (required)' if c.required else ''}: {c.hint}" for c in t.columns]
        blocks.append("\n".join([head + ":", *cols]))
    return "\n\n".join(blocks)


def build_extract_task(inp: ExtractInput, schema: Schema,
                       custom_prompt: str | None = None) -> JsonTask[ExtractReply]:
    """The extraction JsonTask: custom system prompt if given, else bme's; max_retries 2."""
    language = LANGUAGE_NAMES.get(inp.language, "English")
    types = inp.types or schema_types(schema)
    system = (custom_prompt or "").strip() or SYSTEM_PROMPT.format(
        type_list=", ".join(f"{t.id}({t.label})" for t in types),
        relations=", ".join(RELATION_TYPES), language=language)
    user = USER_PROMPT.format(start=inp.start_seq, end=inp.end_seq,
                              dialogue=render_dialogue(inp.messages),
                              overview=render_overview(inp.overview),
                              schema=render_schema(types), language=language)
    return JsonTask(kind="extract", system=system, user=user, response_model=ExtractReply,
                    data=inp, max_retries=EXTRACT_RETRIES, json_schema=reply_schema(inp, types))
