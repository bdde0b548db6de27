"""The row masks of one recall (spec §4.2 with bme's fixes), computed once per setting, not per query.

allowed: recallable and visible to the viewer (`enable_visibility`); core: alwaysInject types
and the user's pins, active (state-update events only with `update_events_core`); echo: rows
whose messages all lie in the last `context_window` messages of the chat, which the model
already sees (a pin always shows). They and what recall derives from them depend on the
settings, the viewer and the chat's length, never on the query, so a batch of queries (or a
replay at 100k nodes, where each is several passes over every row) computes them once and
keeps them on the index (RecallIndex.memo: read-only arrays).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .index import RecallIndex


@dataclass(frozen=True)
class Masks:
    """allowed, core and echo of one setting, and the index that keeps what is derived from them."""

    index: RecallIndex
    key: tuple
    allowed: np.ndarray
    core: np.ndarray
    echo: np.ndarray

    def derived(self, name: str, make: Callable[[], Any]) -> Any:  # noqa: ANN401 - what make returns
        """make(), once per setting (it may read only these masks and the index's fixed arrays)."""
        return self.index.memo((name, *self.key), make)

    @property
    def n_allowed(self) -> int:
        """How many rows recall may return."""
        return self.derived("n_allowed", lambda: int(self.allowed.sum()))

    @property
    def injectable(self) -> np.ndarray:
        """Allowed rows that are not echoes."""
        return self.derived("injectable", lambda: self.allowed & ~self.echo)

    def core_units(self) -> int:
        """Text length plus table punctuation of the injectable Core rows (a cheap size estimate)."""
        def make() -> int:
            rows = self.core & self.injectable
            return int(self.index.text_chars[rows].sum()) + 6 * int(rows.sum())
        return self.derived("core_units", make)

    def counting(self, ranks_core: bool) -> np.ndarray:
        """Rows that take a scene slot: non-Core ones (all, when Core is ranked), never echoes."""
        return self.derived(f"counts:{ranks_core}", lambda: (~self.core | ranks_core) & ~self.echo)


def row_masks(index: RecallIndex, settings: Any, viewer: str | None, context_window: int, length: int) -> Masks:
    """The masks for these settings, this viewer and a chat of `length` messages."""
    viewer = viewer if settings.enable_visibility else None
    events_core = bool(settings.update_events_core)
    window = max(0, context_window)
    key = (viewer, events_core, window, length if window else None)
    allowed = index.memo(("allowed", viewer), lambda: index.recallable & index.visible(viewer))
    core = index.memo(("core", events_core), lambda: _core(index, events_core))
    echo = index.memo(("echo", *key[2:]), lambda: _echo(index, window, length))
    return Masks(index, key, allowed, core, echo)


def _core(index: RecallIndex, events_core: bool) -> np.ndarray:
    core = index.core_type & index.active & (~index.update_event if not events_core else True)
    return np.asarray(core | (index.pinned & index.active), dtype=bool)


def _echo(index: RecallIndex, window: int, length: int) -> np.ndarray:
    if window <= 0:
        return np.zeros(index.n, dtype=bool)
    return (index.seq_start >= length - window) & ~index.pinned
