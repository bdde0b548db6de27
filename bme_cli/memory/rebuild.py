"""Rebuilding from a message: forget what came from it on, so ingest extracts it again
(`bme ingest --rebuild-from SEQ`, `--rebuild`); see `rebuild_from`."""
from __future__ import annotations

from typing import Sequence

from ..graph.model import Graph, Node
from ..graph.ops import archive_node, invalidate_edge, remove_nodes
from . import gaps
from .apply import DELETED_KEY, EDGE_SEQ_KEY, HISTORY_KEY
from .edits import is_protected, is_user_archived


def rebuild_from(graph: Graph, seq: int, now: int, *, assistant_turns: Sequence[int] | None = None) -> int:
    """Forget what came from messages >= seq so they can be extracted again; returns nodes changed.

    The chat's assistant_turns tell where lastProcessedSeq goes back to.

    * Nodes made from messages >= seq (seqRange starts at or after seq) are archived and
      their edges invalidated; so are upkeep nodes (synopsis, reflection) reaching seq.
    * A node that existed before seq but was updated from seq on (a character whose state
      changed) is rolled back to its state before seq from the snapshots apply.py keeps
      (last 8 updates); when the snapshot is gone it is archived, so no later state survives.
    * A compressed node reaching seq is archived and its children from before seq are
      brought back; nodes a delete from seq on archived are restored.
    * Edges made from seq on are invalidated; edges those updates invalidated come back.
    * lastProcessedSeq goes back to the last assistant turn before seq (seq - 1 without
      assistant_turns); fingerprints from seq on are dropped; seq <= 0 also resets the
      extraction counter. `--rebuild` is rebuild_from(graph, 0, now).
    * Failed-batch records reaching seq are dropped (their messages are planned again); when
      one starts before seq, the rebuild starts at its first message instead.
    """
    seq = gaps.drop_from(graph, seq)  # a failed batch reaching seq is re-planned whole
    revive: set[str] = set()  # edges to bring back once every node is settled
    changed = _undo_deletes(graph, seq, revive) + _forget_nodes(graph, seq, now, revive)
    _settle_edges(graph, seq, now, revive)
    before = [t for t in (assistant_turns or []) if t < seq]
    target = max(before) if before else (seq - 1 if assistant_turns is None else -1)
    graph.last_processed_seq = min(graph.last_processed_seq, max(-1, target))
    graph.meta.fingerprints = {s: fp for s, fp in graph.meta.fingerprints.items() if int(s) < seq}
    if seq <= 0:
        graph.meta.extraction_count = 0
    return changed


def drop_forgotten(graph: Graph, seq: int) -> int:
    """After rebuild_from(graph, seq): remove the archived nodes that reach seq for good.

    They are extracted again from the same messages, so keeping them only grows the graph
    with every rebuild. What the user archived stays, and so do the archived children of a
    node still in use (compression keeps them). Returns how many were removed."""
    kept = {n.id for n in graph.nodes if not n.archived}
    doomed = {n.id for n in graph.nodes
              if n.archived and n.seq_end >= seq and not is_user_archived(n) and not is_protected(n)
              and n.parent_id not in kept}
    return remove_nodes(graph, doomed)


def _forget_nodes(graph: Graph, seq: int, now: int, revive: set[str]) -> int:
    """Archive or roll back every active node reaching seq; returns how many."""
    changed = 0
    # what the user pinned, edited or added stays as the user left it (memory/edits.py)
    work = [n for n in graph.nodes if not n.archived and n.seq_end >= seq and not is_protected(n)]
    while work:
        node = work.pop()
        changed += 1
        if node.level > 0 and node.child_ids:
            archive_node(graph, node, now)
            for child in filter(None, (graph.get(c) for c in node.child_ids)):
                if child.archived and child.parent_id == node.id and not is_user_archived(child):
                    child.archived, child.parent_id = False, None
                    if child.seq_end >= seq:
                        work.append(child)
        elif not (node.seq_range[0] < seq and _roll_back(node, seq, revive)):
            archive_node(graph, node, now)
    return changed


def _settle_edges(graph: Graph, seq: int, now: int, revive: set[str]) -> None:
    """Invalidate edges made from seq on; bring back the ones rolled-back updates invalidated."""
    for e in graph.edges:
        mark = e.extra.get(EDGE_SEQ_KEY)
        if isinstance(mark, int) and mark >= seq:
            invalidate_edge(e, now)
            revive.discard(e.id)
    for e in graph.edges:  # only between nodes that are still active
        a, b = graph.get(e.from_id), graph.get(e.to_id)
        if e.id in revive and a is not None and b is not None and not a.archived and not b.archived:
            e.invalid_at = None


def _undo_deletes(graph: Graph, seq: int, revive: set[str]) -> int:
    count = 0
    for node in graph.nodes:
        mark = node.extra.get(DELETED_KEY)
        if node.archived and isinstance(mark, dict) and int(mark.get("seq", -1)) >= seq:
            node.archived = False
            revive.update(mark.get("edges") or [])
            del node.extra[DELETED_KEY]
            count += 1
    return count


def _roll_back(node: Node, seq: int, revive: set[str]) -> bool:
    """Restore the node's state before seq from its update snapshots; False when impossible."""
    hist = node.extra.get(HISTORY_KEY)
    if not isinstance(hist, dict) or int(hist.get("lost", -1)) >= seq:
        return False
    entries = hist.get("entries") or []
    idx = next((i for i, e in enumerate(entries) if int(e.get("seq", -1)) >= seq), None)
    if idx is None:
        return False
    snap = entries[idx]
    rng = snap.get("seqRange") or [snap.get("nodeSeq", 0)] * 2
    if int(rng[-1]) >= seq:
        return False  # changed from seq on by something that kept no snapshot
    node.fields = dict(snap.get("fields") or {})
    node.seq = int(snap.get("nodeSeq", rng[-1]))
    node.seq_range = [int(rng[0]), int(rng[-1])]
    node.importance = float(snap.get("importance", node.importance))
    node.embedding = None
    for later in entries[idx:]:
        revive.update(later.get("invalidated") or [])
    hist["entries"] = entries[:idx]
    return True
