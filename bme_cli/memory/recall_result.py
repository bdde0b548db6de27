"""What one recall returns: the block, the nodes and quotes in it, and how it was made.

`RecallResult.as_json` is the shape of `bme recall --format json` and of each batch line;
render/recall.py draws the tables and `--explain` from the same object.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..graph.model import Node
from .excerpts import Unit
from .explain import Candidate
from .query import Query
from .rerank import RerankNote


@dataclass
class Injected:
    """A node in the block: its section, bucket, fused score and score parts."""

    node: Node
    section: str                 # "core" | "recalled"
    bucket: str
    score: float
    scores: dict[str, float]


@dataclass
class Quoted:
    """An excerpt in the block: the unit, its fused score and score parts."""

    unit: Unit
    score: float
    scores: dict[str, float]


@dataclass
class RecallResult:
    """The block and how it was made."""

    query: Query
    text: str
    tokens: int
    budget: int
    nodes: list[Injected]
    candidates: list[Candidate] = field(default_factory=list)  # filled only with explain=True
    warnings: list[str] = field(default_factory=list)
    gaps: list[tuple[int, int]] = field(default_factory=list)  # failed batches: messages not in the graph
    rerank: RerankNote | None = None  # what the reranker did, when one is configured
    quotes: list[Quoted] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The JSON shape of `bme recall --format json` and batch mode: every injected item
        under "nodes", excerpts as type "excerpt" with the message they quote as their seqRange."""
        items = [{"id": i.node.id, "type": i.node.type, "section": i.section,
                  "seqRange": list(i.node.seq_range), "score": round(i.score, 4),
                  "scores": i.scores} for i in self.nodes]
        items += [{"id": f"message:{q.unit.seq}:{q.unit.part}", "type": "excerpt", "section": "excerpts",
                   "seqRange": [q.unit.seq, q.unit.seq], "score": round(q.score, 4), "scores": q.scores}
                  for q in self.quotes]
        return {"query": self.query.text, "tokens": self.tokens, "text": self.text, "nodes": items,
                "gaps": [{"messages": [a, b]} for a, b in self.gaps], "warnings": list(self.warnings),
                "rerank": self.rerank.as_json() if self.rerank else None}
