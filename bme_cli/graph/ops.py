"""Graph operations with ST-BME's semantics (spec §1.3–1.4), plus the fixes of spec §10.19."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model import Edge, Graph, IdFactory, Node, clamp, new_uuid
from .schema import edge_type_for

# The automatic "<type> state update" events that memory.apply makes carry this extra key.
UPDATE_EVENT_KEY = "bmeAuto"
UPDATE_EVENT_VALUE = "update"


def is_update_event(node: Node) -> bool:
    """True for the automatic "<type> state update" events made by updates."""
    return node.extra.get(UPDATE_EVENT_KEY) == UPDATE_EVENT_VALUE


def make_node(type_id: str, fields: dict[str, Any], seq: int, now: int, *,
              importance: float = 5.0, seq_range: list[int] | None = None, level: int = 0,
              clusters: list[str] | None = None, new_id: IdFactory = new_uuid) -> Node:
    """A fresh node with ST-BME's creation defaults (importance clamped to [0, 10])."""
    return Node(id=new_id(), type=type_id, fields=dict(fields), seq=seq,
                seq_range=list(seq_range) if seq_range else [seq, seq], level=level,
                importance=clamp(float(importance), 0.0, 10.0), last_access_time=now,
                created_time=now, clusters=list(clusters or []))


def add_node(graph: Graph, node: Node) -> Node:
    """Append a node and link it after the latest active level-0 node of its type (by seq)."""
    tail: Node | None = None
    for other in graph.nodes_of_type(node.type):
        if not other.archived and other.level == 0:
            if tail is None or other.seq >= tail.seq:
                tail = other
    if tail is not None:
        tail.next_id = node.id
        node.prev_id = tail.id
    graph.append_node(node)
    return node


@dataclass(slots=True)
class EdgeResult:
    """What add_edge did: the edge, and whether it was new or merged into an active one."""

    edge: Edge | None
    created: bool


def add_edge(graph: Graph, from_id: str, to_id: str, relation: str, strength: float, now: int, *,
             valid_at: int | None = None, new_id: IdFactory = new_uuid) -> EdgeResult:
    """Add an edge or merge it into the active edge with the same (from, to, relation).

    Self-loops and missing endpoints are refused (edge None). A merge keeps the larger
    strength and the later validAt; it is reported as `created=False` so callers do not
    count it as new (spec §10.19).
    """
    if from_id == to_id or from_id not in graph or to_id not in graph:
        return EdgeResult(None, False)
    strength = clamp(float(strength), 0.0, 1.0)
    e = graph.active_edge(from_id, to_id, relation)
    if e is not None:
        e.strength = max(e.strength, strength)
        e.valid_at = max(e.valid_at or 0, valid_at or now)
        return EdgeResult(e, False)
    edge = Edge(id=new_id(), from_id=from_id, to_id=to_id, relation=relation, strength=strength,
                edge_type=edge_type_for(relation), created_time=now,
                valid_at=valid_at if valid_at is not None else now)
    graph.append_edge(edge)
    return EdgeResult(edge, True)


def invalidate_edge(edge: Edge, now: int) -> bool:
    """Mark an edge as no longer true (never deletes). Returns False if it already was."""
    if edge.invalid_at:
        return False
    edge.invalid_at = now
    return True


def archive_node(graph: Graph, node: Node, now: int) -> int:
    """Soft-delete a node and invalidate its active edges; returns how many were invalidated."""
    node.archived = True
    return sum(invalidate_edge(e, now) for e in graph.edges_of(node.id))


def adjacency(graph: Graph, now: int | None = None) -> dict[str, list[tuple[str, float, int]]]:
    """Undirected adjacency of active edges: id -> [(neighbour id, strength, edgeType)]."""
    adj: dict[str, list[tuple[str, float, int]]] = {}
    for e in graph.edges:
        if e.is_active(now):
            adj.setdefault(e.from_id, []).append((e.to_id, e.strength, e.edge_type))
            adj.setdefault(e.to_id, []).append((e.from_id, e.strength, e.edge_type))
    return adj


def remove_nodes(graph: Graph, ids: set[str]) -> int:
    """Drop nodes for good with every edge touching them; the prev/next chains and the
    parents' child lists close over the gap. Returns how many were removed."""
    gone = {n.id: n for n in graph.nodes if n.id in ids}
    if not gone:
        return 0

    def past(node_id: str | None, step: str) -> str | None:   # the first kept node along a chain
        seen: set[str] = set()
        while node_id in gone and node_id not in seen:
            seen.add(node_id)
            node_id = getattr(gone[node_id], step)
        return None if node_id in gone else node_id

    graph.nodes = [n for n in graph.nodes if n.id not in gone]
    for n in graph.nodes:
        n.prev_id, n.next_id = past(n.prev_id, "prev_id"), past(n.next_id, "next_id")
        if n.child_ids and any(c in gone for c in n.child_ids):
            n.child_ids = [c for c in n.child_ids if c not in gone]
        if n.parent_id in gone:
            n.parent_id = None
    graph.edges = [e for e in graph.edges if e.from_id not in gone and e.to_id not in gone]
    graph.reindex()
    return len(gone)
