"""Memory evolution (spec §6.5, A-MEM style), fixed per spec §10.21.

For each new node: find its `evo_neighbor_count` most similar active nodes by embedding
(cosine > 0, over a snapshot taken at the start), show them to the model under short
references, and apply what it decides:
* only the neighbours it was shown can be linked or revised; any other id is rejected
  and counted;
* a suggested connection adds a `related` edge new -> neighbour (strength 0.7), unless an
  active edge already links the two (any relation, either direction: no redundant links);
* `newContext` goes to the first existing key among state, summary and core_note.
  `state` and `core_note` describe the present and are replaced. A `summary` records what
  happened and is never overwritten: the new reading is appended as one hindsight note
  ("... (In hindsight: ...)", replacing an earlier hindsight note so it stays bounded);
* `newTags` replaces `clusters`;
* a `newContext` the upkeep guard rejects (memory/guard.py) is dropped and counted in
  `rejected_replies`; the old text stays;
* every change appends `{triggeredBy, timestamp, reason, field, previous}` to the node's
  `_evolutionHistory` (the replaced text or tags are kept there) and clears its embedding;
  changed nodes are re-embedded at the end.
Without an embedder the step does nothing (reported in `reason`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import BmeError, InvalidReplyError
from ..graph.model import Graph, Node
from ..graph.ops import add_edge
from ..prompts.common import cell_text
from ..prompts.evolve import NEW_REF, EvolveInput, EvolveNodeView, NeighborUpdate, build_evolve_task
from ..providers.base import normalise_rows
from . import guard
from .context import MemoryContext
from .edits import is_protected
from .embed import embed_nodes

RELATED_STRENGTH = 0.7
CONTEXT_KEYS = ("state", "summary", "core_note")
CONTEXT_CHARS = 300
VIEW_CHARS = 300
_HINDSIGHT = {"en": " (In hindsight: {})", "zh": "（后来得知：{}）"}
_OLD_HINDSIGHT = re.compile(r"(?: \(In hindsight: .*\)|（后来得知：.*）)$", re.S)


@dataclass
class EvolveReport:
    """What evolution did across the new nodes."""

    considered: int = 0
    evolved: int = 0
    edges_created: int = 0
    updated: list[str] = field(default_factory=list)
    rejected: int = 0            # links or updates naming a node that was not shown
    rejected_replies: int = 0    # newContext texts the upkeep guard rejected (the old text kept)
    skipped: int = 0
    errors: list[str] = field(default_factory=list)
    reason: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the graph was modified."""
        return bool(self.edges_created or self.updated)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for `--format json`."""
        return {"considered": self.considered, "evolved": self.evolved, "edges_created": self.edges_created,
                "updated": list(self.updated), "rejected": self.rejected,
                "rejected_replies": self.rejected_replies, "skipped": self.skipped,
                "errors": list(self.errors), "reason": self.reason}


@dataclass
class _Snapshot:
    nodes: list[Node]
    matrix: np.ndarray


def _snapshot(graph: Graph) -> _Snapshot | None:
    nodes = [n for n in graph.active_nodes() if n.embedding is not None and n.embedding.size]
    if not nodes:
        return None
    dim = nodes[0].embedding.shape[0]
    nodes = [n for n in nodes if n.embedding.shape[0] == dim]
    return _Snapshot(nodes, normalise_rows(np.stack([n.embedding for n in nodes])))


def neighbours(snap: _Snapshot, node: Node, k: int) -> list[tuple[Node, float]]:
    """The k most similar snapshot nodes to `node` (cosine > 0), best first, ties in graph order."""
    if node.embedding is None or node.embedding.shape[0] != snap.matrix.shape[1]:
        return []
    scores = snap.matrix @ normalise_rows(node.embedding)[0]
    out = []
    for i in np.argsort(-scores, kind="stable"):
        if snap.nodes[i].id != node.id and scores[i] > 0:
            out.append((snap.nodes[i], float(scores[i])))
            if len(out) == k:
                break
    return out


def _view(node: Node, ctx: MemoryContext, ref: str, similarity: float = 0.0) -> EvolveNodeView:
    cols = ctx.schema.columns(node.type) or list(node.fields)
    fields = {k: cell_text(node.fields.get(k))[:VIEW_CHARS] for k in cols if cell_text(node.fields.get(k))}
    return EvolveNodeView(ref=ref, type=node.type, fields=fields, clusters=list(node.clusters),
                          similarity=round(similarity, 4))


def evolve(graph: Graph, ctx: MemoryContext, new_ids: list[str]) -> EvolveReport:
    """Let each new node revise or link its shown neighbours; see the module docstring."""
    report = EvolveReport()
    if ctx.embedder is None:
        report.reason = "no embedder: evolution needs embeddings"
        return report
    if len(graph.active_nodes()) < 2:
        report.reason = "fewer than 2 active nodes"
        return report
    new_nodes = [n for n in (graph.get(i) for i in new_ids) if n is not None and not n.archived]
    missing = [n for n in new_nodes if n.embedding is None]
    if missing:
        embed_nodes(missing, graph, ctx.schema, ctx.embedder)
    snap = _snapshot(graph)
    changed: dict[str, Node] = {}
    for node in new_nodes:
        near = neighbours(snap, node, ctx.settings.evo_neighbor_count) if snap else []
        if near:
            _evolve_one(graph, ctx, node, near, report, changed)
    _reembed(graph, ctx, [n for n in changed.values() if not n.archived], report)
    report.updated = list(changed)
    return report


def _reembed(graph: Graph, ctx: MemoryContext, nodes: list[Node], report: EvolveReport) -> None:
    if not nodes or ctx.embedder is None:
        return
    try:
        embed_nodes(nodes, graph, ctx.schema, ctx.embedder)
    except BmeError as e:
        report.errors.append(f"re-embedding evolved nodes failed: {e}; embed_missing will retry")


def _evolve_one(graph: Graph, ctx: MemoryContext, node: Node, near: list[tuple[Node, float]],
                report: EvolveReport, changed: dict[str, Node]) -> None:
    shown = {f"n{i}": n for i, (n, _) in enumerate(near, 1)}
    inp = EvolveInput(language=ctx.language, new=_view(node, ctx, NEW_REF),
                      neighbours=[_view(n, ctx, ref, s) for ref, (n, s) in zip(shown, near)])
    report.considered += 1
    task = build_evolve_task(inp)
    try:
        reply = ctx.chat.complete_json(task)
    except InvalidReplyError as e:
        report.skipped += 1
        report.errors.append(f"evolution of {node.label()[:60]!r}: {e}; skipped")
        return
    if not reply.should_evolve:
        return
    report.evolved += 1
    by_id = {n.id: n for n in shown.values()}
    now = ctx.now()
    for ref in reply.suggested_connections:
        target = shown.get(ref.strip()) or by_id.get(ref.strip())
        if target is None:
            report.rejected += 1
        elif not _linked(graph, node.id, target.id):
            res = add_edge(graph, node.id, target.id, "related", RELATED_STRENGTH, now, new_id=ctx.new_id)
            report.edges_created += res.created
    for upd in reply.neighbor_updates:
        target = shown.get(upd.node_id.strip()) or by_id.get(upd.node_id.strip())
        if target is None:
            report.rejected += 1
            continue
        if is_protected(target):  # the user's wording stands (memory/edits.py)
            continue
        if upd.new_context and guard.review(task, {"newContext": upd.new_context}, ["newContext"]):
            report.rejected_replies += 1
            upd = upd.model_copy(update={"new_context": None})  # the tags may still change
        if apply_update(target, upd, triggered_by=node.id, reason=reply.reason, now=now,
                        language=ctx.language):
            changed[target.id] = target


def _linked(graph: Graph, a: str, b: str) -> bool:
    return any({e.from_id, e.to_id} == {a, b} for e in graph.edges if e.is_active())


def _new_context(old: str, key: str, text: str, language: str) -> str:
    text = " ".join(text.split())[:CONTEXT_CHARS]
    if key != "summary":
        return text
    if text in old:
        return old
    base = _OLD_HINDSIGHT.sub("", old)
    return base + _HINDSIGHT.get(language, _HINDSIGHT["en"]).format(text)


def apply_update(target: Node, upd: NeighborUpdate, *, triggered_by: str, reason: str, now: int,
                 language: str = "en") -> bool:
    """Apply one neighbour update, recording each replaced value in `_evolutionHistory`."""
    entries: list[dict[str, Any]] = []
    context = (upd.new_context or "").strip()
    key = next((k for k in CONTEXT_KEYS if k in target.fields), None)
    if context and key is not None:
        old = cell_text(target.fields.get(key))
        value = _new_context(old, key, context, language)
        if value != old:
            entries.append({"field": key, "previous": target.fields.get(key)})
            target.fields[key] = value
    if upd.new_tags is not None:
        tags = list(dict.fromkeys(upd.new_tags))
        if tags != target.clusters:
            entries.append({"field": "clusters", "previous": list(target.clusters)})
            target.clusters = tags
    if not entries:
        return False
    history = list(target.evolution_history or [])
    history += [{"triggeredBy": triggered_by, "timestamp": now, "reason": reason, **e} for e in entries]
    target.evolution_history = history
    target.embedding = None
    return True
