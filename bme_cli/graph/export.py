"""ST-BME's export format (spec §1.6): 2-space JSON in ST-BME's key order, a trailing newline.

The text is exactly what `json.dumps(doc, indent=2, ensure_ascii=False)` writes after
whole floats became ints (as JavaScript's JSON.stringify writes 5.0: `5`); orjson writes
it when it would write the same bytes (it writes floats between 1e-10 and 1e-4 otherwise),
which is nearly always, and 3x faster. `reference_export` is the stdlib's text, for tests.

With embeddings, vectors are written as float lists (each float32 exactly, floats as they
are) and the model tag goes in a top-level `bmeEmbeddingModel` key that ST-BME ignores (it
keeps unknown keys and nulls vectors on import anyway), so another bme can keep the
vectors. The vectors are formatted apart, a few thousand rows per orjson call, and put in
the place of each node's `"embedding": null`.
"""
from __future__ import annotations

import math
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
import orjson

from .jsonio import SCALARS, dumps_checked, dumps_pretty, no_gc
from .model import EDGE_KEYS, NODE_KEYS, Graph, Node
from .v3 import graph_dict

EXPORT_MODEL_KEY = "bmeEmbeddingModel"
BME_PREFIX = "bme"  # bme's own keys in nodes, edges and the graph (see docs/graph-format.md)
_NODE_COLUMNS = [k for _, k in NODE_KEYS]
_EDGE_COLUMNS = [k for _, k in EDGE_KEYS]
_NODES_OPEN, _ROWS_CLOSE = '\n  "nodes": [\n', "\n  ]"
_EMBEDDING = '\n      "embedding": '   # a node's own key: node keys sit 6 spaces deep
_CHUNK = 4096                           # vectors formatted per orjson call
_MATRIX_OPEN, _MATRIX_CLOSE = "[\n  [\n    [\n      [", "]\n    ]\n  ]\n]"


class _JsNumbers:
    """Whole floats -> ints on copies of values; notes any float orjson would write differently."""

    def __init__(self) -> None:
        self.exact = True

    def value(self, v: Any) -> Any:
        """`v` with every whole float (below 1e21, as JavaScript) written as an int."""
        t = type(v)
        if t is float:
            if v.is_integer() and abs(v) < 1e21:
                return int(v)
            if not 1e-4 <= abs(v) < math.inf:  # orjson writes 1e-5 as 0.00001; NaN fails this too
                self.exact = False
            return v
        if t is dict:
            return {k: self.value(x) for k, x in v.items()}
        if t is list:
            return [self.value(x) for x in v]
        return v

    def rows(self, rows: list[dict], keys: list[str]) -> None:
        """`value` over fresh node/edge dicts in place, skipping known keys that hold no float."""
        for key in keys:
            if not _plain(list(map(itemgetter(key), rows))):
                for r in rows:
                    r[key] = self.value(r[key])
        size = len(keys)
        for r in rows:
            if len(r) > size:  # history and unknown keys, after the known ones
                for key in list(r)[size:]:
                    r[key] = self.value(r[key])


def _plain(values: list) -> bool:
    """No float in these values, looking one container deep (anything deeper is walked)."""
    kinds = set(map(type, values))
    if kinds <= SCALARS:
        return True
    if not kinds <= SCALARS | {list, dict}:
        return False
    inner = chain.from_iterable(v.values() if type(v) is dict else v for v in values
                                if type(v) is list or type(v) is dict)
    return set(map(type, inner)) <= SCALARS


def _vector_texts(nodes: list[Node]) -> dict[int, tuple[str, ...]]:
    """Each vector as json.dumps(indent=2) writes it in a node, in pieces, by position in `nodes`."""
    out: dict[int, tuple[str, ...]] = {}
    by_dim: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        if n.embedding is None:
            continue
        v = np.asarray(n.embedding, dtype=np.float32)
        if v.ndim == 1 and v.size:
            by_dim.setdefault(v.size, []).append(i)
        else:  # odd shapes, written the slow way
            out[i] = (dumps_checked(v.tolist(), indent=2).replace("\n", "\n      "),)
    for positions in by_dim.values():
        for start in range(0, len(positions), _CHUNK):
            chunk = positions[start:start + _CHUNK]
            rows = _matrix_rows(np.stack([np.asarray(nodes[i].embedding, np.float32) for i in chunk]))
            out.update((i, ("[", row, "]")) for i, row in zip(chunk, rows))
    return out


def _matrix_rows(matrix: np.ndarray) -> list[str]:
    """Each row's inside, as json.dumps(indent=2) writes a vector 6 spaces deep in a node.

    orjson writes float64s exactly as repr does, except tiny ones (1e-5 as 0.00001): those
    go in as NaN, come out as `null`, and are replaced by their repr.
    """
    values = matrix.astype(np.float64)
    if not np.isfinite(values).all():
        bad = values[~np.isfinite(values).all(axis=1)][0]
        dumps_checked(bad.tolist())  # raises GraphFormatError, as the stdlib always did
    tiny = (np.abs(values) < 1e-4) & (values != 0)
    fixes = list(map(repr, values[tiny].tolist()))  # row by row, in the order they are written
    ends = np.cumsum(tiny.sum(axis=1)).tolist()
    values[tiny] = np.nan
    # wrapped twice, the rows sit 6 spaces deep and their numbers 8, as in a node
    text = orjson.dumps([[values]], option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_INDENT_2).decode("ascii")
    rows = text.split("],\n      [")
    rows[0] = rows[0][len(_MATRIX_OPEN):]
    rows[-1] = rows[-1][:-len(_MATRIX_CLOSE)]
    for r in np.flatnonzero(tiny.any(axis=1)).tolist():
        parts = rows[r].split("null")
        mine = fixes[ends[r] - len(parts) + 1:ends[r]]
        rows[r] = "".join([p for pair in zip(parts, mine) for p in pair] + [parts[-1]])
    return rows


def _splice_vectors(text: str, nodes: list[Node]) -> list[str] | None:
    """The text in pieces, each vector where its node's `"embedding": null` is.

    None if the text is not laid out as expected (an unknown key shadowing "embedding").
    """
    start = text.find(_NODES_OPEN)
    end = text.find(_ROWS_CLOSE, start)
    if start < 0 or end < 0:
        return None
    parts = text[start:end].split(_EMBEDDING + "null")
    if len(parts) != len(nodes) + 1:
        return None
    vectors = _vector_texts(nodes)
    pieces = [text[:start], parts[0]]
    for i, part in enumerate(parts[1:]):
        pieces.append(_EMBEDDING)
        pieces.extend(vectors.get(i, ("null",)))
        pieces.append(part)
    pieces.append(text[end:])
    return pieces


def _document(graph: Graph, js: _JsNumbers, with_embeddings: bool) -> dict[str, Any]:
    with no_gc():
        doc = graph_dict(graph)
        doc.pop(EXPORT_MODEL_KEY, None)
        if with_embeddings:
            doc[EXPORT_MODEL_KEY] = graph.meta.embedding_model
        else:
            _drop_bme_keys(doc)
        js.rows(doc["nodes"], _NODE_COLUMNS)
        js.rows(doc["edges"], _EDGE_COLUMNS)
        for key in doc:
            if key not in ("nodes", "edges"):
                doc[key] = js.value(doc[key])
    return doc


def _drop_bme_keys(doc: dict[str, Any]) -> None:
    """Remove bme's own bookkeeping keys (`bme...`) so the export has exactly ST-BME's fields.

    Only the plain export does this: `--with-embeddings` is for moves between bme installs
    and keeps everything.
    """
    for rows, size in ((doc["nodes"], len(_NODE_COLUMNS)), (doc["edges"], len(_EDGE_COLUMNS))):
        for row in rows:
            if len(row) > size:  # known keys come first; only rows with extra keys can hold ours
                for key in [k for k in row if k.startswith(BME_PREFIX)]:
                    del row[key]
    for key in [k for k in doc if k.startswith(BME_PREFIX)]:
        del doc[key]


def _inline_export(graph: Graph, with_embeddings: bool, *, fast: bool) -> str:
    """Vectors inline in the document, one dump: the reference the fast path must equal."""
    js = _JsNumbers()
    doc = _document(graph, js, with_embeddings)
    if with_embeddings:
        for n, d in zip(graph.nodes, doc["nodes"]):
            if n.embedding is not None:
                vector = np.asarray(n.embedding, dtype=np.float32).tolist()
                js.exact = js.exact and _orjson_writes_exactly(vector)
                d["embedding"] = vector  # floats as they are: 1.0 stays 1.0, as bme always wrote
    return dumps_pretty(doc, exact=fast and js.exact) + "\n"


def _orjson_writes_exactly(values: Any) -> bool:
    array = np.asarray(values, dtype=np.float64)
    return bool(np.isfinite(array).all() and not ((np.abs(array) < 1e-4) & (array != 0)).any())


def reference_export(graph: Graph, with_embeddings: bool = False) -> str:
    """The export as the json module alone writes it (tests compare export_document to it)."""
    return _inline_export(graph, with_embeddings, fast=False)


def export_document(graph: Graph, with_embeddings: bool = False) -> str:
    """ST-BME's export: 2-space JSON in ST-BME's key order, embeddings null, trailing newline.

    With `with_embeddings`, vectors are written as float lists (each float32 exactly) and
    the model tag goes in a top-level `bmeEmbeddingModel` key that ST-BME ignores.
    """
    js = _JsNumbers()
    text = dumps_pretty(_document(graph, js, with_embeddings), exact=js.exact)
    if not (with_embeddings and any(n.embedding is not None for n in graph.nodes)):
        return text + "\n"
    with no_gc():  # ~100k row strings: GC passes over a big heap would dominate
        pieces = _splice_vectors(text, graph.nodes)
    if pieces is None:
        return _inline_export(graph, True, fast=True)
    del text
    pieces.append("\n")
    return "".join(pieces)
