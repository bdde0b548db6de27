"""Spreading activation over the memory graph (spec §4.3, ST-BME's PEDSA), vectorised with numpy.

Nodes are integer rows; the graph is an undirected CSR of active edges. Each step moves
only the previous step's frontier: every neighbour receives E * strength * decay
(negative over inhibitory edges), the sums are clamped to [-2, 2], entries below
`min_energy` dropped, and the frontier cut to the `top_k` largest |E|, equal ones kept in
the order the walk first reached them (as ST-BME's map and stable sort do, not by row). A
node's result is the value with the largest magnitude seen over all steps (sign included).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np


@dataclass
class Csr:
    """Undirected adjacency: row r's neighbours are nbr[indptr[r]:indptr[r+1]], in edge-list order."""

    indptr: np.ndarray      # (n+1,) int64
    nbr: np.ndarray         # (2E,) int32 neighbour rows
    strength: np.ndarray    # (2E,) float64
    inhibitory: np.ndarray  # (2E,) bool: edgeType 255
    edge: np.ndarray        # (2E,) int32 index of the edge in graph.edges

    @property
    def n(self) -> int:
        """Number of rows."""
        return len(self.indptr) - 1

    @classmethod
    def from_edges(cls, n: int, src: np.ndarray, dst: np.ndarray, strength: np.ndarray,
                   inhibitory: np.ndarray, edge: np.ndarray | None = None) -> "Csr":
        """Both directions of every (src, dst) edge, each row's entries kept in edge order."""
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        edge = np.arange(len(src), dtype=np.int64) if edge is None else np.asarray(edge, dtype=np.int64)
        rows = np.concatenate([src, dst])
        cols = np.concatenate([dst, src])
        eidx = np.concatenate([edge, edge])
        order = np.lexsort((eidx, rows))
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        s = np.asarray(strength, dtype=np.float64)
        inh = np.asarray(inhibitory, dtype=bool)
        return cls(indptr, cols[order].astype(np.int32), np.concatenate([s, s])[order],
                   np.concatenate([inh, inh])[order], eidx[order].astype(np.int32))

    def row(self, r: int) -> slice:
        """The slice of r's neighbour entries."""
        return slice(int(self.indptr[r]), int(self.indptr[r + 1]))

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(entry positions of every neighbour of `rows`, how many each row has)."""
        starts = self.indptr[rows]
        lens = self.indptr[rows + 1] - starts
        total = int(lens.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64), lens
        # Position k of the flat output belongs to row j: starts[j] + (k - first output index of j).
        firsts = np.cumsum(lens) - lens
        pos = np.repeat(starts - firsts, lens) + np.arange(total, dtype=np.int64)
        return pos, lens


def _clamp(x: float, lim: float) -> float:
    return -lim if x < -lim else lim if x > lim else x


def _initial(seeds: Mapping[int, float], min_energy: float, clamp: float) -> dict[int, float]:
    cur: dict[int, float] = {}
    for node, energy in seeds.items():
        try:
            e = float(energy)
        except (TypeError, ValueError):
            e = 0.0
        e = _clamp(0.0 if math.isnan(e) else e, clamp)
        if abs(e) >= min_energy:
            cur[int(node)] = _clamp(cur.get(int(node), 0.0) + e, clamp)
    return cur


def _first_reached(targets: np.ndarray, rows: np.ndarray, mark: np.ndarray) -> np.ndarray:
    """Each of `rows`' first position in the walk `targets` (each occurs there; `mark` is an
    all-False scratch of n rows, left so). Looks only at the few rows asked about."""
    mark[rows] = True
    hits = np.flatnonzero(mark[targets])
    mark[rows] = False
    found, at = np.unique(targets[hits], return_index=True)  # stable: `at` is the earliest hit
    return hits[at][np.searchsorted(found, rows)]


def _next_frontier(idx: np.ndarray, vals: np.ndarray, targets: np.ndarray, k: int, mark: np.ndarray,
                   walks_on: bool) -> np.ndarray:
    """Positions of the frontier kept, in ST-BME's order: the walk order while at most k rows
    were reached, else the k largest |E| with ties in walk order (its sort is stable). After
    the last step (`walks_on` false) only which rows stay matters, so the order is skipped."""
    if len(vals) <= k:
        return np.argsort(_first_reached(targets, idx, mark)) if walks_on else np.arange(len(vals))
    mag = np.abs(vals)
    thr = np.partition(mag, len(mag) - k)[len(mag) - k]
    cand = np.flatnonzero(mag >= thr)  # every tie at the threshold, so the tie order is exact
    if len(cand) == k and not walks_on:
        return cand
    return cand[np.lexsort((_first_reached(targets, idx[cand], mark), -mag[cand]))[:k]]


def diffuse(seeds: Mapping[int, float], csr: Csr, *, steps: int = 2, decay: float = 0.6, top_k: int = 100,
            min_energy: float = 0.01, clamp: float = 2.0, blocked: np.ndarray | None = None) -> dict[int, float]:
    """Activation energy per reached row (seeds included), per spec §4.3.

    `blocked` (bool per row) marks rows energy may not enter or pass through (bme's
    visibility fix, §10.6); blocked seeds are dropped.
    """
    start = _initial(seeds, min_energy, clamp)
    if blocked is not None:
        start = {k: v for k, v in start.items() if not blocked[k]}
    if not start:
        return {}
    n = csr.n
    res = np.zeros(n, dtype=np.float64)
    present = np.zeros(n, dtype=bool)
    mark = np.zeros(n, dtype=bool)
    cur_idx = np.fromiter(start.keys(), dtype=np.int64, count=len(start))  # seeds walk in the order given
    cur_e = np.fromiter(start.values(), dtype=np.float64, count=len(start))
    res[cur_idx], present[cur_idx] = cur_e, True
    for step in range(steps):
        pos, lens = csr.gather(cur_idx)
        if len(pos) == 0:
            break
        p = np.repeat(cur_e, lens) * csr.strength[pos] * decay
        p = np.where(csr.inhibitory[pos], -np.abs(p), p)
        targets = csr.nbr[pos]
        # ST-BME sums into a map filled as it walks the frontier (in frontier order) and each
        # row's edges (in edge order); bincount adds in that same order, so the floats agree.
        acc = np.bincount(targets, weights=p, minlength=n)
        idx = np.flatnonzero(np.abs(acc) >= min_energy)
        if blocked is not None:
            idx = idx[~blocked[idx]]
        vals = np.clip(acc[idx], -clamp, clamp)
        keep = _next_frontier(idx, vals, targets, top_k, mark, step < steps - 1)
        idx, vals = idx[keep], vals[keep]
        better = ~present[idx] | (np.abs(vals) > np.abs(res[idx]))
        res[idx[better]] = vals[better]
        present[idx] = True
        cur_idx, cur_e = idx, vals
        if len(idx) == 0:
            break
    rows = np.flatnonzero(present)
    return dict(zip(rows.tolist(), res[rows].tolist()))


def rank(result: Mapping[int, float], ids: Sequence[str] | None = None) -> list[tuple[int, float]]:
    """Positive entries by energy descending, ties by node id string ascending (row, without ids)."""
    pos = [(k, v) for k, v in result.items() if v > 0]
    if ids is None:
        return sorted(pos, key=lambda kv: (-kv[1], kv[0]))
    return sorted(pos, key=lambda kv: (-kv[1], ids[kv[0]]))
