"""Seeding a graph with what the user already wrote down: lorebook entries and card characters.

A seed is a node bme did not extract: a character or place with its canonical name (and
the other names it goes by, in `aliases`), or a rule from a constant lorebook entry. Seeds
go in before extraction, so the extractor sees them among the known nodes and a create of
the same name (or one of its aliases) merges into them instead of inventing a variant.
Seeding again is a no-op: a seed whose node exists fills only the columns still empty.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..graph.model import Graph
from ..graph.ops import add_node, make_node
from ..graph.schema import Schema
from .apply import find_latest
from .people import ALIASES

SEED_SEQ = 0   # seeds describe the world before the chat's first message
SEED_KEY = "bmeSeed"  # on a seeded node: where it came from ("lorebook", "card")


@dataclass(frozen=True)
class Seed:
    """One node to make sure of: its type, columns and importance, and where it came from."""

    type: str
    fields: dict[str, Any]
    importance: float = 5.0
    source: str = ""


@dataclass
class SeedReport:
    """What seeding did: nodes created, nodes given missing columns, seeds the schema cannot hold."""

    created: int = 0
    filled: int = 0
    unknown_type: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Did seeding change the graph?"""
        return bool(self.created or self.filled)


def seed_graph(graph: Graph, seeds: list[Seed], schema: Schema, now: int, new_id) -> SeedReport:  # noqa: ANN001
    """Create each seed's node, or fill the empty columns of the node it names; returns counts."""
    report = SeedReport()
    for seed in seeds:
        if seed.type not in schema:
            report.unknown_type += 1
            continue
        fields = {k: v for k, v in seed.fields.items() if k in schema.columns(seed.type) or k == ALIASES}
        existing = find_latest(graph, schema, seed.type, fields) if schema.latest_only(seed.type) \
            else _same_title(graph, seed.type, fields)
        if existing is None:
            node = make_node(seed.type, fields, SEED_SEQ, now, importance=seed.importance, new_id=new_id)
            node.extra[SEED_KEY] = seed.source or "seed"
            add_node(graph, node)
            report.created += 1
            continue
        missing = {k: v for k, v in fields.items() if v not in (None, "") and not existing.fields.get(k)}
        if missing:
            existing.fields.update(missing)
            existing.embedding = None  # its text changed: embedded again with the next batch
            report.filled += 1
    return report


def _same_title(graph: Graph, type_id: str, fields: dict[str, Any]):  # noqa: ANN202 - Node | None
    """A node of a type that is not latest-only (rules) with the same title, if any."""
    want = " ".join(str(fields.get("title", "")).split()).casefold()
    if not want:
        return None
    return next((n for n in graph.active_nodes(type_id)
                 if " ".join(str(n.fields.get("title", "")).split()).casefold() == want), None)
