"""The sidecar store: one `<chat>.bme.json` per chat, written atomically under a lock.

`load_graph` / `save_graph` read and write the sidecar (its layout: `graph.sidecar`);
`read_document` reads any graph document from a file for `bme import`. A file that does
not start like a sidecar this bme understands is never overwritten (unless `force`), and
one written by a newer bme is refused. Atomic writes live in `graph.files`, the lock in
`graph.lock`; both are re-exported here, where the commands find them.
"""
from __future__ import annotations

import gc
import mmap
import os
import re
import stat
from pathlib import Path
from typing import Iterable

from ..errors import GraphFormatError, StoreError, TooBigError
from .codec import ImportedGraph, graph_from_any, graph_from_header_line
from .files import atomic_write, keep_backup, store_error, write_text_atomic
from .jsonio import no_gc, read_json
from .lock import GraphLock, lock_path
from .model import Graph
from .sidecar import (HEADER, SIDECAR_FORMAT, SIDECAR_HINT, SIDECAR_VERSION, TYPED_FROM_BYTES, Unstreamable,
                      bad_sidecar, encode_sidecar, graph_from_sidecar, read_sidecar_bytes, stream_sidecar)

SIDECAR_SUFFIX = ".bme.json"
_FREEZE_AT = 50_000  # nodes + edges
MAX_PIPED_BYTES = 2 << 30  # a pipe cannot be mapped, so its bytes are read into memory: bounded

__all__ = ["SIDECAR_SUFFIX", "SIDECAR_VERSION", "GraphLock", "atomic_write", "backup_path", "encode_sidecar",
           "load_graph", "lock_path", "read_document", "replace_with_backup", "save_graph", "sidecar_path",
           "write_text_atomic"]


# -- paths ------------------------------------------------------------------------------
def sidecar_path(chat_path: Path) -> Path:
    """The sidecar beside a chat: `a.jsonl` -> `a.bme.json` (other names get `.bme.json` added)."""
    chat_path = Path(chat_path)
    stem = chat_path.name[:-6] if chat_path.name.lower().endswith(".jsonl") else chat_path.name
    return chat_path.with_name(stem + SIDECAR_SUFFIX)


def backup_path(path: Path) -> Path:
    """Where `replace_with_backup` keeps the previous sidecar: `<sidecar>.bak`."""
    return Path(path).with_name(Path(path).name + ".bak")


def unreadable_hint(path: Path) -> str:
    """What to do about a sidecar bme cannot read: its .bak when there is one, else start anew."""
    backup = backup_path(path)
    start_over = "or run `bme ingest --rebuild` to start a new graph (the file is moved aside, never deleted)"
    if backup.is_file():
        return f"bme will not overwrite it; restore the copy in {backup.name}, {start_over}"
    return f"bme will not overwrite it; move it away, {start_over}"


def set_aside(path: Path) -> Path:
    """Rename an unreadable sidecar to `<sidecar>.unreadable` (-2, -3 … if taken); returns where."""
    path = Path(path)
    for n in range(1, 1000):
        aside = path.with_name(path.name + (".unreadable" if n == 1 else f".unreadable-{n}"))
        if not aside.exists():
            try:
                os.rename(path, aside)
            except OSError as exc:
                raise store_error(exc, "moving aside", path) from None
            return aside
    raise StoreError(f"{path}: too many unreadable copies beside it", hint="remove some .unreadable files")


# -- reading -----------------------------------------------------------------------------
def load_graph(path: Path, now: int) -> Graph | None:
    """The graph in a sidecar, or None if there is none; corrupt or newer files raise.

    `now` (epoch ms, the caller's clock) fills any time the file leaves out.

    Vectors come back as read-only float32 row views of one matrix: assign a new array to
    `node.embedding`, never modify one in place. After loading a large graph the process's
    existing objects are frozen out of the cyclic GC (`gc.freeze`).
    """
    path = Path(path)
    source = str(path)
    try:
        data = _map(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise store_error(exc, "reading", path) from None
    with no_gc():  # until the graph is frozen: else the next collection walks all of it (~0.3 s)
        try:
            graph = _read_sidecar(data, source, now)
        except GraphFormatError as exc:
            if exc.hint in (None, SIDECAR_HINT):
                exc.hint = unreadable_hint(path)
            raise
        del data  # unmapped once no view of it is left
        _settle(graph)
    return graph


def _read_sidecar(data: mmap.mmap | bytearray, source: str, now: int) -> Graph:
    if not re.search(rb"\S", data):
        raise bad_sidecar(source, "the file is empty")
    graph = read_sidecar_bytes(data, source, now, scratch=True)
    if graph is None:  # laid out otherwise (pretty-printed, say): plain JSON
        graph = read_json(memoryview(data), source, lambda obj: graph_from_sidecar(obj, source, now)
                          if isinstance(obj, dict) and obj.get("format") == SIDECAR_FORMAT else None)
    if graph is None:
        raise GraphFormatError(f"{source}: not a bme sidecar", hint="to use an ST-BME export or "
                               "graph, run `bme import CHAT FILE`; bme will not overwrite this file")
    return graph


def _settle(graph: Graph) -> None:
    """Freeze a big graph's objects out of the cyclic GC (call with the GC paused).

    Each later full collection would re-scan its millions of objects (~0.3 s at 100k
    nodes). They form no cycles and are still freed by reference counting.
    """
    if len(graph.nodes) + len(graph.edges) >= _FREEZE_AT:
        gc.freeze()


def _map(path: Path, access: int = mmap.ACCESS_COPY, max_bytes: int | None = None) -> mmap.mmap | bytearray:
    """The file's bytes, mapped (private copy-on-write by default); OSErrors propagate.

    A map spares copying 400 MB. bme never truncates a sidecar in place (it replaces the
    file), so the map stays valid while another bme writes. Pipes, empty files and file
    systems that cannot map are read instead. A file over `max_bytes` is refused unread.
    """
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):  # /dev/zero never ends
            raise GraphFormatError(f"{path} is not a regular file; bme reads graphs only from files",
                                   hint="pass the path of a .json file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise TooBigError(str(path), info.st_size, max_bytes)
        if stat.S_ISREG(info.st_mode) and info.st_size > 0:
            try:
                return mmap.mmap(f.fileno(), 0, access=access)
            except (OSError, ValueError):
                pass
        cap = MAX_PIPED_BYTES if max_bytes is None else max_bytes
        data = bytearray(f.read(cap + 1))
        if len(data) > cap:
            if max_bytes is None:   # no setting applies (a sidecar): say what to do instead
                raise GraphFormatError(f"{path}: more than {cap >> 20} MB through a pipe; refusing to read on",
                                       hint="save it to a file and pass that")
            raise TooBigError(f"{path} (a pipe)", None, cap)
        return data


def read_document(path: Path, now: int, max_bytes: int | None = None) -> ImportedGraph:
    """Any graph document from a file (refused unread when over `max_bytes`); of a SillyTavern
    chat only the header line is parsed."""
    path = Path(path)
    try:
        data = _map(path, access=mmap.ACCESS_READ, max_bytes=max_bytes)
    except OSError as exc:
        raise GraphFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    with no_gc():
        imported = _read_graph_file(data) or _read_any(data, str(path), now)
        del data
        _settle(imported.graph)
    return imported


def _read_graph_file(data: mmap.mmap | bytearray) -> ImportedGraph | None:
    """An ST-BME graph file read straight into a Graph (`graph.direct`), if it is one laid out as ST-BME writes it.

    Only big files: below TYPED_FROM_BYTES importing msgspec would cost more than it saves.
    """
    if len(data) < TYPED_FROM_BYTES:
        return None
    try:
        from .direct import read_graph_file
    except ImportError:  # no msgspec: the ordinary way
        return None
    return read_graph_file(data)


def _read_any(data: mmap.mmap | bytearray, source: str, now: int) -> ImportedGraph:
    nl = data.find(b"\n")
    first_end = nl if nl >= 0 else len(data)
    if data.find(b'"chat_metadata"', 0, first_end) >= 0:  # slice the line only when it may be a header
        header = graph_from_header_line(data[:first_end], source, now)
        if header is not None:
            return header
    return graph_from_any(data, source, now)


# -- writing -----------------------------------------------------------------------------
def _check_replaceable(path: Path) -> None:
    """Refuse to overwrite a file that is not a complete sidecar this bme can read."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
            f.seek(max(0, os.fstat(f.fileno()).st_size - 64))
            tail = f.read()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise store_error(exc, "reading", path) from None
    match = HEADER.match(head)
    if not match:
        raise StoreError(f"{path} exists and is not a bme sidecar; refusing to overwrite it",
                         hint="move it away, or import over it with --force (it is kept as .bak)")
    if int(match.group(1)) > SIDECAR_VERSION:
        raise StoreError(f"{path} was written by a newer bme (sidecar format {int(match.group(1))}); "
                         "refusing to overwrite it", hint="upgrade bme")
    if not tail.rstrip().endswith(b"}"):
        raise StoreError(f"{path} looks truncated; refusing to overwrite it", hint=unreadable_hint(path))


def save_graph(path: Path, graph: Graph, *, force: bool = False) -> None:
    """Save a graph to its sidecar atomically (hold a GraphLock around load-change-save).

    Refuses to replace a file that is not a readable bme sidecar unless `force`.
    """
    chunks = _sidecar_chunks(graph)  # fails before anything is touched
    if not force:
        _check_replaceable(Path(path))
    _write_sidecar(Path(path), graph, chunks)


def replace_with_backup(path: Path, graph: Graph) -> Path | None:
    """Save over whatever is at `path`, keeping the old file as `<sidecar>.bak`; returns it."""
    path, backup = Path(path), backup_path(path)
    chunks = _sidecar_chunks(graph)
    if not path.exists():
        _write_sidecar(path, graph, chunks)
        return None
    keep_backup(path, backup)
    _write_sidecar(path, graph, chunks)
    return backup


def _sidecar_chunks(graph: Graph) -> Iterable[bytes | memoryview]:
    """The sidecar's bytes, made as they are written where they can be (`stream_sidecar`); raises
    what `encode_sidecar` raises, before anything is written."""
    stream = stream_sidecar(graph)
    return stream if stream is not None else encode_sidecar(graph)


def _write_sidecar(path: Path, graph: Graph, chunks: Iterable[bytes | memoryview]) -> None:
    try:
        atomic_write(path, chunks)
    except Unstreamable:  # the temp file is gone, the old file untouched: write it the whole-document way
        atomic_write(path, encode_sidecar(graph))
