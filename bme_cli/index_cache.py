"""The recall index saved beside the sidecar (`<sidecar>.index`), so a `bme recall` process loads
in milliseconds what would take it seconds to build (docs/performance.md, "the index").

The file (graph.arrays, memory-mapped) holds the packed RecallIndex and ExcerptIndex
(memory.packed) and the key they were built for. It is used only when every part of the key
still holds, so it can never be stale:

* the sidecar is the same file with the same content: device, inode, size, mtime and ctime
  in nanoseconds. Every write changes mtime and ctime (and bme's atomic saves the inode too);
  nothing but a change of the system clock sets ctime back. A cache is only written for a
  sidecar last changed more than RACY_NS before it was read, or that this process has just
  written itself under the lock, so a second write within one timestamp tick cannot hide;
* the same schema, the same code (a digest of the modules that build the index), the same
  embedding model (excerpt vectors are the model's) and excerpt settings;
* the chat's processed messages are the same (a digest of what the excerpt units are made of);
* `now` lies in the span over which the same edges are active (edges expire).

A cache that is missing, of another layout, unreadable or for another key is ignored and
rebuilt; failing to write one is never an error (a read-only folder just goes without).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from .errors import StoreError
from .graph.arrays import read_arrays, write_arrays
from .graph.schema import Schema

FORMAT = 1
SUFFIX = ".index"
RACY_NS = 2_000_000_000  # FAT keeps 2-second times; finer file systems are well inside this
# The modules whose code decides what an index holds: a change to any of them is a new key.
_BUILDERS = ("memory.index", "memory.lexical", "memory.excerpts", "memory.excerpt_vectors", "memory.embed",
             "memory.diffusion", "memory.packed", "memory.inject", "graph.ops", "graph.schema", "graph.v3",
             "graph.v3_bulk", "graph.checks",
             "graph.model", "sentences", "reltime", "index_cache")
_code: str | None = None


def cache_path(graph_path: Path) -> Path:
    """Where the index of a sidecar is kept: `<sidecar>.index`."""
    return Path(graph_path).with_name(Path(graph_path).name + SUFFIX)


def file_key(path: Path) -> list[int] | None:
    """The identity of a file's current content: device, inode, size, mtime and ctime (ns); None if absent."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def code_digest() -> str:
    """A digest of the source of the modules that build an index (once per process)."""
    global _code
    if _code is None:
        h = hashlib.sha1(str(FORMAT).encode())
        for name in _BUILDERS:
            # Found, not imported: a recall from a saved index never runs most of these modules.
            spec = importlib.util.find_spec(f"{__package__}.{name}")
            if spec is None or not spec.origin:   # a name here that names no module is a bug
                raise ModuleNotFoundError(f"index_cache._BUILDERS names {name}, which is not a module")
            try:
                h.update(Path(spec.origin).read_bytes())
            except OSError:  # no source beside the module (a frozen build): its version decides
                from . import __version__
                h.update(f"{name}:{__version__}".encode())
        _code = h.hexdigest()
    return _code


def schema_digest(schema: Schema) -> str:
    """A digest of the node type schema."""
    import json
    return hashlib.sha1(json.dumps(schema.types, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def processed_digest(messages: Any, last_seq: int) -> str:
    """A digest of what excerpt units are made of: the messages up to `last_seq`."""
    h = hashlib.sha1()
    for m in messages:
        if m.seq > last_seq:
            break
        when = m.send_date.isoformat() if m.send_date is not None and getattr(m, "dated", True) else ""
        h.update(f"{m.seq}\x1f{m.name}\x1f{int(m.is_system)}\x1f{when}\x1f".encode("utf-8", "surrogatepass"))
        h.update(m.text.encode("utf-8", "surrogatepass"))
        h.update(b"\x1e")
    return h.hexdigest()


def base_key(graph_path: Path, schema: Schema, excerpts: str | None) -> dict[str, Any]:
    """The key of an index for the sidecar as it is now (without the chat part, see `load`).

    `excerpts` names the embedding model whose excerpt vectors the index holds, "" for none,
    None when the index holds no excerpts (turned off).
    """
    return {"format": FORMAT, "code": code_digest(), "sidecar": file_key(graph_path),
            "schema": schema_digest(schema), "excerpts": excerpts}


def load(graph_path: Path, key: dict[str, Any], messages: Any, now: int) -> tuple[dict, dict] | None:
    """(meta, arrays) of the saved index when it was built for `key`, these messages and `now`."""
    if key["sidecar"] is None:
        return None
    found = read_arrays(cache_path(graph_path))
    if found is None:
        return None
    meta, arrays = found
    saved = meta.get("key")
    if not isinstance(saved, dict) or {k: saved.get(k) for k in key} != key:
        return None
    lo, hi = meta.get("window", [None, None])
    if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo <= now < hi):
        return None
    if key["excerpts"] is not None:
        last = meta.get("recall", {}).get("last_processed_seq")
        if not isinstance(last, int) or saved.get("chat") != processed_digest(messages, last):
            return None
    return meta, arrays


def save(graph_path: Path, key: dict[str, Any], chat_digest: str | None, window: tuple[float, float],
         parts: dict[str, tuple[dict, dict[str, np.ndarray]]], *, read_at: int | None) -> bool:
    """Write the index for `key` (True when written). `read_at` is when the sidecar was read
    (time.time_ns()); None when this process has just written the sidecar itself under the lock.
    A sidecar changed within RACY_NS before it was read gets no cache (see the module doc)."""
    sidecar = key["sidecar"]
    if sidecar is None or file_key(graph_path) != sidecar:
        return False
    if read_at is not None and read_at - sidecar[3] < RACY_NS:
        return False
    meta: dict[str, Any] = {"key": {**key, "chat": chat_digest}, "window": list(window), "written": time.time_ns()}
    arrays: dict[str, np.ndarray] = {}
    for name, (part_meta, part_arrays) in parts.items():
        meta[name] = part_meta
        arrays.update(part_arrays)
    try:
        write_arrays(cache_path(graph_path), _finite(meta), arrays)
    except (StoreError, OSError, ValueError):
        return False
    return True


def _finite(meta: dict[str, Any]) -> dict[str, Any]:
    """The window's infinities as JSON-safe large numbers."""
    lo, hi = meta["window"]
    meta["window"] = [max(lo, -1e300), min(hi, 1e300)]
    return meta

