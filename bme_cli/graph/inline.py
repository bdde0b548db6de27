"""Inline embeddings read without a Python float each: the `"embedding":[...]` spans of a graph document.

An ST-BME graph carries every node's vector as a JSON list of numbers: at 100k nodes, 42
million floats, which `orjson.loads` would make into Python objects (most of an import's
time and 3 GB of memory). `cut_vectors` instead finds each node's `"embedding":[` in the
raw bytes, parses all the lists at once with simdjson into one float64 buffer (correctly
rounded, as orjson and the stdlib are, so the float32 rows are bit-identical to the old
path's), and leaves a placeholder string in their place for orjson to read the rest.

It is only a shortcut: it answers None for anything it cannot vouch for (a list that is
not numbers, lists of different sizes, an empty one written with spaces, a value beyond
2**53, one float32 cannot hold, no simdjson installed), and `attach_cut_vectors` refuses a
placeholder that did not land on a node's own `embedding`. The caller then reads the
document the ordinary way, which reports any problem in its usual words. The placeholder
is a fresh random string per read, so no document can hold it by design.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

_MARK = b'"embedding":'
_OPEN = re.compile(rb"[ \t\r\n]*\[")
_CHUNK = 4096   # lists per simdjson parse: bounds the parser's tape to ~60 MB
_EXACT = 2.0 ** 53  # beyond this an integer literal and a float of it may round differently


@dataclass
class CutVectors:
    """The document without its embedding lists, and those lists as one float32 matrix."""

    head: bytes
    mark: str  # the string that stands in for each list, in document order
    matrix: np.ndarray  # one row per list, float32


def _spans(data: Any) -> list[tuple[int, int]]:
    """(start of '[', just past its ']') of every `"embedding":[...]` with something inside."""
    spans: list[tuple[int, int]] = []
    find, opening = data.find, _OPEN.match
    pos = find(_MARK)
    while pos >= 0:
        pos += len(_MARK)
        m = opening(data, pos)
        if m is not None:
            start = m.end() - 1
            end = find(b"]", start)
            if end < 0:
                return []
            if end > start + 1:  # `[]` stays in the text: no vector, as before
                spans.append((start, end + 1))
            pos = end
        pos = find(_MARK, pos)
    return spans


def _parse_rows(view: memoryview, spans: list[tuple[int, int]]) -> np.ndarray | None:
    """The lists as one float32 matrix; None unless each is numbers only, all of one length."""
    try:
        import simdjson
    except ImportError:  # an install without it reads the document the ordinary way
        return None
    matrix: np.ndarray | None = None
    for at in range(0, len(spans), _CHUNK):
        chunk = spans[at:at + _CHUNK]
        text = b"".join((b"[", b",".join([view[s:e] for s, e in chunk]), b"]"))
        parser = simdjson.Parser()
        try:
            doc = parser.parse(text)
            sizes = {len(row) for row in doc}
            values = np.frombuffer(doc.as_buffer(of_type="d"), dtype=np.float64)
        except (ValueError, TypeError, RuntimeError):  # not JSON, or not numbers only
            return None
        finally:
            doc = None
        dim = len(values) // len(chunk)
        if sizes != {dim} or dim == 0 or matrix is not None and matrix.shape[1] != dim:
            return None
        if matrix is None:
            matrix = np.empty((len(spans), dim), dtype=np.float32)
        if values.size and not float(np.abs(values).max()) < _EXACT:
            return None
        matrix[at:at + len(chunk)] = values.reshape(len(chunk), dim)
    if matrix is None or not np.isfinite(matrix).all():  # a number float32 cannot hold
        return None
    return matrix


def cut_vectors(data: Any) -> CutVectors | None:
    """The embedding lists cut out of a JSON document's bytes, or None (see the module doc)."""
    spans = _spans(data)
    if not spans:
        return None
    view = memoryview(data)
    matrix = _parse_rows(view, spans)
    if matrix is None:
        return None
    mark = "bme-vector-" + os.urandom(12).hex()
    quoted = b'"' + mark.encode("ascii") + b'"'
    pieces: list[Any] = []
    prev = 0
    for s, e in spans:
        pieces += (view[prev:s], quoted)
        prev = e
    pieces.append(view[prev:])
    return CutVectors(b"".join(pieces), mark, matrix)


def attach_cut_vectors(nodes: list, items: list, cut: CutVectors) -> bool:
    """Give each node whose `embedding` is the placeholder its row; False if any is out of place.

    Every placeholder must be a node's own `embedding`, in order, and every other node's
    embedding null or [] (what the old path also leaves without a vector).
    """
    mark, rows = cut.mark, cut.matrix
    found = []
    for node, d in zip(nodes, items):
        v = d.get("embedding") if type(d) is dict else None
        if v == mark:
            found.append(node)
        elif v is not None and v != []:
            return False
    if len(found) != len(rows):
        return False
    for node, row in zip(found, rows):
        node.embedding = row
    return True
