"""The import shortcut of `graph.inline`: embedding lists cut from the bytes and parsed at once.

It must be invisible: for any document, reading its bytes with the shortcut gives the same
kind, model tag and sidecar bytes as reading them without it, or the same error in the
same words. Each test compares the two paths; a few also check that the shortcut was
really taken (or really refused) where it should be.
"""
from __future__ import annotations

import json
import random
import sys
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from bme_cli.errors import BmeError
from bme_cli.graph import codec, inline
from bme_cli.graph.codec import export_document, graph_from_any
from bme_cli.graph.sidecar import encode_sidecar
from test_fuzz_graph import BME_EXPORT, ST_BME_EXPORT, _dumps, _graph, _paths, json_values, mutated_documents

NOW = 1_700_000_000_000
SOURCE = "graph.json"


@contextmanager
def _without_shortcut() -> Iterator[None]:
    saved = codec.cut_vectors
    codec.cut_vectors = lambda data: None
    try:
        yield
    finally:
        codec.cut_vectors = saved


def _outcome(data: bytes) -> tuple:
    """What reading `data` gives: the error, or the kind, model tag and sidecar bytes."""
    try:
        imported = graph_from_any(data, SOURCE, NOW)
        return ("graph", imported.kind, imported.embedding_model,
                b"".join(bytes(c) for c in encode_sidecar(imported.graph)))
    except BmeError as e:
        return ("error", type(e).__name__, str(e), e.hint)


def _same_both_ways(data: bytes) -> tuple:
    fast = _outcome(data)
    with _without_shortcut():
        slow = _outcome(data)
    assert fast == slow
    return fast


def _taken(data: bytes) -> bool:
    return codec._with_cut_vectors(data, SOURCE, NOW) is not None


def _doc(vectors: list, **node_extra: Any) -> dict:
    doc = json.loads(json.dumps(ST_BME_EXPORT))
    for node, v in zip(doc["nodes"], vectors):
        node["embedding"] = v
        node.update(node_extra)
    return doc


def _bytes(doc: Any, **kw: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, **kw).encode("utf-8")


# -- taken, and the same --------------------------------------------------------------------------
@pytest.mark.parametrize("layout", [{}, {"separators": (",", ":")}, {"indent": 2}])
@pytest.mark.parametrize("doc", [BME_EXPORT, json.loads(export_document(_graph(), with_embeddings=True))])
def test_exports_compact_spaced_or_pretty_take_the_shortcut_and_give_the_same_sidecar(doc, layout):
    data = _bytes(doc, **layout)
    assert _taken(data)
    out = _same_both_ways(data)
    assert out[0] == "graph" and out[2] == "hash-4"


def test_a_synthetic_st_bme_graph_takes_the_shortcut_and_gives_the_same_sidecar():
    rng = np.random.default_rng(7)
    vectors = [[round(float(x), 5) for x in rng.normal(0, 0.05, 384)] for _ in range(3)]
    vectors[1][:4] = [0, 1, -1, 1e-7]  # integers and an exponent, as JavaScript writes them
    data = orjson.dumps(_doc(vectors))
    assert _taken(data)
    assert _same_both_ways(data)[0] == "graph"


def test_numbers_in_every_spelling_give_bit_identical_float32_rows():
    rng = random.Random(12)
    values = [rng.uniform(-1, 1) for _ in range(300)] + [rng.uniform(-1, 1) * 10 ** rng.randint(-45, 15)
                                                         for _ in range(300)]
    texts = [repr(v) for v in values] + [f"{v:.17e}" for v in values[:100]] + [f"{v:.25f}" for v in values[:50]]
    texts += ["0", "-0", "-0.0", "0.0", "1E5", "1e+5", "2.5e-3", "-1.0E-10", "123456789",
              "1.401298464324817e-45", "7e-46", "1" + "0" * 20 + "e-20", "0." + "1" * 40, "9007199254740991"]
    texts = texts[: len(texts) // 3 * 3]
    rows = [texts[i::3] for i in range(3)]
    data = ('{"version":3,"nodes":[' + ",".join(
        f'{{"id":"n{i}","type":"event","embedding":[{",".join(r)}]}}' for i, r in enumerate(rows))
        + '],"edges":[]}').encode()
    assert _taken(data)
    assert _same_both_ways(data)[0] == "graph"


def test_nodes_without_vectors_and_empty_lists_stay_without():
    data = _bytes(_doc([[0.5, 0.25], None, []]))
    assert _taken(data)
    imported = graph_from_any(data, SOURCE, NOW)
    assert [n.embedding is None for n in imported.graph.nodes] == [False, True, True]
    _same_both_ways(data)


# -- refused, and the same ------------------------------------------------------------------------
@pytest.mark.parametrize("vector", [
    "[1, \"2\"]", "[1, null]", "[1, true]", "[01]", "[1.]", "[.5]", "[+1]", "[1e999]", "[NaN]", "[Infinity]",
    "[1,,2]", "[1,2,]", "[[1, 2]]", "[ ]", "[18446744073709551616, 1]", "[9007199254740993, 1]", "[1e39]", "[1e20, 1]", "[3.4028235e38]",
    "[1, 2", "[1e-400, 2]", "[-0, 0.5]",
])
def test_odd_lists_read_as_before_with_the_same_result_or_error(vector):
    base = _bytes(_doc([[0.5, 0.25]] * 3), separators=(",", ":"))
    data = base.replace(b'"embedding":[0.5,0.25]', b'"embedding":' + vector.encode(), 1)
    assert data != base
    _same_both_ways(data)


def test_lists_of_two_sizes_read_as_before():
    data = _bytes(_doc([[0.5, 0.25], [1.5], [2.5, 0.5]]))
    assert not _taken(data)
    _same_both_ways(data)  # the sidecar refuses two sizes: the same StoreError both ways


def test_an_embedding_key_elsewhere_is_not_taken_for_a_nodes_vector():
    doc = _doc([None, [0.5, 0.25], None])
    doc["nodes"][0]["fields"]["embedding"] = [1, 2]  # a list inside fields, under the same key
    data = _bytes(doc)
    assert not _taken(data)
    assert _same_both_ways(data)[0] == "graph"


def test_a_node_embedding_that_is_not_a_list_is_still_refused():
    doc = _doc(["not a vector", None, None])
    doc["nodes"][1]["fields"]["embedding"] = [0.5, 0.25]
    out = _same_both_ways(_bytes(doc))
    assert out[0] == "error" and "embedding must be a list of numbers or null" in out[2]


@pytest.mark.parametrize("doc", [
    {"chat_metadata": {"st_bme_graph": BME_EXPORT}},
    {"st_bme_graph": ST_BME_EXPORT},
    {"format": "bme-sidecar", "formatVersion": 1, "graph": ST_BME_EXPORT, "bme": {}},
    {**BME_EXPORT, "version": 2},
    {**BME_EXPORT, "version": 9},
    {**BME_EXPORT, "nodes": BME_EXPORT["nodes"] + BME_EXPORT["nodes"][:1]},
])
def test_other_documents_with_vectors_read_as_before(doc):
    _same_both_ways(_bytes(doc))


def test_without_simdjson_the_document_is_read_the_ordinary_way(monkeypatch):
    data = _bytes(BME_EXPORT)
    monkeypatch.setitem(sys.modules, "simdjson", None)
    assert not _taken(data)
    assert _same_both_ways(data)[0] == "graph"


def test_the_placeholder_is_new_for_every_read():
    data = _bytes(BME_EXPORT)
    first, second = inline.cut_vectors(data), inline.cut_vectors(data)
    assert first.mark != second.mark and first.mark.encode() in first.head
    assert first.matrix.dtype == np.float32 and first.matrix.shape == (3, 4)


@st.composite
def _with_vectors_mutated(draw) -> Any:
    """A graph whose nodes carry vectors (an export, or ST-BME's layout) with one value changed."""
    doc = json.loads(json.dumps(draw(st.sampled_from([BME_EXPORT, _doc([[0.5, -1, 2e-7], [0, 1.5, 3], None])]))))
    path = draw(st.sampled_from([p for p in _paths(doc) if p]))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if draw(st.booleans()):
        parent[path[-1]] = draw(json_values)
    else:
        del parent[path[-1]]
    return doc


def _encoded(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, as ST-BME can write one
        return text.encode("utf-8", "surrogatepass")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(doc=_with_vectors_mutated() | mutated_documents(), compact=st.booleans())
@example(doc={**BME_EXPORT, "nodes": [{**BME_EXPORT["nodes"][0], "embedding": "x"}, BME_EXPORT["nodes"][1]]},
         compact=True)
def test_any_mutated_document_reads_the_same_with_and_without_the_shortcut(doc, compact):
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) if compact else _dumps(doc)
    _same_both_ways(_encoded(text))
