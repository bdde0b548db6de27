"""Everything per graph that recall queries reuse, built once (batch mode loads it once).

Rows are the positions of `graph.nodes` (archived ones included, so diffusion can pass
through them as ST-BME's adjacency does). `active` marks ST-BME's active nodes; `detail`
marks bme's addition: archived nodes that were compressed away into an active parent (not
deleted, not forgotten). Compression keeps a summary and cuts detail; the children still
hold it, so recall may return them as query-matched memories (never as Core).
`recallable = active | detail`.
Building is linear in nodes + edges with numpy doing the heavy parts: 0.01 s at 1k nodes,
0.12 s at 10k, 1.3 s at 100k (benchmarks/bench_recall.py), about half of it BM25.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..graph.codec import no_gc
from ..graph.model import Graph, Node
from ..graph.ops import is_update_event
from ..graph.schema import INHIBITORY_EDGE_TYPE, Schema
from .diffusion import Csr
from .edits import is_pinned
from .embed import node_text
from .inject import bucket_of
from .lexical import Bm25Index, tokenize
from .scoring import time_decays

NAME_FIELDS = ("name", "title")
REINFORCE_STEP, REINFORCE_MAX_GAIN = 0.1, 1.0
BASE_IMPORTANCE_KEY = "bmeBaseImportance"
GONE_KEYS = ("bmeDeleted", "bmeForgotten")  # markers of deleted (apply) and forgotten (sleep) nodes


def visibility_of(node: Node) -> frozenset[str] | None:
    """Who may see a node (spec §4.2 step 2): a set of names ("*" = everyone), or None if unrestricted."""
    v = node.fields.get("visibility")
    if isinstance(v, list):
        return frozenset(str(x).strip() for x in v)
    if isinstance(v, str) and v:
        return frozenset(p.strip() for p in v.split(","))
    return None  # missing, empty string, or another type: visible


def name_candidates(node: Node) -> list[str]:
    """The node's names for entity anchors: fields name, then title, trimmed, at least 2 chars."""
    out = []
    for key in NAME_FIELDS:
        v = node.fields.get(key)
        if isinstance(v, str) and len(v.strip()) >= 2:
            out.append(v.strip())
    return out


def _name_key(name: str) -> str | None:
    # The longest token: the rarest handle of a name, so a message token finds few names to verify.
    toks = tokenize(name, stopwords=False)
    return max(toks, key=len) if toks else None


@dataclass
class RecallIndex:
    """Per-graph arrays, the embedding matrix, BM25, adjacency and the name index."""

    graph: Graph
    schema: Schema
    now: int
    nodes: list[Node]
    ids: list[str]
    row_of: dict[str, int]
    active: np.ndarray            # bool: not archived
    detail: np.ndarray            # bool: archived, compressed into a still-active ancestor
    recallable: np.ndarray        # bool: active | detail (what recall may return)
    summary: np.ndarray           # bool: recallable compressed nodes with at least one detail child
    type_names: list[str]
    type_code: np.ndarray         # int16 index into type_names
    core_type: np.ndarray         # bool: the node's type has alwaysInject
    update_event: np.ndarray      # bool: automatic state-update events
    pinned: np.ndarray            # bool: pinned by the user (memory/edits.py): Core, filled first
    importance: np.ndarray        # float64 (reinforcement writes back here too)
    created: np.ndarray           # float64 epoch ms
    seq: np.ndarray               # int64
    seq_start: np.ndarray         # int64
    seq_end: np.ndarray           # int64
    level: np.ndarray             # int32
    emb: np.ndarray               # (M, d) float32 vectors of recallable rows that have one
    emb_norm: np.ndarray          # (M,) float32 their norms (zero norms set to 1)
    emb_rows: np.ndarray          # (M,) int64 row of each matrix line
    bm25: Bm25Index
    text_chars: np.ndarray        # int64 length of each recallable row's node text (cheap size estimate)
    csr: Csr                      # active edges, as ST-BME's adjacency (spec §1.4)
    relay: Csr                    # the same edges, each row's strengths times its specificity
    specificity: np.ndarray       # float64 ln(N / degree) / ln(N), N = recallable rows
    names: dict[str, list[tuple[int, str]]]
    events_by_seq: np.ndarray     # rows of active events sorted by seq
    restricted: dict[int, frozenset[str]]
    _vis_cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    # node id -> row costs and words for inject.fit_to_budget (fields do not change under an index)
    cell_cache: dict[str, Any] = field(default_factory=dict, repr=False)
    # what every query would compute again over every row (memory/fused.py): the recency decay
    # at the last `now` asked, and the importance term per weight (reinforce updates its rows)
    _row_terms: dict[Any, np.ndarray] = field(default_factory=dict, repr=False)
    _memo: dict[Any, Any] = field(default_factory=dict, repr=False)  # see memo()

    @property
    def n(self) -> int:
        """Number of rows (all nodes, archived included)."""
        return len(self.nodes)

    @classmethod
    def build(cls, graph: Graph, schema: Schema, *, now: int) -> "RecallIndex":
        """Index a graph for recall at time `now` (edges invalid or expired by then are left out)."""
        with no_gc():  # millions of short-lived tokens and tuples: the cyclic GC only slows this down
            return cls._build(graph, schema, now)

    @classmethod
    def _build(cls, graph: Graph, schema: Schema, now: int) -> "RecallIndex":
        nodes = list(graph.nodes)
        ids = [nd.id for nd in nodes]
        row_of = {nid: i for i, nid in enumerate(ids)}
        active = np.fromiter((not nd.archived for nd in nodes), dtype=bool, count=len(nodes))
        detail = _detail_rows(nodes, row_of, active)
        recallable = active | detail
        type_names = sorted({nd.type for nd in nodes})
        code = {t: i for i, t in enumerate(type_names)}
        type_code = np.fromiter((code[nd.type] for nd in nodes), dtype=np.int16, count=len(nodes))
        core_of_type = np.array([schema.always_inject(t) for t in type_names] or [False], dtype=bool)
        emb, norms, emb_rows = _embedding_matrix(nodes, recallable)
        pinned = np.fromiter((is_pinned(nd) for nd in nodes), dtype=bool, count=len(nodes))
        evt = np.array([t == "event" for t in type_names] or [False], dtype=bool)
        event_rows = np.flatnonzero(active & evt[type_code]) if len(nodes) else np.zeros(0, np.int64)
        seq = np.fromiter((nd.seq for nd in nodes), dtype=np.int64, count=len(nodes))
        texts = [node_text(nd, schema) if a else None for nd, a in zip(nodes, recallable)]
        csr = _adjacency(graph, row_of, len(nodes), now)
        relay, spec = _damped(csr, int(recallable.sum()))
        return cls(
            graph=graph, schema=schema, now=now, nodes=nodes, ids=ids, row_of=row_of, active=active,
            detail=detail, recallable=recallable, summary=_summary_rows(nodes, row_of, active, detail),
            type_names=type_names, type_code=type_code, core_type=(core_of_type[type_code] | pinned) if len(nodes) else active,
            update_event=np.fromiter((is_update_event(nd) for nd in nodes), dtype=bool, count=len(nodes)),
            pinned=pinned,
            importance=np.fromiter((nd.importance for nd in nodes), dtype=np.float64, count=len(nodes)),
            created=np.fromiter((nd.created_time for nd in nodes), dtype=np.float64, count=len(nodes)),
            seq=seq,
            seq_start=np.fromiter((nd.seq_range[0] for nd in nodes), dtype=np.int64, count=len(nodes)),
            seq_end=np.fromiter((nd.seq_end for nd in nodes), dtype=np.int64, count=len(nodes)),
            level=np.fromiter((nd.level for nd in nodes), dtype=np.int32, count=len(nodes)),
            emb=emb, emb_norm=norms, emb_rows=emb_rows,
            bm25=Bm25Index.build(texts),
            text_chars=np.fromiter((len(t) if t else 0 for t in texts), dtype=np.int64, count=len(nodes)),
            csr=csr, relay=relay, specificity=spec,
            names=_name_index(nodes, active),
            events_by_seq=event_rows[np.argsort(seq[event_rows], kind="stable")],
            restricted={i: r for i, nd in enumerate(nodes) if (r := visibility_of(nd)) is not None},
        )

    def visible(self, viewer: str | None) -> np.ndarray:
        """Bool per row: may `viewer` see it (all True when viewer is None or empty)?"""
        key = (viewer or "").strip()
        mask = self._vis_cache.get(key)
        if mask is None:
            mask = np.ones(self.n, dtype=bool)
            if key:
                for row, allowed in self.restricted.items():
                    mask[row] = key in allowed or "*" in allowed
            self._vis_cache[key] = mask
        return mask

    def type_of(self, row: int) -> str:
        """The type id of a row."""
        return self.type_names[self.type_code[row]]

    def group_of(self, row: int) -> str:
        """The recall bucket of a row's type (state, episodic, reflective, rule, other)."""
        return bucket_of(self.type_of(row))

    def anchors(self, text: str) -> list[int]:
        """Rows whose name or title occurs in text (case-insensitive), in row order."""
        low = text.lower()
        hits: dict[int, None] = {}
        for tok in set(tokenize(text, stopwords=False)):
            for row, name in self.names.get(tok, ()):
                if name in low:
                    hits[row] = None
        return sorted(hits)

    def cosine(self, query_vec: Any) -> np.ndarray:
        """Cosine similarity of the query with every row (0 for rows without a usable vector)."""
        out = np.zeros(self.n, dtype=np.float32)
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if len(self.emb_rows) == 0 or q.shape[0] != self.emb.shape[1]:
            return out
        qn = float(np.linalg.norm(q))
        if qn == 0:
            return out
        # A dot product per row, one row after another (numpy >= 2's vecdot; einsum's loop before):
        # on a matrix larger than the cache this streams it faster than BLAS's matrix-vector
        # product (14-15 / 17 against 21-29 ms at 107k x 384 here, one thread). Each row's value
        # depends only on that row, whatever the other rows are.
        dots = _row_dots(self.emb, q)
        dots /= self.emb_norm * np.float32(qn)
        out[self.emb_rows] = dots
        return out

    def memo(self, key: Any, make: Any) -> Any:  # noqa: ANN401 - whatever `make` returns
        """`make()`, computed once per key for this index: for what depends only on arrays that never
        change under an index (not importance) and on the key (memory/masks.py). Arrays come back
        read-only, so no caller can change another query's copy."""
        if key not in self._memo:
            got = make()
            if isinstance(got, np.ndarray):
                got.flags.writeable = False
            self._memo[key] = got
        return self._memo[key]

    def decays(self, now: float) -> np.ndarray:
        """scoring.time_decays of every row at `now` (kept while queries come at the same instant)."""
        got = self._row_terms.get(("decay", now))
        if got is None:
            for key in [k for k in self._row_terms if k[0] == "decay"]:
                del self._row_terms[key]
            got = self._row_terms[("decay", now)] = time_decays(self.created, now)
        return got

    def importance_terms(self, weight: float) -> np.ndarray:
        """weight * clamp(importance / 10, 0, 1) per row, as scoring.hybrid_scores adds it."""
        got = self._row_terms.get(("importance", weight))
        if got is None:
            got = self._row_terms[("importance", weight)] = _importance_terms(self.importance, weight)
        return got

    def reinforce(self, node: Node, now: int) -> None:
        """Access reinforcement of a recalled node (spec §4.8, fixed per §10.10), node and index alike.

        importance ?? 5 (so 0 grows to 0.1, not 5.1), +0.1 per recall, but never more than
        REINFORCE_MAX_GAIN above the importance the node had when first reinforced (kept in
        extra["bmeBaseImportance"]): use can lift a memory a little, not ratchet it to 10.
        """
        row = self.row_of[node.id]
        current = 5.0 if node.importance is None else float(node.importance)
        base = float(node.extra.setdefault(BASE_IMPORTANCE_KEY, current))
        ceiling = min(10.0, base + REINFORCE_MAX_GAIN)
        node.importance = max(current, min(ceiling, round(current + REINFORCE_STEP, 6)))
        self.importance[row] = node.importance
        for key, terms in self._row_terms.items():
            if key[0] == "importance":  # the same arithmetic on the one row that changed
                terms[row:row + 1] = _importance_terms(self.importance[row:row + 1], key[1])
        node.access_count += 1
        node.last_access_time = now


def _row_dots(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    vecdot = getattr(np, "vecdot", None)
    return vecdot(mat, q) if vecdot is not None else np.einsum("ij,j->i", mat, q)


def _importance_terms(importance: np.ndarray, weight: float) -> np.ndarray:
    return weight * np.clip(importance / 10.0, 0, 1)


def _detail_rows(nodes: list[Node], row_of: dict[str, int], active: np.ndarray) -> np.ndarray:
    """Archived rows whose parent chain reaches an active node, and that were not deleted or forgotten."""
    out = np.zeros(len(nodes), dtype=bool)
    for i, nd in enumerate(nodes):
        if active[i] or nd.parent_id is None or any(k in nd.extra for k in GONE_KEYS):
            continue
        seen, parent = {i}, row_of.get(nd.parent_id)
        while parent is not None and parent not in seen and not active[parent]:
            seen.add(parent)
            pnode = nodes[parent]
            if any(k in pnode.extra for k in GONE_KEYS):
                parent = None
                break
            parent = row_of.get(pnode.parent_id) if pnode.parent_id is not None else None
        out[i] = parent is not None and bool(active[parent])
    return out


def _summary_rows(nodes: list[Node], row_of: dict[str, int], active: np.ndarray,
                  detail: np.ndarray) -> np.ndarray:
    """Recallable rows that are the parent of a detail row (their own text is a cut-down summary).

    That includes archived middle levels of a hierarchy (a level-1 summary compressed again
    into level 2): they are recallable detail themselves, but their children say it better.
    """
    out = np.zeros(len(nodes), dtype=bool)
    recallable = active | detail
    for i in np.flatnonzero(detail).tolist():
        parent = row_of.get(nodes[i].parent_id)
        if parent is not None and recallable[parent]:
            out[parent] = True
    return out


def _embedding_matrix(nodes: list[Node], active: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Only the most common dimension is usable; a stray vector of another size is ignored.
    dims = Counter(nd.embedding.shape[0] for nd, a in zip(nodes, active)
                   if a and nd.embedding is not None and nd.embedding.ndim == 1)
    if not dims:
        return np.zeros((0, 0), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64)
    dim = dims.most_common(1)[0][0]
    rows = [i for i, (nd, a) in enumerate(zip(nodes, active))
            if a and nd.embedding is not None and nd.embedding.shape == (dim,)]
    mat = np.stack([nodes[i].embedding for i in rows]).astype(np.float32, copy=False)
    for k, i in enumerate(rows):
        # The node adopts its matrix row (same values), so each vector is stored once.
        nodes[i].embedding = mat[k]
    norms = np.sqrt(np.einsum("ij,ij->i", mat, mat))
    norms[norms == 0] = 1.0
    return mat, norms.astype(np.float32), np.asarray(rows, dtype=np.int64)


def _adjacency(graph: Graph, row_of: dict[str, int], n: int, now: int) -> Csr:
    live = [(row_of[e.from_id], row_of[e.to_id], e.strength, e.edge_type == INHIBITORY_EDGE_TYPE, k)
            for k, e in enumerate(graph.edges)
            if (not e.invalid_at or e.invalid_at > now) and (not e.expired_at or e.expired_at > now)
            and e.from_id != e.to_id and e.from_id in row_of and e.to_id in row_of]
    cols = list(zip(*live)) if live else [(), (), (), (), ()]
    src, dst = np.asarray(cols[0], dtype=np.int64), np.asarray(cols[1], dtype=np.int64)
    strength, inhib = np.asarray(cols[2], dtype=np.float64), np.asarray(cols[3], dtype=bool)
    return Csr.from_edges(n, src, dst, strength, inhib, np.asarray(cols[4], dtype=np.int64))


def _damped(csr: Csr, n_recallable: int) -> tuple[Csr, np.ndarray]:
    """The adjacency with each node's outgoing strengths scaled by its specificity (bme, not ST-BME).

    specificity = ln(N / degree) / ln(N): about 0.8 for an ordinary node, near 0 for a hub
    linked to most of the graph. Diffusion itself stays exactly §4.3; only what a hub passes
    on shrinks, so naming (or reaching) the protagonists of a role-play, who take part in
    most events, no longer lifts all of those events above the real matches.
    """
    n = max(2, n_recallable)
    degree = np.diff(csr.indptr)
    spec = np.clip(np.log(n / np.maximum(1, degree)) / np.log(n), 0.0, 1.0)
    strength = csr.strength * np.repeat(spec, degree)
    return Csr(csr.indptr, csr.nbr, strength, csr.inhibitory, csr.edge), spec


def _name_index(nodes: list[Node], active: np.ndarray) -> dict[str, list[tuple[int, str]]]:
    names: dict[str, list[tuple[int, str]]] = {}
    for i, nd in enumerate(nodes):
        if not active[i]:
            continue
        for name in name_candidates(nd):
            key = _name_key(name)
            if key:
                names.setdefault(key, []).append((i, name.lower()))
    return names
