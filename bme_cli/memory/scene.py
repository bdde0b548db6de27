"""Scene reconstruction (spec §4.7) with bme's fixes (§10.6, §10.9).

From each selected seed, pull in what makes its scene: an event's characters, locations,
threads and reflections plus the two events nearest in time; a character's or location's
two latest events (each expanded in turn). Fixes: only rows in `allowed` (active and
visible to the viewer) are ever pushed, and only rows in `counts` (those that can really
be injected: non-Core types, or Core candidates when the budget ranks Core; not echoes)
use up the `limit`, so Core events no longer eat the slots of characters they bring in.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .index import RecallIndex

SCENE_TYPES = frozenset({"character", "location", "thread", "reflection"})
RELATED_EVENTS = 2
TEMPORAL_NEIGHBOURS = 2


class _Scene:
    """The growing selection: push order, seen set, and how many counted rows it holds."""

    def __init__(self, index: RecallIndex, allowed: np.ndarray, counts: np.ndarray, limit: int):
        self.index, self.allowed, self.counts, self.limit = index, allowed, counts, limit
        self.rows: list[int] = []
        self.seen: set[int] = set()
        self.used = 0

    @property
    def full(self) -> bool:
        """Has the limit been reached?"""
        return self.used >= self.limit

    def push(self, row: int) -> bool:
        """Add a row if new, allowed and the limit is not reached; True if it was added."""
        if row in self.seen or not self.allowed[row] or self.full:
            return False
        self.seen.add(row)
        self.rows.append(row)
        self.used += bool(self.counts[row])
        return True


def _neighbours(index: RecallIndex, row: int) -> np.ndarray:
    return index.csr.nbr[index.csr.row(row)]


def _is_type(index: RecallIndex, rows: np.ndarray, names: Iterable[str]) -> np.ndarray:
    codes = [i for i, t in enumerate(index.type_names) if t in names]
    return np.isin(index.type_code[rows], codes) if len(rows) else np.zeros(0, dtype=bool)


def latest_events(index: RecallIndex, row: int, allowed: np.ndarray, k: int = RELATED_EVENTS) -> list[int]:
    """The k event neighbours of a row in recall order (latest seqRange end, then importance)."""
    nb = _neighbours(index, row)
    nb = nb[_is_type(index, nb, ("event",)) & allowed[nb]]
    if len(nb) > 4 * k:  # a hub: partition first (duplicates from parallel edges leave room for k)
        key = index.seq_end[nb].astype(np.float64) + index.importance[nb] / 11.0
        nb = nb[np.argpartition(-key, 4 * k - 1)[: 4 * k]]
    ranked = sorted(set(nb.tolist()), key=lambda r: (-index.seq_end[r], -index.importance[r], r))
    return ranked[:k]


def nearest_events(index: RecallIndex, row: int, allowed: np.ndarray, k: int = TEMPORAL_NEIGHBOURS) -> list[int]:
    """The k other allowed events nearest in seq to `row`, ties going to the larger seq."""
    ev = index.events_by_seq
    seqs = index.seq[ev]
    s = int(index.seq[row])
    right = int(np.searchsorted(seqs, s, side="left"))
    left = right - 1
    out: list[int] = []
    while len(out) < k:
        while left >= 0 and (ev[left] == row or not allowed[ev[left]]):
            left -= 1
        while right < len(ev) and (ev[right] == row or not allowed[ev[right]]):
            right += 1
        if left < 0 and right >= len(ev):
            break
        d_left = s - seqs[left] if left >= 0 else np.inf
        d_right = seqs[right] - s if right < len(ev) else np.inf
        if d_right <= d_left:
            out.append(int(ev[right]))
            right += 1
        else:
            out.append(int(ev[left]))
            left -= 1
    return out


def _expand_event(scene: _Scene, row: int) -> None:
    index = scene.index
    nb = _neighbours(index, row)  # edge-list order, as ST-BME walks graph.edges
    for r in nb[_is_type(index, nb, SCENE_TYPES)].tolist():
        scene.push(r)
    for r in nearest_events(index, row, scene.allowed):
        scene.push(r)


def reconstruct_scene(index: RecallIndex, seeds: Iterable[int], *, limit: int,
                      allowed: np.ndarray, counts: np.ndarray) -> list[int]:
    """The selection grown from seed rows, in push order (seeds first, each followed by its scene)."""
    scene = _Scene(index, allowed, counts, max(0, limit))
    for seed in dict.fromkeys(int(s) for s in seeds):
        if scene.full:
            break
        if not allowed[seed]:
            continue
        scene.push(seed)  # a seed already pulled in by an earlier one is still expanded, as in ST-BME
        kind = index.type_of(seed)
        if kind == "event":
            _expand_event(scene, seed)
        elif kind in ("character", "location"):
            for ev in latest_events(index, seed, allowed):
                scene.push(ev)
                _expand_event(scene, ev)
    return scene.rows
