"""The sidecar document (`bme-sidecar`): encode a Graph to bytes, and read one back.

Layout (compact JSON, UTF-8, one line plus a newline), `jq .graph` being a plain ST-BME
v3 graph with every embedding null:

    {"format": "bme-sidecar", "formatVersion": 1,
     "graph": {<ST-BME v3 graph>},
     "bme": {"extractionCount": 0, "fingerprints": {"<seq>": "<fp>", ...}, <GraphMeta.extra>,
             "embedding": {"model": str|null, "dimension": int|null, "count": N,
                           "ids": [node ids, one per row], "vectors": "<base64>"}}}

`vectors` is base64 of little-endian float32, row-major (N x dimension), and is always the
document's last value: the reader cuts it out of the bytes instead of JSON-scanning 200 MB,
and decodes it into one matrix whose rows become the nodes' embeddings. Keys of
`GraphMeta.extra` sit beside the known ones in `bme`, so keys a newer bme adds survive.
No file I/O here: `graph.store` reads and writes the files.
"""
from __future__ import annotations

import binascii
import os
import re
from operator import is_
from typing import Any, Callable, Iterator

import orjson

import numpy as np

from ..errors import GraphFormatError, StoreError
from .jsonio import ORJSON_OPTS, dumps_compact, finite_tree, no_gc, quote, read_json, show
from .model import Graph, GraphMeta
from .v3 import edge_dicts, graph_dict, graph_frame, graph_from_v3_document, graph_is_finite, node_dicts

SIDECAR_FORMAT = "bme-sidecar"
SIDECAR_VERSION = 1
HEADER = re.compile(rb'\s*\{\s*"format"\s*:\s*"bme-sidecar"\s*,\s*"formatVersion"\s*:\s*(\d+)')
SIDECAR_HINT = "bme will not overwrite this file; restore it from its .bak, or move it away"
_META_KEYS = frozenset({"extractionCount", "fingerprints", "embedding"})
_VECTORS_MARK = b'"vectors":"'
# Heads at least this long are decoded by msgspec (graph.v3_typed), when it is installed; below
# it (some 6,000 nodes and edges) importing msgspec would cost more than it saves.
TYPED_FROM_BYTES = 2 << 20
_TAIL = b'"}}}'
_PIECE = 4096  # nodes or edges dumped at a time by stream_sidecar
_B64_PIECE = 3 << 20  # bytes of vectors encoded at a time: 4 MB of base64
_STR = frozenset({str})


# -- Graph -> bytes ----------------------------------------------------------------------------
def _finite(matrix: np.ndarray) -> bool:
    # A sum propagates NaN and infinities in one pass; only one that overflows needs min and max,
    # which expose them without a full-size boolean temporary.
    return (matrix.size == 0 or bool(np.isfinite(matrix.sum()))
            or bool(np.isfinite(matrix.min()) and np.isfinite(matrix.max())))


def _vector_matrix(graph: Graph) -> tuple[list[str], np.ndarray | None]:
    rows = [(n.id, n.embedding) for n in graph.nodes if n.embedding is not None]
    if not rows:
        return [], None
    matrix = _adopted_matrix(graph, [v for _, v in rows])
    if matrix is None:
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


def _adopted_matrix(graph: Graph, vectors: list[np.ndarray]) -> np.ndarray | None:
    """The matrix `Graph.adopt_vectors` was given, when `vectors` are still its rows, in order."""
    block = graph.vector_block
    if block is None or len(block[1]) != len(vectors) or not all(map(is_, vectors, block[1])):
        return None
    matrix = block[0]
    if matrix.ndim != 2 or matrix.shape[1] == 0:
        return None
    return np.ascontiguousarray(matrix, dtype="<f4")  # no copy of a little-endian float32 matrix


def encode_sidecar(graph: Graph) -> list[bytes | memoryview]:
    """The sidecar document as byte chunks to write in order (JSON head, base64, tail).

    Raises GraphFormatError (a NaN somewhere), StoreError (bad embeddings) or ValueError
    (GraphMeta.extra using a reserved key) before anything is written.
    """
    ids, matrix, doc = _document(graph)
    with no_gc():
        doc["graph"] = graph_dict(graph)
        text = dumps_compact(doc, finite=graph_is_finite(graph) and finite_tree(doc["bme"].values()))
    head = memoryview(text)[: -len(_TAIL)]  # ends with '"vectors":"'
    return [head, *_b64_chunks(matrix), _TAIL + b"\n"]


def _document(graph: Graph) -> tuple[list[str], np.ndarray | None, dict[str, Any]]:
    """(ids, vector matrix, the document with "graph" still None); raises what encode_sidecar raises but NaN."""
    ids, matrix = _vector_matrix(graph)
    meta = graph.meta
    clash = _META_KEYS & meta.extra.keys()
    if clash:
        raise ValueError(f"GraphMeta.extra may not use the reserved keys {sorted(clash)}")
    block: dict[str, Any] = {
        "extractionCount": meta.extraction_count,
        "fingerprints": {str(k): v for k, v in sorted(meta.fingerprints.items())},
        # a dict subclass (excerpt vectors keep their decoded rows on one) as a plain dict: orjson
        # writes no subclass, and the stdlib writer it would fall back on is ten times slower
        **{k: dict(v) if isinstance(v, dict) and type(v) is not dict else v for k, v in meta.extra.items()},
        "embedding": {"model": meta.embedding_model,
                      "dimension": matrix.shape[1] if matrix is not None else meta.embedding_dim,
                      "count": len(ids), "ids": ids, "vectors": ""},
    }
    return ids, matrix, {"format": SIDECAR_FORMAT, "formatVersion": SIDECAR_VERSION, "graph": None, "bme": block}


class Unstreamable(Exception):
    """orjson refused a value halfway through `stream_sidecar`: write `encode_sidecar`'s chunks instead."""


def stream_sidecar(graph: Graph) -> Iterator[bytes | memoryview] | None:
    """The bytes of `encode_sidecar(graph)`, made a few thousand nodes or edges at a time as they are
    written, so the whole document is never in memory (nor a dict of every node and edge).

    Raises what encode_sidecar raises, before anything is written; None where only encode_sidecar
    can write the graph (a NaN, or a value orjson is not vouched to write the same). The iterator
    raises Unstreamable if orjson refuses a value on the way (a lone surrogate, say).
    """
    ids, matrix, doc = _document(graph)
    if not (graph_is_finite(graph) and finite_tree(doc["bme"].values())):
        return None
    marks = [f"bme-{name}-" + os.urandom(12).hex() for name in ("nodes", "edges")]
    doc["graph"] = graph_frame(graph, *marks)
    try:
        text = orjson.dumps(doc, option=ORJSON_OPTS)
    except orjson.JSONEncodeError:
        return None
    frame = [memoryview(text)]
    for mark in marks:  # the frame cut where each list goes: each placeholder stands in it once
        quoted = f'"{mark}"'.encode("ascii")
        parts = frame.pop().tobytes().split(quoted)
        if len(parts) != 2:
            return None
        frame += map(memoryview, parts)
    if not frame[2].tobytes().endswith(_TAIL):
        return None
    return _stream(graph, frame, matrix)


def _stream(graph: Graph, frame: list[memoryview], matrix: np.ndarray | None) -> Iterator[bytes | memoryview]:
    yield frame[0]
    yield from _json_list(graph.nodes, node_dicts)
    yield frame[1]
    yield from _json_list(graph.edges, edge_dicts)
    yield frame[2][: -len(_TAIL)]
    yield from _b64_chunks(matrix)
    yield _TAIL + b"\n"


def _json_list(items: list, dicts: Callable[[list], list[dict[str, Any]]]) -> Iterator[bytes]:
    """`orjson.dumps(dicts(items))` in pieces of _PIECE items (the same bytes: compact JSON has no spaces)."""
    yield b"["
    for at in range(0, len(items), _PIECE):
        with no_gc():
            try:
                text = orjson.dumps(dicts(items[at:at + _PIECE]), option=ORJSON_OPTS)
            except orjson.JSONEncodeError:
                raise Unstreamable from None
        yield memoryview(text)[1:-1] if at == 0 else b"," + text[1:-1]
    yield b"]"


def _b64_chunks(matrix: np.ndarray | None) -> list[bytes] | Iterator[bytes]:
    """The matrix's bytes in base64, in pieces (a multiple of 3 bytes each: they join seamlessly)."""
    if matrix is None:
        return [b""]
    data = memoryview(matrix).cast("B")
    return (_b64encode(data[at:at + _B64_PIECE]) for at in range(0, max(len(data), 1), _B64_PIECE))


def _b64encode(data: memoryview) -> bytes:
    """Base64 without a newline: pybase64 (4-6x faster than binascii, the same bytes) when installed."""
    try:
        import pybase64
    except ImportError:
        return binascii.b2a_base64(data, newline=False)
    return pybase64.b64encode(data)


def _b64decode(value: Any) -> bytes:
    """Strict base64 decoding, as `binascii.a2b_base64(strict_mode=True)`; pybase64 first when installed.

    pybase64 only ever answers for whole 4-character groups of the alphabet; anything it
    refuses is decoded (or refused, raising binascii.Error) by binascii, as before.
    """
    try:
        import pybase64
        if len(value) % 4 == 0:
            return pybase64.b64decode(value, validate=True)
    except (ImportError, binascii.Error, ValueError):
        pass
    return binascii.a2b_base64(value, strict_mode=True)


# -- bytes -> Graph ----------------------------------------------------------------------------
def _split(data: Any) -> tuple[int, int] | None:
    """Where the base64 starts and ends, when laid out as encode_sidecar writes it."""
    end = len(data)
    while end and data[end - 1] in b" \t\r\n":
        end -= 1
    if end < len(_TAIL) or data[end - len(_TAIL):end] != _TAIL:
        return None
    start = data.rfind(b'"', 0, end - len(_TAIL)) + 1
    if start <= 0 or data[max(0, start - len(_VECTORS_MARK)):start] != _VECTORS_MARK:
        return None
    return start, end - len(_TAIL)


def _vectors_slot_is_last(obj: Any) -> bool:
    """True when the empty string we cut at is bme.embedding.vectors, the document's last value."""
    try:
        bme, emb = obj["bme"], obj["bme"]["embedding"]
        return (obj.get("format") == SIDECAR_FORMAT and list(obj)[-1] == "bme"
                and list(bme)[-1] == "embedding" and list(emb)[-1] == "vectors" and emb["vectors"] == "")
    except (TypeError, KeyError, IndexError, AttributeError):
        return False


def read_sidecar_bytes(data: Any, source: str, now: int, *, scratch: bool = False) -> Graph | None:
    """The Graph of a sidecar laid out as `encode_sidecar` writes it, vectors never JSON-scanned.

    None when the bytes are laid out otherwise (hand-edited, pretty-printed, not a
    sidecar): parse them as plain JSON then. Errors in a sidecar so laid out are raised.
    With `scratch`, `data` is a writable buffer (a copy-on-write map of the file) whose
    bytes after the head may be overwritten for a moment, sparing a copy of the head.
    """
    cut = _split(data)
    if cut is None:
        return None
    start, end = cut
    view = memoryview(data)
    if scratch:
        kept = bytes(view[start:start + len(_TAIL)])
        view[start:start + len(_TAIL)] = _TAIL  # the head, closed where the base64 begins
        head: Any = view[:start + len(_TAIL)]
    else:
        head = b"".join((view[:start], _TAIL))
    try:
        found = _typed_graph_and_block(head, source)
        if found is None:
            found = read_json(head, source, lambda obj: _graph_and_block(obj, source, now)
                              if _vectors_slot_is_last(obj) else None)
    finally:
        if scratch:
            view[start:start + len(kept)] = kept
    if found is None:
        return None
    graph, emb = found
    if emb is not None:
        _attach_block_vectors(graph, emb, view[start:end], source)
    return graph


def bad_sidecar(source: str, message: str) -> GraphFormatError:
    """A GraphFormatError about a sidecar, with the hint that bme will not overwrite it."""
    return GraphFormatError(f"{source}: {message}", hint=SIDECAR_HINT)


def _check_format_version(obj: dict, source: str) -> None:
    version = obj.get("formatVersion")
    if type(version) is not int or version < 1:
        raise bad_sidecar(source, f"formatVersion must be a positive integer (found {show(version)})")
    if version > SIDECAR_VERSION:
        raise StoreError(f"{source} was written by a newer bme (sidecar format {version}; this bme "
                         f"reads format {SIDECAR_VERSION})", hint="upgrade bme; the file was left untouched")


def graph_from_sidecar(obj: dict, source: str, now: int) -> Graph:
    """Validate a parsed sidecar document and build its Graph, GraphMeta and vectors."""
    graph, emb = _graph_and_block(obj, source, now)
    if emb is not None:
        _attach_block_vectors(graph, emb, emb.get("vectors") or b"", source)
    return graph


def _typed_graph_and_block(head: Any, source: str) -> tuple[Graph, dict | None] | None:
    """`_graph_and_block` of a head msgspec decodes into typed records (graph.v3_typed), for a
    third less CPU; None when msgspec is not installed, the head is small, or the document is not
    exactly as bme writes it."""
    if len(head) < TYPED_FROM_BYTES:
        return None
    try:
        from .v3_typed import read_sidecar_head  # msgspec loads when a big sidecar is first read
    except ImportError:
        return None
    found = read_sidecar_head(head, SIDECAR_FORMAT, SIDECAR_VERSION)
    if found is None:
        return None
    try:
        return found[0], _checked_block(found[0], found[1], source)
    except GraphFormatError:  # let the ordinary path report it, in its words
        return None


def _graph_and_block(obj: dict, source: str, now: int) -> tuple[Graph, dict | None]:
    """The Graph with its GraphMeta, and the checked `bme.embedding` block (vectors not decoded)."""
    _check_format_version(obj, source)
    graph = graph_from_v3_document(obj.get("graph"), source, now, same_dim=True)
    return graph, _checked_block(graph, obj.get("bme"), source)


def _checked_block(graph: Graph, block: Any, source: str) -> dict | None:
    """Set graph.meta from the `bme` block; its checked `embedding` (vectors not decoded) or None."""
    if not isinstance(block, dict):
        raise bad_sidecar(source, f"'bme' must be an object (found {show(block)})")
    graph.meta = _meta_from_block(block, source)
    emb = block.get("embedding")
    if emb is None:
        return None
    if not isinstance(emb, dict):
        raise bad_sidecar(source, f"bme.embedding must be an object (found {show(emb)})")
    ids = emb.get("ids") or []
    if type(ids) is not list or not _STR.issuperset(map(type, ids)) or len(set(ids)) != len(ids):
        raise bad_sidecar(source, "bme.embedding.ids must be a list of distinct node ids")
    if emb.get("count", len(ids)) != len(ids):
        raise bad_sidecar(source, f"bme.embedding.count is {show(emb.get('count'))} but ids lists {len(ids)}")
    return emb


def _meta_from_block(block: dict, source: str) -> GraphMeta:
    count = block.get("extractionCount", 0)
    fps = block.get("fingerprints") or {}
    if type(count) is not int or count < 0:
        raise bad_sidecar(source, f"bme.extractionCount must be a non-negative integer (found {show(count)})")
    if not isinstance(fps, dict) or not all(re.fullmatch(r"-?\d{1,15}", k) and type(v) is str
                                            for k, v in fps.items()):
        raise bad_sidecar(source, "bme.fingerprints must map message numbers to strings")
    emb = block.get("embedding")
    emb = emb if isinstance(emb, dict) else {}  # a wrong type is reported by _graph_and_block
    model, dim = emb.get("model"), emb.get("dimension")
    if model is not None and type(model) is not str:
        raise bad_sidecar(source, f"bme.embedding.model must be a string (found {show(model)})")
    if dim is not None and (type(dim) is not int or dim < 1):
        raise bad_sidecar(source, f"bme.embedding.dimension must be a positive integer (found {show(dim)})")
    extra = {k: v for k, v in block.items() if k not in _META_KEYS}
    if not finite_tree(extra.values()):
        raise bad_sidecar(source, "a bme key holds NaN or an infinite number")
    return GraphMeta(embedding_model=model, embedding_dim=dim, extraction_count=count,
                     fingerprints={int(k): v for k, v in fps.items()}, extra=extra)


def _attach_block_vectors(graph: Graph, emb: dict, value: Any, source: str) -> None:
    """Decode the base64 `value` into one float32 matrix; its rows become the nodes' embeddings."""
    ids, dim = emb.get("ids") or [], graph.meta.embedding_dim
    if not ids:
        return
    try:
        raw = _b64decode(value.encode("ascii") if isinstance(value, str) else value)
    except (binascii.Error, UnicodeEncodeError, TypeError):
        raise bad_sidecar(source, "bme.embedding.vectors is not valid base64") from None
    if dim is None or len(raw) != len(ids) * dim * 4:
        raise bad_sidecar(source, f"bme.embedding.vectors holds {len(raw)} bytes, expected {len(ids)} rows "
                                  f"x {dim} float32")
    # One matrix over the decoded bytes, no copy: every node's embedding is a read-only row
    # view of it (replace a vector, never modify one in place).
    matrix = np.frombuffer(raw, dtype="<f4").reshape(len(ids), dim)
    if matrix.dtype != np.float32:  # a big-endian machine: convert once
        matrix = matrix.astype(np.float32)
    if not _finite(matrix):
        raise bad_sidecar(source, "bme.embedding.vectors holds NaN or Infinity")
    nodes = graph.get_all(ids)
    if None in nodes:
        missing = ids[nodes.index(None)]
        raise bad_sidecar(source, f"bme.embedding.ids names missing node {quote(missing)}")
    graph.adopt_vectors(nodes, matrix)
