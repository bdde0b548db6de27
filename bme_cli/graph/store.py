"""The sidecar store: one `<chat>.bme.json` per chat, written atomically under a lock.

Sidecar layout (compact JSON, UTF-8, one line plus a newline), `jq .graph` being a plain
ST-BME v3 graph with every embedding null:

    {"format": "bme-sidecar", "formatVersion": 1,
     "graph": {<ST-BME v3 graph>},
     "bme": {"extractionCount": 0, "fingerprints": {"<seq>": "<fp>", ...}, <GraphMeta.extra>,
             "embedding": {"model": str|null, "dimension": int|null, "count": N,
                           "ids": [node ids, one per row], "vectors": "<base64>"}}}

`vectors` is base64 of little-endian float32, row-major (N x dimension), and is always the
document's last value: the loader cuts it out of the bytes instead of JSON-scanning 200 MB,
and decodes it into one matrix whose rows become the nodes' embeddings. Keys of
`GraphMeta.extra` sit beside the known ones in `bme`, so keys a newer bme adds survive.
A file that does not start like a sidecar this bme understands is never overwritten
(unless `force`), and one written by a newer bme is refused.
"""
from __future__ import annotations

import binascii
import errno
import gc
import json
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import GraphFormatError, LockedError, StoreError
from .codec import (SIDECAR_FORMAT, ImportedGraph, dumps_checked, graph_dict, graph_from_any,
                    finite_tree, graph_from_v3_document, no_gc, parse_json, quote, show,
                    to_utf8)
from .model import Graph, GraphMeta, now_ms

try:
    import fcntl
except ImportError:  # pragma: no cover - bme runs on POSIX; Windows has no flock
    fcntl = None  # type: ignore[assignment]

SIDECAR_VERSION = 1
SIDECAR_SUFFIX = ".bme.json"
_META_KEYS = frozenset({"extractionCount", "fingerprints", "embedding"})
_VECTORS_MARK = b'"vectors":"'
_TAIL = b'"}}}'
_HEADER = re.compile(rb'\s*\{\s*"format"\s*:\s*"bme-sidecar"\s*,\s*"formatVersion"\s*:\s*(\d+)')
_CHUNK = 1 << 24
_FREEZE_AT = 50_000  # nodes + edges


# -- paths ------------------------------------------------------------------------------
def sidecar_path(chat_path: Path) -> Path:
    """The sidecar beside a chat: `a.jsonl` -> `a.bme.json` (other names get `.bme.json` added)."""
    chat_path = Path(chat_path)
    stem = chat_path.name[:-6] if chat_path.name.lower().endswith(".jsonl") else chat_path.name
    return chat_path.with_name(stem + SIDECAR_SUFFIX)


def backup_path(path: Path) -> Path:
    """Where `replace_with_backup` keeps the previous sidecar: `<sidecar>.bak`."""
    return Path(path).with_name(Path(path).name + ".bak")


def lock_path(path: Path) -> Path:
    """The lock file of a sidecar: `<sidecar>.lock`."""
    return Path(path).with_name(Path(path).name + ".lock")


# -- sidecar document <-> Graph ---------------------------------------------------------------
def _finite(matrix: np.ndarray) -> bool:
    # min/max propagate NaN and expose infinities without a full-size boolean temporary
    return matrix.size == 0 or bool(np.isfinite(matrix.min()) and np.isfinite(matrix.max()))


def _vector_matrix(graph: Graph) -> tuple[list[str], np.ndarray | None]:
    rows = [(n.id, n.embedding) for n in graph.nodes if n.embedding is not None]
    if not rows:
        return [], None
    shapes = {np.shape(v) for _, v in rows}
    if len(shapes) != 1 or len(next(iter(shapes))) != 1 or next(iter(shapes))[0] == 0:
        sizes = sorted(str(s) for s in shapes)
        raise StoreError(f"the graph holds embeddings of different shapes ({', '.join(sizes[:4])}); "
                         "nothing was written", hint="run `bme reembed` to give every node the same model")
    matrix = np.concatenate([v for _, v in rows]).astype("<f4", copy=False).reshape(len(rows), -1)
    if not _finite(matrix):
        bad = rows[int(np.flatnonzero(~np.isfinite(matrix).all(axis=1))[0])][0]
        raise StoreError(f"node {quote(bad)} has a NaN/Infinity embedding; nothing was written")
    return [i for i, _ in rows], matrix


def encode_sidecar(graph: Graph) -> list[bytes | memoryview]:
    """The sidecar document as byte chunks to write in order (JSON head, base64, tail)."""
    ids, matrix = _vector_matrix(graph)
    meta = graph.meta
    clash = _META_KEYS & meta.extra.keys()
    if clash:
        raise ValueError(f"GraphMeta.extra may not use the reserved keys {sorted(clash)}")
    block: dict[str, Any] = {
        "extractionCount": meta.extraction_count,
        "fingerprints": {str(k): v for k, v in sorted(meta.fingerprints.items())},
        **meta.extra,
        "embedding": {"model": meta.embedding_model,
                      "dimension": matrix.shape[1] if matrix is not None else meta.embedding_dim,
                      "count": len(ids), "ids": ids, "vectors": ""},
    }
    doc = {"format": SIDECAR_FORMAT, "formatVersion": SIDECAR_VERSION, "graph": None, "bme": block}
    with no_gc():
        doc["graph"] = graph_dict(graph)
        text = dumps_checked(doc, separators=(",", ":"), check_circular=False)
    head = memoryview(to_utf8(text))[: -len(_TAIL)]  # ends with '"vectors":"'
    vectors = binascii.b2a_base64(memoryview(matrix).cast("B"), newline=False) if matrix is not None else b""
    return [head, vectors, _TAIL + b"\n"]


def split_vectors(data: bytes | bytearray, source: str) -> Any:
    """Parse sidecar bytes, cutting the trailing base64 block out instead of JSON-scanning it.

    The block comes back as a memoryview in `bme.embedding.vectors`. Anything that is not
    laid out exactly as `encode_sidecar` writes it is parsed as plain JSON instead.
    """
    end = len(data)
    while end and data[end - 1] in b" \t\r\n":
        end -= 1
    quote_at = data.rfind(b'"', 0, end - len(_TAIL)) if data[end - len(_TAIL):end] == _TAIL else -1
    start = quote_at + 1
    if quote_at > 0 and data[start - len(_VECTORS_MARK):start] == _VECTORS_MARK:
        try:  # decode the head once, straight from the buffer (it is ~40% of the file)
            obj = parse_json(str(memoryview(data)[:start], "utf-8") + _TAIL.decode(), source)
        except (GraphFormatError, UnicodeDecodeError):
            obj = None
        if _vectors_slot_is_last(obj):
            obj["bme"]["embedding"]["vectors"] = memoryview(data)[start:end - len(_TAIL)]
            return obj
    return parse_json(data, source)


def _vectors_slot_is_last(obj: Any) -> bool:
    """True when the empty string we cut at is bme.embedding.vectors, the document's last value."""
    try:
        bme, emb = obj["bme"], obj["bme"]["embedding"]
        return (obj.get("format") == SIDECAR_FORMAT and list(obj)[-1] == "bme"
                and list(bme)[-1] == "embedding" and list(emb)[-1] == "vectors" and emb["vectors"] == "")
    except (TypeError, KeyError, IndexError, AttributeError):
        return False


_SIDECAR_HINT = "bme will not overwrite this file; restore it from its .bak, or move it away"


def _bad(source: str, message: str) -> GraphFormatError:
    return GraphFormatError(f"{source}: {message}", hint=_SIDECAR_HINT)


def _check_format_version(obj: dict, source: str) -> None:
    version = obj.get("formatVersion")
    if type(version) is not int or version < 1:
        raise _bad(source, f"formatVersion must be a positive integer (found {show(version)})")
    if version > SIDECAR_VERSION:
        raise StoreError(f"{source} was written by a newer bme (sidecar format {version}; this bme "
                         f"reads format {SIDECAR_VERSION})", hint="upgrade bme; the file was left untouched")


def graph_from_sidecar(obj: dict, source: str, now: int) -> Graph:
    """Validate a parsed sidecar document and build its Graph, GraphMeta and vectors."""
    _check_format_version(obj, source)
    graph = graph_from_v3_document(obj.get("graph"), source, now, same_dim=True)
    block = obj.get("bme")
    if not isinstance(block, dict):
        raise _bad(source, f"'bme' must be an object (found {show(block)})")
    graph.meta = _meta_from_block(block, source)
    emb = block.get("embedding")
    if emb is not None:
        _attach_block_vectors(graph, emb, source)
    return graph


def _meta_from_block(block: dict, source: str) -> GraphMeta:
    count = block.get("extractionCount", 0)
    fps = block.get("fingerprints") or {}
    if type(count) is not int or count < 0:
        raise _bad(source, f"bme.extractionCount must be a non-negative integer (found {show(count)})")
    if not isinstance(fps, dict) or not all(re.fullmatch(r"-?\d{1,15}", k) and type(v) is str
                                            for k, v in fps.items()):
        raise _bad(source, "bme.fingerprints must map message numbers to strings")
    emb = block.get("embedding")
    emb = emb if isinstance(emb, dict) else {}  # a wrong type is reported by _attach_block_vectors
    model, dim = emb.get("model"), emb.get("dimension")
    if model is not None and type(model) is not str:
        raise _bad(source, f"bme.embedding.model must be a string (found {show(model)})")
    if dim is not None and (type(dim) is not int or dim < 1):
        raise _bad(source, f"bme.embedding.dimension must be a positive integer (found {show(dim)})")
    extra = {k: v for k, v in block.items() if k not in _META_KEYS}
    if not finite_tree(extra.values()):
        raise _bad(source, "a bme key holds NaN or an infinite number")
    return GraphMeta(embedding_model=model, embedding_dim=dim, extraction_count=count,
                     fingerprints={int(k): v for k, v in fps.items()}, extra=extra)


def _attach_block_vectors(graph: Graph, emb: Any, source: str) -> None:
    if not isinstance(emb, dict):
        raise _bad(source, f"bme.embedding must be an object (found {show(emb)})")
    ids, value, dim = emb.get("ids") or [], emb.get("vectors") or b"", graph.meta.embedding_dim
    if type(ids) is not list or not all(type(i) is str for i in ids) or len(set(ids)) != len(ids):
        raise _bad(source, "bme.embedding.ids must be a list of distinct node ids")
    if emb.get("count", len(ids)) != len(ids):
        raise _bad(source, f"bme.embedding.count is {show(emb.get('count'))} but ids lists {len(ids)}")
    if not ids:
        return
    try:
        raw = binascii.a2b_base64(value.encode("ascii") if isinstance(value, str) else value,
                                  strict_mode=True)
    except (binascii.Error, UnicodeEncodeError, TypeError):
        raise _bad(source, "bme.embedding.vectors is not valid base64") from None
    if dim is None or len(raw) != len(ids) * dim * 4:
        raise _bad(source, f"bme.embedding.vectors holds {len(raw)} bytes, expected {len(ids)} rows "
                           f"x {dim} float32")
    # One matrix over the decoded bytes, no copy: every node's embedding is a read-only row
    # view of it (replace a vector, never modify one in place).
    matrix = np.frombuffer(raw, dtype="<f4").reshape(len(ids), dim)
    if matrix.dtype != np.float32:  # a big-endian machine: convert once
        matrix = matrix.astype(np.float32)
    if not _finite(matrix):
        raise _bad(source, "bme.embedding.vectors holds NaN or Infinity")
    for node_id, row in zip(ids, matrix):
        node = graph.get(node_id)
        if node is None:
            raise _bad(source, f"bme.embedding.ids names missing node {quote(node_id)}")
        node.embedding = row


# -- files ---------------------------------------------------------------------------------
def _store_error(exc: OSError, action: str, path: Path) -> StoreError:
    """An OSError as a StoreError a user can act on."""
    kept = "; the previous file was kept" if action in ("saving", "backing up") else ""
    where = f"while {action} {path}{kept}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"no space left on the device {where}", hint="free some disk space and run again")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StoreError(f"permission denied {where}", hint="check the folder's permissions, or keep "
                          "the graph elsewhere with --graph PATH")
    if exc.errno == errno.EROFS:
        return StoreError(f"read-only file system {where}", hint="keep the graph elsewhere with --graph PATH")
    if exc.errno == errno.ENOENT:
        return StoreError(f"the folder {path.parent} does not exist ({action} {path})",
                          hint="create it, or keep the graph elsewhere with --graph PATH")
    return StoreError(f"{exc.strerror or exc} {where}")


def load_graph(path: Path, now: int | None = None) -> Graph | None:
    """The graph in a sidecar, or None if there is none; corrupt or newer files raise.

    Vectors come back as read-only float32 row views of one matrix: assign a new array to
    `node.embedding`, never modify one in place. After loading a large graph the process's
    existing objects are frozen out of the cyclic GC (`gc.freeze`).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _store_error(exc, "reading", path) from None
    source = str(path)
    try:
        if not re.search(rb"\S", data):
            raise _bad(source, "the file is empty")
        obj = split_vectors(data, source)
        if not isinstance(obj, dict) or obj.get("format") != SIDECAR_FORMAT:
            raise GraphFormatError(f"{source}: not a bme sidecar", hint="to use an ST-BME export or "
                                   "graph, run `bme import CHAT FILE`; bme will not overwrite this file")
        graph = graph_from_sidecar(obj, source, now_ms() if now is None else now)
    except GraphFormatError as exc:
        exc.hint = exc.hint or _SIDECAR_HINT
        raise
    if len(graph.nodes) + len(graph.edges) >= _FREEZE_AT:
        # Hide a big graph's millions of objects from the cyclic GC: each later full
        # collection would re-scan them all (~0.3 s at 100k nodes). They form no cycles
        # and are still freed by reference counting.
        gc.freeze()
    return graph


def read_document(path: Path, now: int) -> ImportedGraph:
    """Any graph document from a file; of a SillyTavern chat only the header line is read."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            first = f.readline()
            if b'"chat_metadata"' in first and not first.lstrip(b"\xef\xbb\xbf \t").startswith(b'{"format"'):
                try:
                    header = parse_json(first, str(path))
                except GraphFormatError:
                    header = None
                if isinstance(header, dict) and "chat_metadata" in header:
                    return graph_from_any(header, str(path), now)
            data = first + f.read()
    except OSError as exc:
        raise GraphFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    return graph_from_any(data, str(path), now)


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
        raise _store_error(exc, "reading", path) from None
    match = _HEADER.match(head)
    if not match:
        raise StoreError(f"{path} exists and is not a bme sidecar; refusing to overwrite it",
                         hint="move it away, or import over it with --force (it is kept as .bak)")
    if int(match.group(1)) > SIDECAR_VERSION:
        raise StoreError(f"{path} was written by a newer bme (sidecar format {int(match.group(1))}); "
                         "refusing to overwrite it", hint="upgrade bme")
    if not tail.rstrip().endswith(b"}"):
        raise StoreError(f"{path} looks truncated; refusing to overwrite it",
                         hint="restore it from its .bak, or move it away")


def _write_all(fd: int, chunks: list[bytes | memoryview]) -> None:
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            written = os.write(fd, view[:_CHUNK])
            view = view[written:]


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename itself has happened
    finally:
        os.close(fd)


def atomic_write(path: Path, chunks: list[bytes | memoryview], mode: int | None = None) -> None:
    """Write a file atomically: temp file beside it, fsync, os.replace, fsync the folder.

    New files get mode 0o600, existing ones keep theirs. On any failure the temp file is
    removed and the old file is untouched; OSErrors become StoreErrors.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode & 0o7777 if mode is None else mode
    except FileNotFoundError:
        mode = 0o600
    except OSError as exc:
        raise _store_error(exc, "saving", path) from None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _store_error(exc, "saving", path) from None
    try:
        try:
            _write_all(fd, chunks)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _store_error(exc, "saving", path) from None
        raise
    _fsync_dir(path.parent)


def save_graph(path: Path, graph: Graph, *, force: bool = False) -> None:
    """Save a graph to its sidecar atomically (hold a GraphLock around load-change-save).

    Refuses to replace a file that is not a readable bme sidecar unless `force`.
    """
    chunks = encode_sidecar(graph)  # fails before anything is touched
    if not force:
        _check_replaceable(Path(path))
    atomic_write(Path(path), chunks)


def replace_with_backup(path: Path, graph: Graph) -> Path | None:
    """Save over whatever is at `path`, keeping the old file as `<sidecar>.bak`; returns it."""
    path, backup = Path(path), backup_path(path)
    chunks = encode_sidecar(graph)
    if not path.exists():
        atomic_write(path, chunks)
        return None
    tmp = backup.with_name(f".{backup.name}.{os.getpid()}.tmp")
    try:
        try:
            os.link(path, tmp)  # instant and exact; fall back to a copy where links fail
        except OSError:
            shutil.copy2(path, tmp)
        os.replace(tmp, backup)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _store_error(exc, "backing up", path) from None
    atomic_write(path, chunks)
    return backup


# -- locking -------------------------------------------------------------------------------
def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _remove_stale_temps(path: Path) -> None:
    """Delete temp files of writers that died before their os.replace (we hold the lock)."""
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[A-Za-z0-9_]+\.tmp")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if pattern.fullmatch(name):
            try:
                os.unlink(path.parent / name)
            except OSError:
                pass


class GraphLock:
    """Serialise bme processes on one sidecar: `<sidecar>.lock` plus flock(2) on it.

    The flock on the inode currently at the lock path is the truth: the kernel drops it
    when the holder dies, so a lock file left by a crash is taken over at once. The file's
    JSON (pid, host, started) only names the holder in the error. A holder unlinks the
    file before releasing; whoever gets the flock re-checks the path still names the
    inode it locked, else retries. Not re-entrant within one process.
    """

    def __init__(self, path: Path, wait: float = 0.0, *, poll: float = 0.05,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.path = Path(path)
        self.lock_path = lock_path(self.path)
        self.wait, self.poll, self._clock, self._sleep = max(0.0, wait), poll, clock, sleep
        self._fd: int | None = None

    def __enter__(self) -> "GraphLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, polling up to `wait` seconds; raise LockedError naming the holder."""
        if fcntl is None:  # pragma: no cover
            raise StoreError("locking needs a POSIX system (fcntl.flock)")
        deadline = self._clock() + self.wait
        while True:
            fd = self._try_lock()
            if fd is not None:
                self._fd = fd
                self._write_info()
                _remove_stale_temps(self.path)
                return
            if self._clock() >= deadline:
                raise LockedError(f"{self.path} is locked by {self._holder()}",
                                  hint="wait for it, or pass --wait SECONDS")
            self._sleep(max(0.0, min(self.poll, deadline - self._clock())))

    def _open(self) -> int | None:
        flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(self.lock_path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                return os.open(self.lock_path, flags)
            except FileNotFoundError:
                return None  # released between our two opens: try again
        except OSError as exc:
            raise _store_error(exc, "locking", self.path) from None

    def _try_lock(self) -> int | None:
        for _ in range(100):  # each retry means another process released or took it just now
            fd = self._open()
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock {self.lock_path}: {exc.strerror}",
                                 hint="the file system may not support locks; use --graph PATH") from None
            if _same_file(fd, self.lock_path):
                return fd
            os.close(fd)
        return None

    def _write_info(self) -> None:
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": now_ms()}
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, json.dumps(info).encode(), 0)

    def _holder(self) -> str:
        try:
            info = json.loads(self.lock_path.read_text(encoding="utf-8"))
            pid, host, started = int(info["pid"]), str(info["host"]), int(info["started"])
        except (OSError, ValueError, KeyError, TypeError):
            return "another bme process"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started / 1000))
        where = "" if host == socket.gethostname() else f" on {host}"
        return f"pid {pid}{where} (started {when})"

    def release(self) -> None:
        """Drop the lock (unlink the file first, so waiters re-check and start fresh)."""
        if self._fd is None:
            return
        try:
            if _same_file(self._fd, self.lock_path):
                os.unlink(self.lock_path)
        except OSError:
            pass
        finally:
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        """Whether this object currently holds the lock."""
        return self._fd is not None
