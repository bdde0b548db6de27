"""What every exporter shares: which nodes and edges to show, their labels and colours."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..graph.model import Edge, Graph, Node

# One colour per default type (colour-blind-safe Okabe-Ito order); other types get one from a hash.
TYPE_COLOURS = {"event": "#0072B2", "character": "#E69F00", "location": "#009E73", "rule": "#CC79A7",
                "thread": "#D55E00", "synopsis": "#56B4E9", "reflection": "#7F7F7F"}
_SPARE = ("#F0E442", "#882255", "#44AA99", "#999933", "#AA4499", "#117733")


def colour(type_id: str) -> str:
    """The colour of a node type, stable across runs."""
    if type_id in TYPE_COLOURS:
        return TYPE_COLOURS[type_id]
    return _SPARE[int(hashlib.sha1(type_id.encode()).hexdigest(), 16) % len(_SPARE)]


def short_label(node: Node, limit: int = 60) -> str:
    """The node's label on one line, clipped to `limit` characters."""
    text = " ".join(node.label().split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass
class View:
    """The nodes and edges a diagram shows."""

    nodes: list[Node]
    edges: list[Edge]


def active_view(graph: Graph) -> View:
    """Active nodes and every edge between two of them (invalidated ones too: drawn dashed)."""
    nodes = graph.active_nodes()
    ids = {n.id for n in nodes}
    return View(nodes, [e for e in graph.edges if e.from_id in ids and e.to_id in ids])
