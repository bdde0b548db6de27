"""The sleep cycle: active forgetting (spec §6.2), recalibrated per spec §10.11 and §10.17.

ST-BME's formula (kept as `st_bme_retention`) forgets practically every non-exempt node
after about an hour at the default threshold 0.5. bme's `retention` is an exponential
forgetting curve whose half-life grows with importance and with every recall:

    half_life = 30 story-hours x max(importance, 0.5) x (1 + accessCount)
    retention = 2 ** (-age_hours / half_life)             (1.0 when brand new)

Age is measured in story time by default: one chat message counts as one story-hour, and
a node's age is the number of messages since the last one it covers (`seqRange[1]`, which
an update moves forward). Wall-clock age (`age="wall"`: hours since the later of its
creation and its last recall) is the option for live chats. Sample values, threshold 0.5:

    importance 5, never recalled:  50 msgs 0.79 kept, 100 msgs 0.63 kept, 150 msgs 0.50 kept,
                                   200 msgs 0.40 forgotten, 300 msgs 0.25 forgotten
    importance 5, recalled once:   200 msgs 0.63 kept,  300 msgs 0.50 kept
    importance 3, never recalled:  50 msgs 0.68 kept,  100 msgs 0.46 forgotten
    importance 7, never recalled: 200 msgs 0.52 kept,  300 msgs 0.37 forgotten
    importance 7.9 after 24 h:     0.93 kept (ST-BME: 0.329, forgotten)

Exempt (never forgotten): synopsis, rule and thread nodes (§6.2), every `latestOnly` type
(characters, locations: §10.11, else the next create duplicates them), importance >= 8,
and nodes younger than one hour (one message in story time).

Forgetting archives a node (never deletes it), marks it with `extra["bmeForgotten"] =
{"at": now, "retention": r, "edges": [...]}` and expires its active edges (so diffusion no
longer walks through it); `restore` undoes exactly that, and leaves nodes archived by
compression or deletion alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError
from ..graph.model import Graph, IdFactory, Node, new_uuid
from ..graph.ops import add_edge
from .context import MemoryContext
from .edits import is_protected

FORGOTTEN_KEY = "bmeForgotten"
EXEMPT_TYPES = frozenset({"synopsis", "rule", "thread"})
EXEMPT_IMPORTANCE = 8.0
EXEMPT_AGE_HOURS = 1.0
STORY_HOURS_PER_MESSAGE = 1.0
HALF_LIFE_HOURS_PER_IMPORTANCE = 30.0
MS_PER_HOUR = 3_600_000

AgeMode = Literal["story", "wall"]


def st_bme_retention(importance: float, age_hours: float, access_count: int) -> float:
    """ST-BME's exact retention (§6.2): (importance/10) x recency x (1 + access frequency)."""
    age_hours = max(0.0, age_hours)
    recency = 1.0 / (1.0 + math.log10(1.0 + age_hours))
    access_freq = access_count / max(1.0, age_hours / 24.0)
    return (importance / 10.0) * recency * (1.0 + access_freq)


def retention(importance: float, age_hours: float, access_count: int) -> float:
    """bme's recalibrated retention in (0, 1]: see the module docstring for the curve and samples."""
    half_life = HALF_LIFE_HOURS_PER_IMPORTANCE * max(importance, 0.5) * (1 + max(0, access_count))
    return 2.0 ** (-max(0.0, age_hours) / half_life)


def node_age_hours(node: Node, *, age: AgeMode, current_seq: int, now: int) -> float:
    """A node's age in hours: messages since its last covered message, or wall-clock hours."""
    if age == "story":
        return max(0, current_seq - node.seq_end) * STORY_HOURS_PER_MESSAGE
    touched = max(node.created_time, node.last_access_time)
    return max(0, now - touched) / MS_PER_HOUR


def is_exempt(node: Node, ctx: MemoryContext, age_hours: float) -> bool:
    """Whether the sleep cycle must never forget this node."""
    return (node.type in EXEMPT_TYPES or ctx.schema.latest_only(node.type) or is_protected(node)
            or node.importance >= EXEMPT_IMPORTANCE or age_hours < EXEMPT_AGE_HOURS)


@dataclass
class SleepReport:
    """The nodes below the threshold with their retention, lowest first, and how many were archived."""

    items: list[tuple[Node, float]] = field(default_factory=list)
    archived: int = 0
    evaluated: int = 0
    threshold: float = 0.5
    age: str = "story"
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        """Whether the graph was modified."""
        return self.archived > 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for `--format json`."""
        return {"dry_run": self.dry_run, "threshold": self.threshold, "age": self.age,
                "evaluated": self.evaluated, "archived": self.archived,
                "items": [{"id": n.id, "type": n.type, "label": n.label(), "importance": n.importance,
                           "retention": round(r, 4)} for n, r in self.items]}


def sleep_cycle(graph: Graph, ctx: MemoryContext, *, threshold: float | None = None,
                age: AgeMode | None = None, current_seq: int, dry_run: bool = False) -> SleepReport:
    """Forget (archive) every non-exempt active node whose retention is below the threshold."""
    threshold = ctx.settings.forget_threshold if threshold is None else float(threshold)
    age = age or ctx.settings.sleep_age
    if age not in ("story", "wall"):
        raise UsageError(f"unknown age mode {age!r}", "use 'story' (messages) or 'wall' (clock time)")
    now = ctx.now()
    report = SleepReport(threshold=threshold, age=age, dry_run=dry_run)
    for node in graph.active_nodes():
        hours = node_age_hours(node, age=age, current_seq=current_seq, now=now)
        if is_exempt(node, ctx, hours):
            continue
        report.evaluated += 1
        r = retention(node.importance, hours, node.access_count)
        if r < threshold:
            report.items.append((node, r))
    report.items.sort(key=lambda item: item[1])
    if not dry_run:
        for node, r in report.items:
            _forget(graph, node, r, now)
        report.archived = len(report.items)
    return report


def _forget(graph: Graph, node: Node, r: float, now: int) -> None:
    expired = []
    for e in graph.edges_of(node.id):
        e.expired_at = now
        expired.append(e.id)
    node.archived = True
    node.extra[FORGOTTEN_KEY] = {"at": now, "retention": round(r, 4), "edges": expired}


def forgotten_nodes(graph: Graph) -> list[Node]:
    """Nodes archived by the sleep cycle (still archived), in graph order."""
    return [n for n in graph.nodes if n.archived and FORGOTTEN_KEY in n.extra]


def restore(graph: Graph, ids: list[str] | None = None, *, new_id: IdFactory = new_uuid) -> int:
    """Bring back forgotten nodes (all, or the given ids) and their edges; returns how many."""
    if ids is None:
        targets = forgotten_nodes(graph)
    else:
        unknown = [i for i in ids if i not in graph]
        if unknown:
            raise UsageError(f"no node with id {', '.join(unknown)}", "list forgotten nodes with a dry run or stats")
        targets = [n for n in (graph.get(i) for i in ids) if n and n.archived and FORGOTTEN_KEY in n.extra]
    for node in targets:
        marker = node.extra.pop(FORGOTTEN_KEY)
        node.archived = False
        edge_ids = (marker.get("edges") or []) if isinstance(marker, dict) else []
        _restore_edges(graph, edge_ids, new_id)
    return len(targets)


def _live(graph: Graph, node_id: str) -> str:
    """The node itself, or the active ancestor that compression merged it into."""
    node = graph.get(node_id)
    while node is not None and node.archived and node.parent_id and graph.get(node.parent_id):
        node = graph.get(node.parent_id)
    return node.id if node is not None else node_id


def _restore_edges(graph: Graph, edge_ids: list[str], new_id: IdFactory) -> None:
    wanted = set(edge_ids)
    for e in [e for e in graph.edges if e.id in wanted]:
        if e.invalid_at:
            continue        # stopped being true meanwhile
        src, dst = _live(graph, e.from_id), _live(graph, e.to_id)
        if (src, dst) == (e.from_id, e.to_id) and not _has_active_twin(graph, e.from_id, e.to_id, e.relation):
            e.expired_at = None
        elif (src, dst) != (e.from_id, e.to_id):
            # The other end was compressed meanwhile: link to what replaced it.
            add_edge(graph, src, dst, e.relation, e.strength, e.expired_at or e.created_time,
                     valid_at=e.valid_at, new_id=new_id)


def _has_active_twin(graph: Graph, from_id: str, to_id: str, relation: str) -> bool:
    return any(x.is_active() and x.from_id == from_id and x.to_id == to_id and x.relation == relation
               for x in graph.edges)
