"""An ST-BME graph file read straight into a Graph: `bme import`'s fast path.

The general reader (`graph.codec`) makes a dict of every node and edge (orjson: 2.2 s at
100k nodes), checks them and copies them into Node and Edge objects. Here the embedding
lists are cut out of the bytes and parsed as numbers (`graph.inline`), and the rest of the
text is decoded by msgspec straight into typed records (`graph.v3_typed`), which check
types and integer ranges as they parse and become the Node and Edge objects (0.3 s).

It is only a shortcut, for a bare v3 graph laid out and typed as ST-BME writes one: every
node and edge key present, none unknown, no other top-level key than `version`,
`lastProcessedSeq`, `nodes`, `edges` and `lastRecallResult`, every vector a list of numbers of
one length. Anything else is None here, and the caller reads the file the ordinary way,
which gives the same graph or reports the problem in its usual words. Such a document is
neither a sidecar, a bme export nor a SillyTavern chat, so the ordinary reader would read it
as this one does (an ST-BME graph: no model tag, bme's own meta empty).
"""
from __future__ import annotations

import mmap
import re

from .codec import KIND_STBME, ImportedGraph
from .inline import attach_cut_vectors, cut_vectors
from .v3_typed import read_graph_document

_LIST = b'"embedding":['
# the first key of such a graph (JSON.stringify writes `version` first): anything else is not tried
_START = re.compile(rb'\s*\{\s*"(?:version|lastProcessedSeq|nodes|edges|lastRecallResult)"\s*:')


def read_graph_file(data: bytes | bytearray | mmap.mmap) -> ImportedGraph | None:
    """The ST-BME graph in a file's bytes, or None: read them the ordinary way.

    A read-only map of the file has its pages dropped from the process as they are read.
    """
    if not _START.match(data[:256]):
        return None
    cut = cut_vectors(data, release=True)
    if cut is None and data.find(_LIST) >= 0:  # lists that could not be cut: the ordinary way
        return None
    found = read_graph_document(cut.head if cut is not None else data)
    if found is None:
        return None
    graph, values = found
    if cut is not None:
        cut.head = b""  # the text is decoded: its memory goes back now
        if not attach_cut_vectors(graph, graph.nodes, values, cut):
            return None
    elif not all(v is None or v == [] for v in values):
        return None
    return ImportedGraph(graph, KIND_STBME)
