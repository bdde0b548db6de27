"""Inline embeddings read without a Python float each: the `"embedding":[...]` spans of a graph document.

An ST-BME graph carries every node's vector as a JSON list of numbers: at 100k nodes, 42
million floats, which `orjson.loads` would make into Python objects (most of an import's
time and 3 GB of memory). `cut_vectors` instead finds each node's `"embedding":[` in the
raw bytes, parses the lists with simdjson, a few hundred at a time, into float64 rows
(correctly rounded, as orjson and the stdlib are, so the float32 rows are bit-identical to the
old path's), and leaves a placeholder string in their place for a JSON parser to read the rest.

It is only a shortcut: it answers None for anything it cannot vouch for (a list that is
not numbers, lists of different sizes, an empty one written with spaces, a value beyond
2**53, one float32 cannot hold, no simdjson installed), and `attach_cut_vectors` refuses a
placeholder that did not land on a node's own `embedding`. The caller then reads the
document the ordinary way, which reports any problem in its usual words. The placeholder
is a fresh random string per read, so no document can hold it by design.
"""
from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

_MARK = b'"embedding":'
_OPEN = re.compile(rb"[ \t\r\n]*\[")
# lists per simdjson parse: ~1 MB of text, which with the parser's tape stays in the CPU's caches
# (at 100k nodes 0.7 s for all vectors, against 1.5 s in batches of 4096 with a new parser each)
_BATCH = 256
_BIG = 8 << 20  # documents of this size and more get their buffers from anonymous maps
_DROP_EVERY = 16 << 20  # bytes of a mapped file read before its pages are dropped
_EXACT = 2.0 ** 53  # beyond this an integer literal and a float of it may round differently


@dataclass
class CutVectors:
    """The document without its embedding lists, and those lists as one float32 matrix."""

    head: bytearray | mmap.mmap  # an anonymous map for a big document
    mark: str  # the string that stands in for each list, in document order
    matrix: np.ndarray  # one row per list, float32


def find_spans(data: Any) -> list[tuple[int, int]]:
    """(start of '[', just past its ']') of every `"embedding":[...]` with something inside."""
    spans: list[tuple[int, int]] = []
    find, opening = data.find, _OPEN.match
    pos = find(_MARK)
    while pos >= 0:
        pos += len(_MARK)
        if data[pos:pos + 1] == b"[":  # as JSON.stringify writes it; the regex only for spaces
            start = pos
        else:
            m = opening(data, pos)
            start = -1 if m is None else m.end() - 1
        if start >= 0:
            end = find(b"]", start)
            if end < 0:
                return []
            if end > start + 1:  # `[]` stays in the text: no vector, as before
                spans.append((start, end + 1))
            pos = end
        pos = find(_MARK, pos)
    return spans


def _batch_values(parser: Any, view: memoryview, batch: list[tuple[int, int]]) -> np.ndarray | None:
    """The batch's numbers, row after row, as float64; None unless each list is numbers only, all of one length.

    A list with a quote in it holds a string (or was cut at a `]` inside one): refused before parsing.
    """
    text = b"".join((b"[", b",".join([view[s:e] for s, e in batch]), b"]"))
    if b'"' in text:
        return None
    try:
        doc = parser.parse(text)
        sizes = {len(row) for row in doc}
        values = np.frombuffer(doc.as_buffer(of_type="d"), dtype=np.float64)  # a copy of its own
    except (ValueError, TypeError, RuntimeError):  # not JSON, or not numbers only
        return None
    finally:
        doc = None  # simdjson refuses to reuse a parser while a document of it lives
    dim = len(values) // len(batch)
    if sizes != {dim} or dim == 0 or values.size and not float(np.abs(values).max()) < _EXACT:
        return None
    return values


def cut_vectors(data: Any, *, release: bool = False) -> CutVectors | None:
    """The embedding lists cut out of a JSON document's bytes, or None (see the module doc).

    With `release`, `data` is a read-only map of a file whose pages may be dropped from this
    process once read (they stay in the page cache): the process never holds all of it at once.
    """
    spans = find_spans(data)
    if not spans:
        return None
    try:
        import simdjson
    except ImportError:  # an install without it reads the document the ordinary way
        return None
    mark = "bme-vector-" + os.urandom(12).hex()
    cut = _Cut(data, spans, b'"' + mark.encode("ascii") + b'"')
    parser = simdjson.Parser()  # one for all batches: its buffers are reused, not made anew each time
    drop = _Dropper(data) if release and isinstance(data, mmap.mmap) else None
    for first in range(0, len(spans), _BATCH):
        if not cut.batch(parser, first, spans[first:first + _BATCH]):
            return None
        if drop is not None:
            drop(cut.prev)
    return CutVectors(cut.finish(), mark, cut.matrix)


class _Cut:
    """The head (the text with each list replaced by the placeholder) and the matrix, batch by batch."""

    def __init__(self, data: Any, spans: list[tuple[int, int]], quoted: bytes) -> None:
        self.big = len(data) >= _BIG
        self.view, self.quoted, self.rows = memoryview(data), quoted, len(spans)
        self.buffer = _buffer(len(data) - sum(e - s for s, e in spans) + len(spans) * len(quoted), self.big)
        self.head = memoryview(self.buffer)
        self.matrix: Any = None
        self.at = self.prev = 0  # how far the head is written, and from where in the text it goes on

    def batch(self, parser: Any, first: int, batch: list[tuple[int, int]]) -> bool:
        """Parse these lists into the matrix and copy the text before each; False if they do not fit."""
        values = _batch_values(parser, self.view, batch)
        if values is None:
            return False
        dim = len(values) // len(batch)
        if self.matrix is None:
            self.matrix = np.frombuffer(_buffer(self.rows * dim * 4, self.big), np.float32).reshape(self.rows, dim)
        elif self.matrix.shape[1] != dim:
            return False
        rows = self.matrix[first:first + len(batch)]
        rows[:] = values.reshape(len(batch), dim)
        if not np.isfinite(rows).all():  # a number float32 cannot hold
            return False
        head, view, quoted, at, prev = self.head, self.view, self.quoted, self.at, self.prev
        for s, e in batch:
            end = at + s - prev
            head[at:end] = view[prev:s]
            head[end:end + len(quoted)] = quoted
            at, prev = end + len(quoted), e
        self.at, self.prev = at, prev
        return True

    def finish(self) -> Any:
        self.head[self.at:] = self.view[self.prev:]
        self.head.release()
        return self.buffer


def _buffer(size: int, big: bool) -> Any:
    """`size` zero bytes; big ones in an anonymous map the kernel may back with huge pages.

    A fresh page of memory costs the kernel a fault each (here about 1.5 ms of CPU per MB in
    small pages, a sixth of that in huge ones), which is a large part of reading 300 MB.
    """
    if not big or size == 0:
        return bytearray(size)
    buf = mmap.mmap(-1, size)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        try:
            buf.madvise(mmap.MADV_HUGEPAGE)
        except OSError:  # a kernel without transparent huge pages: small pages, as any other memory
            pass
    return buf


class _Dropper:
    """Drops the pages of a read-only file map before an offset, a few MB at a time (`madvise`)."""

    def __init__(self, data: mmap.mmap) -> None:
        self._data, self._done = data, 0

    def __call__(self, offset: int) -> None:
        end = offset - offset % mmap.PAGESIZE
        if end - self._done >= _DROP_EVERY and hasattr(mmap, "MADV_DONTNEED"):
            try:
                self._data.madvise(mmap.MADV_DONTNEED, self._done, end - self._done)
            except OSError:
                return
            self._done = end


def attach_cut_vectors(graph: Any, nodes: list, values: list, cut: CutVectors) -> bool:
    """Give each node whose `embedding` value is the placeholder its row; False if any is out of place.

    `values` holds each node's `embedding` as read. Every placeholder must be a node's own
    `embedding`, in order, and every other node's embedding null or [] (what the old path also
    leaves without a vector).
    """
    mark = cut.mark
    if values.count(mark) == len(values):  # the usual case: every node has its vector
        found = nodes
    else:
        found = []
        for node, v in zip(nodes, values):
            if v == mark:
                found.append(node)
            elif v is not None and v != []:
                return False
    if len(found) != len(cut.matrix):
        return False
    graph.adopt_vectors(found, cut.matrix)
    return True
