"""The evolution task (spec §6.5, A-MEM style): does a new memory change how old ones read?

Neighbours are shown under short references (n1, n2, ...) so the model cannot name, and
the step will not edit, any node it was not shown (spec §10.21). The reply keeps
ST-BME's key names (`nodeId`, `newContext`, `newTags`).
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from ..task import JsonTask
from . import replyschema as rs
from .common import language_rule

NEW_REF = "new"

Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40)]


class EvolveNodeView(BaseModel):
    """A node as the model sees it: its reference, type, non-empty fields and tags."""

    model_config = ConfigDict(frozen=True)
    ref: str
    type: str
    fields: dict[str, str] = Field(default_factory=dict)
    clusters: list[str] = Field(default_factory=list)
    similarity: float = 0.0


class EvolveInput(BaseModel):
    """One new memory and the neighbours (by embedding similarity) it may revise or link to."""

    model_config = ConfigDict(frozen=True)
    language: str = "en"
    new: EvolveNodeView
    neighbours: list[EvolveNodeView]


class NeighborUpdate(BaseModel):
    """A revision of one shown neighbour: new context text and/or new tags."""

    model_config = ConfigDict(populate_by_name=True)
    node_id: str = Field(alias="nodeId", max_length=100)
    new_context: str | None = Field(None, alias="newContext", max_length=600)
    new_tags: list[Tag] | None = Field(None, alias="newTags", max_length=10)


class EvolveReply(BaseModel):
    """`{should_evolve, reason, suggested_connections, neighbor_updates}`."""

    should_evolve: bool = False
    reason: str = Field("", max_length=500)
    suggested_connections: list[str] = Field(default_factory=list, max_length=20)
    neighbor_updates: list[NeighborUpdate] = Field(default_factory=list, max_length=20)


def _line(view: EvolveNodeView, with_tags: bool) -> str:
    parts = [f"type={view.type}"] + [f"{k}: {v}" for k, v in view.fields.items() if v]
    if with_tags:
        parts.append(f"tags={'/'.join(view.clusters) or '(none)'}")
    return f"[{view.ref}] " + ", ".join(parts)


def _system(inp: EvolveInput) -> str:
    return "\n".join([
        "You maintain the memory of a long role-play story. Decide whether a new memory truly "
        "changes how some older memories should be understood, and if so how to revise them "
        "and which of them it should be linked to.",
        "Examples: a character unmasked as a spy changes the motives recorded in earlier "
        "events; a hidden property of a place discovered now updates that place.",
        "Evolve only when understanding really changes; no forced links; every update must "
        "be meaningful. Refer to old memories only by their bracketed references "
        f"({', '.join(n.ref for n in inp.neighbours)}).",
        "newContext is a short sentence on how the old memory reads now (or null); newTags "
        "replaces its tags (or null).",
        language_rule(inp.language, "newContext and reason"),
        'Answer with strict JSON: {"should_evolve": false, "reason": "", "suggested_connections": '
        '["n1"], "neighbor_updates": [{"nodeId": "n1", "newContext": null, "newTags": null}]}',
    ])


def _user(inp: EvolveInput) -> str:
    lines = ["New memory:", _line(inp.new, False), "", "Older memories:"]
    lines += [_line(n, True) for n in inp.neighbours]
    lines.append(f"{len(inp.neighbours)} older memories shown; revise or link only these.")
    return "\n".join(lines)


def reply_schema(inp: EvolveInput) -> dict[str, Any]:
    """Bounded: references only to the shown neighbours, each at most once, short texts."""
    refs = [n.ref for n in inp.neighbours] or [NEW_REF]
    update = rs.record({"nodeId": rs.choice(refs), "newContext": rs.nullable(rs.text(300)),
                        "newTags": rs.nullable(rs.items(rs.text(40), 6))}, required=["nodeId"])
    return rs.record({"should_evolve": rs.flag(), "reason": rs.text(300),
                      "suggested_connections": rs.items(rs.choice(refs), len(inp.neighbours)),
                      "neighbor_updates": rs.items(update, len(inp.neighbours))},
                     required=["should_evolve", "reason", "suggested_connections", "neighbor_updates"])


def build_evolve_task(inp: EvolveInput) -> JsonTask[EvolveReply]:
    """The JSON task that decides one new memory's evolution (maxRetries 1)."""
    return JsonTask(kind="evolve", system=_system(inp), user=_user(inp),
                    response_model=EvolveReply, data=inp, max_retries=1, json_schema=reply_schema(inp))
