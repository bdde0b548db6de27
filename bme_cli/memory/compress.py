"""Hierarchical compression (spec §6.1), with the fixes of spec §10.2 and §10.7.

For each type with `compression.mode == "hierarchical"`, levels 0..maxDepth-1 are
compressed in turn (stopping at the first level that creates nothing): the oldest active
nodes of a level, beyond the `keepRecentLeaves` most recent, are merged `fanIn` at a time
into one node of the next level.

bme's fixes and choices:
* the model's reply is validated; a bad one (InvalidReplyError, or no required column
  filled) skips that chunk, is counted, and the rest proceeds (§10.2); so does one the
  upkeep guard rejects (memory/guard.py: a date, a loop, a prompt copy, off the input),
  counted as `rejected`: the children stay as they were;
* the children's active edges are re-attached to the new parent (same relation, strength
  and validAt; edges between two children of the chunk are dropped), and the children's
  old edges are marked `expiredAt = now`: the facts stay true (so not `invalidAt`), but the
  records are superseded by the parent's, and diffusion walks through the parent only (§10.7).
  Their ids are kept in the parent's `extra["bmeExpiredEdges"]`, so `decompress` (rollback)
  can undo exactly that;
* the new node is not spliced into the level-0 linked list (ST-BME's oddity, §10.7): it is
  linked after the latest active node of its own type and level instead;
* the new node is embedded from all its columns (`embed_nodes`) when there is an embedder;
* `dry_run` plans the chunks (assuming every merge succeeds, so higher levels are planned
  too) without calling the model or touching the graph.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import BmeError, InvalidReplyError, UsageError
from ..graph.model import Graph, Node
from ..graph.ops import add_edge, make_node
from ..prompts.common import cell_text
from ..prompts.compress import ColumnSpec, CompressInput, CompressNodeView, CompressReply, build_compress_task
from . import guard
from .context import MemoryContext
from .edits import is_protected
from .embed import embed_nodes


EXPIRED_EDGES_KEY = "bmeExpiredEdges"


@dataclass(frozen=True)
class ChunkPlan:
    """One merge: which nodes of which level become one node of the next level."""

    type_id: str
    level: int
    child_ids: tuple[str, ...]
    seq_range: tuple[int, int]
    new_id: str | None = None        # the created node (None in a dry run or when skipped)


@dataclass
class CompressReport:
    """What compress_all did (or, in a dry run, would do): `chunks` are the merges made or planned."""

    dry_run: bool = False
    chunks: list[ChunkPlan] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    archived: int = 0
    edges_reattached: int = 0
    skipped: int = 0
    rejected: int = 0                # chunks whose reply the guard rejected (children kept)
    errors: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Whether the graph was modified."""
        return bool(self.created)

    @property
    def rejected_replies(self) -> int:
        """Replies the guard rejected (for the upkeep and ingest reports)."""
        return self.rejected

    def as_dict(self) -> dict[str, Any]:
        """Plain data for `--format json`."""
        return {"dry_run": self.dry_run, "created": list(self.created), "archived": self.archived,
                "edges_reattached": self.edges_reattached, "skipped": self.skipped, "rejected": self.rejected,
                "errors": list(self.errors),
                "chunks": [{"type": c.type_id, "level": c.level, "children": list(c.child_ids),
                            "seq_range": list(c.seq_range), "new_id": c.new_id} for c in self.chunks]}


@dataclass(frozen=True)
class _Item:
    """A node, or a planned node in a dry run: what the chunk planner needs to know."""

    id: str
    seq: int
    start: int
    end: int


def compression_config(type_def: dict[str, Any], force: bool) -> tuple[int, int, int, int]:
    """(threshold, keep, fan_in, max_depth) of a type, as §6.1 step 2 reads them under `force`."""
    comp = type_def.get("compression") or {}
    fan_in = max(2, int(comp.get("fanIn") or 0))   # a fanIn below 2 could never shrink a level
    threshold = max(2, fan_in) if force else int(comp.get("threshold") or 0)
    keep = 0 if force else int(comp.get("keepRecentLeaves") or 0)
    return threshold, keep, fan_in, int(comp.get("maxDepth") or 0)


def plan_chunks(count: int, threshold: int, keep: int, fan_in: int) -> list[tuple[int, int]]:
    """Index ranges [a, b) of the chunks to merge among `count` seq-sorted nodes (§6.1 steps 3-5)."""
    if count <= threshold:
        return []
    compressible = max(0, count - keep)
    if compressible < fan_in:
        return []
    out = []
    for start in range(0, compressible, fan_in):
        end = min(start + fan_in, compressible)
        if end - start < 2:
            break          # a lone remainder waits for the next run
        out.append((start, end))
    return out


def _level_nodes(graph: Graph, type_id: str, level: int) -> list[Node]:
    # nodes the user pinned, edited or added are never compressed away (memory/edits.py)
    nodes = [n for n in graph.nodes_of_type(type_id) if not n.archived and n.level == level and not is_protected(n)]
    return sorted(nodes, key=lambda n: n.seq)      # stable: ties keep graph order


def _item(n: Node) -> _Item:
    return _Item(n.id, n.seq, n.seq_range[0] if n.seq_range else n.seq, n.seq_end)


def _hierarchical_types(ctx: MemoryContext, type_id: str | None) -> list[dict[str, Any]]:
    if type_id is not None:
        t = ctx.schema.get(type_id)
        if t is None:
            raise UsageError(f"unknown node type {type_id!r}",
                             f"known types: {', '.join(ctx.schema.by_id)}")
        if (t.get("compression") or {}).get("mode") != "hierarchical":
            raise UsageError(f"type {type_id!r} is not compressed (its compression mode is not "
                             "'hierarchical')", "pick event, thread or reflection, or edit the schema")
        return [t]
    return [t for t in ctx.schema.types if (t.get("compression") or {}).get("mode") == "hierarchical"]


def compress_all(graph: Graph, ctx: MemoryContext, *, force: bool = False, type_id: str | None = None,
                 dry_run: bool = False) -> CompressReport:
    """Compress every hierarchical type (or one), level by level; see the module docstring."""
    report = CompressReport(dry_run=dry_run)
    for t in _hierarchical_types(ctx, type_id):
        if dry_run:
            _plan_type(graph, t, force, report)
        else:
            _compress_type(graph, ctx, t, force, report)
    if report.created and ctx.embedder is not None:
        new_nodes = [n for n in (graph.get(i) for i in report.created) if n and not n.archived]
        try:
            embed_nodes(new_nodes, graph, ctx.schema, ctx.embedder)
        except BmeError as e:
            # The merges stand; embed_missing picks these nodes up on the next run.
            report.errors.append(f"embedding the compressed nodes failed: {e}")
    return report


def _plan_type(graph: Graph, t: dict[str, Any], force: bool, report: CompressReport) -> None:
    threshold, keep, fan_in, max_depth = compression_config(t, force)
    planned: list[_Item] = []
    for level in range(max_depth):
        items = sorted([_item(n) for n in _level_nodes(graph, t["id"], level)] + planned,
                       key=lambda i: i.seq)
        planned = []
        for k, (a, b) in enumerate(plan_chunks(len(items), threshold, keep, fan_in)):
            chunk = items[a:b]
            report.chunks.append(ChunkPlan(t["id"], level, tuple(i.id for i in chunk),
                                           (chunk[0].start, chunk[-1].end)))
            planned.append(_Item(f"(planned {t['id']} L{level + 1} #{k + 1})", chunk[-1].seq,
                                 chunk[0].start, chunk[-1].end))
        if not planned:
            break


def _compress_type(graph: Graph, ctx: MemoryContext, t: dict[str, Any], force: bool,
                   report: CompressReport) -> None:
    threshold, keep, fan_in, max_depth = compression_config(t, force)
    for level in range(max_depth):
        nodes = _level_nodes(graph, t["id"], level)
        created = 0
        for a, b in plan_chunks(len(nodes), threshold, keep, fan_in):
            parent = _merge_chunk(graph, ctx, t, level, nodes[a:b], report)
            created += parent is not None
        if not created:
            break


def _compress_input(ctx: MemoryContext, t: dict[str, Any], level: int, chunk: list[Node]) -> CompressInput:
    columns = [ColumnSpec(name=c["name"], hint=c.get("hint", ""), required=bool(c.get("required")))
               for c in t["columns"]]
    names = [c.name for c in columns]
    views = [CompressNodeView(seq=n.seq, seq_range=(n.seq_range[0], n.seq_end), importance=n.importance,
                              fields={k: cell_text(n.fields.get(k)) for k in names if cell_text(n.fields.get(k))})
             for n in chunk]
    return CompressInput(type_id=t["id"], type_label=str(t.get("label") or t["id"]), columns=columns,
                         instruction=str((t.get("compression") or {}).get("instruction") or ""),
                         level=level, language=ctx.language, nodes=views)


def _usable_fields(reply: CompressReply, t: dict[str, Any]) -> dict[str, str] | None:
    """The reply's schema columns, or None when no required column is filled."""
    names = [c["name"] for c in t["columns"]]
    fields = {k: reply.fields[k].strip() for k in names if reply.fields.get(k, "").strip()}
    required = [c["name"] for c in t["columns"] if c.get("required")]
    return fields if any(k in fields for k in required) else None


def _merge_chunk(graph: Graph, ctx: MemoryContext, t: dict[str, Any], level: int, chunk: list[Node],
                 report: CompressReport) -> Node | None:
    first, last = chunk[0], chunk[-1]
    span = (first.seq_range[0] if first.seq_range else first.seq, last.seq_end)
    task = build_compress_task(_compress_input(ctx, t, level, chunk))
    try:
        reply = ctx.chat.complete_json(task)
    except InvalidReplyError as e:
        report.skipped += 1
        report.errors.append(f"{t['id']} level {level} messages {span[0]}-{span[1]}: {e}; chunk skipped")
        return None
    fields = _usable_fields(reply, t)
    if fields is None:
        report.skipped += 1
        report.errors.append(f"{t['id']} level {level} messages {span[0]}-{span[1]}: the reply filled "
                             "no required field; chunk skipped")
        return None
    why = guard.review(task, fields, [c["name"] for c in t["columns"] if c.get("required") and c["name"] in fields])
    if why is not None:
        report.rejected += 1
        report.errors.append(f"{t['id']} level {level} messages {span[0]}-{span[1]}: the reply was rejected "
                             f"({why}); chunk kept as it was")
        return None
    now = ctx.now()
    parent = make_node(t["id"], fields, last.seq, now, importance=max(n.importance for n in chunk),
                       seq_range=list(span), level=level + 1,
                       clusters=list(dict.fromkeys(c for n in chunk for c in n.clusters)), new_id=ctx.new_id)
    parent.child_ids = [n.id for n in chunk]
    _link_same_level(graph, parent)
    graph.append_node(parent)
    for child in chunk:
        child.archived = True
        child.parent_id = parent.id
    report.edges_reattached += reattach_edges(graph, parent, chunk, now, ctx)
    report.archived += len(chunk)
    report.created.append(parent.id)
    report.chunks.append(ChunkPlan(t["id"], level, tuple(parent.child_ids), span, parent.id))
    return parent


def _link_same_level(graph: Graph, node: Node) -> None:
    """Link after the latest active node of the same type and level (by seq)."""
    tail: Node | None = None
    for other in graph.nodes_of_type(node.type):
        if other.level == node.level and not other.archived:
            if tail is None or other.seq >= tail.seq:
                tail = other
    if tail is not None:
        tail.next_id = node.id
        node.prev_id = tail.id


def reattach_edges(graph: Graph, parent: Node, children: list[Node], now: int, ctx: MemoryContext) -> int:
    """Copy the children's active edges onto the parent and expire the originals; returns new edges."""
    child_ids = {c.id for c in children}
    created = 0
    expired: list[str] = []
    for e in graph.active_edges_touching(child_ids):   # a list: add_edge's appends are not in it
        from_child, to_child = e.from_id in child_ids, e.to_id in child_ids
        e.expired_at = now
        expired.append(e.id)
        if from_child and to_child:
            continue        # an edge inside the chunk now lives inside the parent's text
        src = parent.id if from_child else e.from_id
        dst = parent.id if to_child else e.to_id
        res = add_edge(graph, src, dst, e.relation, e.strength, now, valid_at=e.valid_at or now,
                       new_id=ctx.new_id)
        created += res.created
    if expired:
        parent.extra[EXPIRED_EDGES_KEY] = expired      # so decompress can undo exactly this
    return created


def decompress(graph: Graph, parent: Node, now: int) -> int:
    """Undo one compression: archive the parent, bring its children and their edges back.

    For rollbacks (rebuild from a message): the parent's own edges are expired, the
    children's edges that compression expired are active again (unless invalidated since).
    Returns how many children came back.
    """
    if parent.archived or parent.level == 0 or not parent.child_ids:
        raise UsageError(f"node {parent.id} is not an active compressed node")
    parent.archived = True
    for e in graph.edges_of(parent.id):
        e.expired_at = now
    back = 0
    for child in filter(None, (graph.get(c) for c in parent.child_ids)):
        if child.archived and child.parent_id == parent.id:
            child.archived, child.parent_id = False, None
            back += 1
    wanted = set(parent.extra.pop(EXPIRED_EDGES_KEY, None) or [])
    for e in graph.edges:
        if e.id in wanted and not e.invalid_at:
            e.expired_at = None
    return back
