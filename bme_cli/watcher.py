"""`bme watch DIR`: which chats SillyTavern has finished saving, found by polling.

SillyTavern rewrites a chat file on every message (and on every swipe and edit), so a chat
is due only once its size and modification time have stayed the same for `settle` seconds,
and it is due again only when they change after its last ingest. Polling (a `stat` of every
`.jsonl` under the folders, every `interval` seconds) needs no dependency and works where
file events do not (network shares, WSL and Docker bind mounts); a folder of a few thousand
chats is swept in milliseconds, and the debounce makes waiting for events pointless anyway.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .graph.store import sidecar_path
from .workflow import CHAT_SUFFIX

Signature = tuple[int, int]  # (mtime_ns, size)


@dataclass
class _Seen:
    signature: Signature
    changed_at: float
    ingested: Signature | None = None


def _chats(roots: list[Path]) -> Iterator[tuple[Path, Signature]]:
    for root in roots:
        if root.is_file():
            entries = [root] if root.name.endswith(CHAT_SUFFIX) else []
        else:
            entries = (Path(d) / f for d, _, files in os.walk(root) for f in files
                       if f.endswith(CHAT_SUFFIX) and not f.startswith("."))
        for path in entries:
            try:
                st = path.stat()
            except OSError:  # deleted between the listing and the stat
                continue
            yield path, (st.st_mtime_ns, st.st_size)


def _up_to_date(path: Path, signature: Signature) -> bool:
    """A chat whose sidecar was written after the chat last changed needs no first ingest."""
    try:
        return sidecar_path(path).stat().st_mtime_ns >= signature[0]
    except OSError:
        return False


class ChatWatcher:
    """The chats under some folders that changed and then stayed unchanged for `settle` seconds."""

    def __init__(self, roots: list[Path], *, settle: float, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time):
        self.roots, self.settle, self.clock = roots, settle, clock
        self.seen: dict[Path, _Seen] = {}
        start, now = clock(), wall()
        for path, sig in _chats(roots):  # what is already ingested is not due; the rest is once settled
            age = max(0.0, now - sig[0] / 1e9)   # a chat saved a moment ago may still be being written
            self.seen[path] = _Seen(sig, start - age, sig if _up_to_date(path, sig) else None)

    def due(self) -> list[Path]:
        """Sweep the folders; the chats to ingest now, oldest change first."""
        now = self.clock()
        present = set()
        for path, sig in _chats(self.roots):
            present.add(path)
            seen = self.seen.get(path)
            if seen is None:
                self.seen[path] = _Seen(sig, now)
            elif seen.signature != sig:
                seen.signature, seen.changed_at = sig, now
        for gone in set(self.seen) - present:
            del self.seen[gone]
        ready = [(s.changed_at, p) for p, s in self.seen.items()
                 if s.ingested != s.signature and now - s.changed_at >= self.settle]
        return [p for _, p in sorted(ready)]

    def signature(self, path: Path) -> Signature | None:
        """What the chat looks like now (None when it is gone)."""
        seen = self.seen.get(path)
        return seen.signature if seen else None

    def ingested(self, path: Path, signature: Signature) -> None:
        """The chat was ingested as it was at `signature`; a later change makes it due again."""
        if path in self.seen:
            self.seen[path].ingested = signature
