"""The bounded JSON schema of an extraction reply, built per batch from the node-type schema
and the graph overview (see replyschema.py for why every reply schema is bounded)."""
from __future__ import annotations

from typing import Any

from ..graph.schema import RELATION_TYPES
from . import replyschema as rs
from .extract_input import ExtractInput, SchemaColumn, SchemaType

# Bounds of the JSON schema a grammar-constrained server is sent (ExtractReply, which
# validates, stays lenient for servers that ignore it): tight enough that a model repeating itself
# stops soon, loose enough for a full batch.
SCHEMA_OPS = 10
SCHEMA_LINKS = 4
SCHEMA_CLUSTERS = 4
SCHEMA_FIELD_CHARS = 300
SCHEMA_THOUGHT_CHARS = 300
SCHEMA_REF_CHARS = 24


def _link_schema(known_ids: list[str]) -> dict[str, Any]:
    target = {"targetNodeId": rs.choice(known_ids)} if known_ids else {}
    return rs.record({**target, "targetRef": rs.text(SCHEMA_REF_CHARS),
                      "relation": rs.choice(RELATION_TYPES)}, required=["relation"])


def _field_schema(columns: list[SchemaColumn], required: bool) -> dict[str, Any]:
    return rs.record({c.name: rs.text(SCHEMA_FIELD_CHARS) for c in columns},
                     required=[c.name for c in columns if c.required] if required else ())


def reply_schema(inp: ExtractInput, types: list[SchemaType]) -> dict[str, Any]:
    """The bounded JSON schema of a reply: one create shape per node type (its columns as the
    only field keys), and update/delete only of nodes the overview shows, by id."""
    known = [n.id for g in inp.overview for n in g.nodes]
    link = rs.items({"$ref": "#/$defs/link"}, SCHEMA_LINKS)
    ops = [rs.record({"action": rs.const("create"), "type": rs.const(t.id), "ref": rs.text(SCHEMA_REF_CHARS),
                      "fields": _field_schema(t.columns, True), "importance": rs.whole(1, 10),
                      "clusters": rs.items(rs.text(32), SCHEMA_CLUSTERS), "links": link},
                     required=["action", "type", "fields"]) for t in types]
    if known:
        every_column = list({c.name: c for t in types for c in t.columns}.values())
        ops.append(rs.record({"action": rs.const("update"), "nodeId": rs.choice(known),
                              "fields": _field_schema(every_column, False), "links": link},
                             required=["action", "nodeId", "fields"]))
        ops.append(rs.record({"action": rs.const("delete"), "nodeId": rs.choice(known)},
                             required=["action", "nodeId"]))
    reply = rs.record({"thought": rs.text(SCHEMA_THOUGHT_CHARS),
                       "operations": rs.items(rs.any_of(ops), SCHEMA_OPS)}, required=["thought", "operations"])
    return {**reply, "$defs": {"link": _link_schema(known)}}  # one link shape, referred to by every op
