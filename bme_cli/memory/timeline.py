"""What `bme show CHAT --timeline` and `bme show CHAT NODE_ID` print, as plain data.

A timeline lists a type's nodes (events by default) in story order (seqRange end, then
start): the date of the message it ends at, its summary, who (participants, or the names of
characters linked to it), where (locations linked by an active edge), with compressed nodes
under their summary (`children`, for `--tree`). A node's detail adds its edges, valid and
invalidated (with when), its history (updates, evolution, the user's edits) and its
source messages.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..graph.model import Graph, Node
from .apply import EDGE_SEQ_KEY, HISTORY_KEY
from .edits import is_pinned, is_protected, user_record

DateOf = Callable[[int], str | None]


@dataclass
class TimelineRow:
    """One node on the timeline, with what it was compressed from."""

    node: Node
    date: str | None
    who: str
    where: str
    children: list["TimelineRow"] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """Plain data for `--format json`."""
        n = self.node
        return {"id": n.id, "type": n.type, "level": n.level, "seqRange": list(n.seq_range),
                "date": self.date, "summary": n.label(), "who": self.who, "where": self.where,
                "status": node_status(n), "children": [c.as_json() for c in self.children]}


def node_status(node: Node) -> str:
    """pinned, kept (edited or added by the user), archived, or active."""
    if is_pinned(node):
        return "pinned"
    if node.archived:
        return "archived"
    return "kept" if is_protected(node) else "active"


def _linked(graph: Graph, node: Node, type_id: str) -> list[str]:
    names = []
    for e in graph.edges_of(node.id):
        other = graph.get(e.other(node.id))
        if other is not None and other.type == type_id:
            names.append(other.label())
    return list(dict.fromkeys(names))


def _row(graph: Graph, node: Node, date_of: DateOf) -> TimelineRow:
    who = str(node.fields.get("participants") or ", ".join(_linked(graph, node, "character")))
    children = [_row(graph, c, date_of) for c in (graph.get(i) for i in node.child_ids) if c is not None]
    return TimelineRow(node, date_of(node.seq_end), who, ", ".join(_linked(graph, node, "location")),
                       sorted(children, key=_order))


def _order(row: TimelineRow) -> tuple[int, int]:
    return row.node.seq_end, row.node.seq_range[0]


def timeline(graph: Graph, date_of: DateOf, *, type_id: str | None = "event", who: str | None = None,
             since: int | None = None) -> list[TimelineRow]:
    """The active nodes of a type (all types when None) in story order, filtered by who and since."""
    rows = [_row(graph, n, date_of) for n in graph.active_nodes(type_id)]
    if who:
        want = who.casefold()
        rows = [r for r in rows if want in r.who.casefold() or want in r.node.label().casefold()]
    if since is not None:
        rows = [r for r in rows if r.node.seq_end >= since]
    return sorted(rows, key=_order)


def node_detail(graph: Graph, node: Node, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Everything about one node: fields, edges, history and its source messages."""
    edges = []
    for e in graph.edges_of(node.id, active_only=False):
        other = graph.get(e.other(node.id))
        edges.append({"id": e.id, "relation": e.relation, "direction": "out" if e.from_id == node.id else "in",
                      "other": e.other(node.id), "otherLabel": other.label() if other else None,
                      "strength": e.strength, "seq": e.extra.get(EDGE_SEQ_KEY),
                      "validAt": e.valid_at, "invalidAt": e.invalid_at,
                      "expiredAt": e.expired_at, "valid": e.is_active()})
    hist = node.extra.get(HISTORY_KEY)
    return {"id": node.id, "type": node.type, "level": node.level, "status": node_status(node),
            "seq": node.seq, "seqRange": list(node.seq_range), "importance": node.importance,
            "accessCount": node.access_count, "createdTime": node.created_time,
            "parentId": node.parent_id, "childIds": list(node.child_ids), "clusters": list(node.clusters),
            "fields": dict(node.fields), "edges": edges,
            "updates": list(hist.get("entries") or []) if isinstance(hist, dict) else [],
            "evolution": list(node.evolution_history or []),
            "user": list((user_record(node) or {}).get("log") or []),
            "messages": messages}
