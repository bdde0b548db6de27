"""`bme import`'s direct reader (`graph.direct`) and the streamed sidecar writer must be invisible.

For any document the direct reader either declines (None: the file is then read the ordinary
way) or gives exactly the graph the ordinary reader gives: the same kind, model tag and
sidecar bytes. Through `read_document` the outcome, error included, is the ordinary one's.
The streamed writer writes the bytes `encode_sidecar` gives. A few tests check that the
shortcut is really taken where it should be, so that a reader which always declined fails.
"""
from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from bme_cli.errors import BmeError
from bme_cli.graph import direct, inline, sidecar, store
from bme_cli.graph.codec import KIND_STBME, graph_from_any
from bme_cli.graph.model import Graph
from bme_cli.graph.sidecar import encode_sidecar, stream_sidecar
from test_fuzz_graph import ST_BME_EXPORT, _dumps, _graph, json_values, mutated_documents

NOW = 1_700_000_000_000
SOURCE = "graph.json"
FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


def _sidecar_bytes(graph: Graph) -> bytes:
    graph.meta.embedding_model = "m"  # as `bme import --embedding-model m` keeps the vectors
    graph.meta.embedding_dim = next((len(n.embedding) for n in graph.nodes if n.embedding is not None), None)
    return b"".join(bytes(c) for c in encode_sidecar(graph))


def _outcome(read: Any) -> tuple:
    try:
        imported = read()
    except BmeError as e:
        return ("error", type(e).__name__, str(e), e.hint)
    try:
        written = _sidecar_bytes(imported.graph)
    except BmeError as e:  # vectors of two sizes: the sidecar refuses them, the same both ways
        written = ("unwritable", str(e))
    return ("graph", imported.kind, imported.embedding_model, written)


def _ordinary(data: bytes) -> tuple:
    return _outcome(lambda: graph_from_any(data, SOURCE, NOW))


def _direct_agrees(data: bytes) -> bool:
    """True when the direct reader took `data`; either way it never disagrees with the ordinary reader."""
    taken = direct.read_graph_file(data)
    if taken is not None:
        assert _outcome(lambda: taken) == _ordinary(data)
    return taken is not None


def _st_bme(nodes: int = 4, dim: int = 5, seed: int = 3) -> dict:
    """An ST-BME graph laid out as ST-BME writes one, with a vector on every node."""
    rng = np.random.default_rng(seed)
    doc = copy.deepcopy(ST_BME_EXPORT)
    template = doc["nodes"][0]
    doc["nodes"] = [{**copy.deepcopy(template), "id": f"n{i}", "seq": i,
                     "embedding": [round(float(x), 5) for x in rng.normal(0, 0.05, dim)]} for i in range(nodes)]
    doc["edges"] = [{**doc["edges"][0], "id": f"e{i}", "fromId": f"n{i}", "toId": f"n{i + 1}"}
                    for i in range(nodes - 1)]
    return doc


def _compact(doc: Any) -> bytes:
    return _utf8(json.dumps(doc, ensure_ascii=False, separators=(",", ":")))


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, as ST-BME can write one
        return text.encode("utf-8", "surrogatepass")


# -- taken, and the same --------------------------------------------------------------------------
@pytest.mark.parametrize("dumps", [_compact, orjson.dumps, lambda d: json.dumps(d, indent=2).encode(),
                                   lambda d: json.dumps(d).encode()])
def test_an_st_bme_graph_in_any_layout_is_read_directly_and_gives_the_same_sidecar(dumps):
    assert _direct_agrees(dumps(_st_bme()))


def test_the_direct_reader_gives_the_same_nodes_edges_and_vectors_as_the_ordinary_one():
    data = _compact(_st_bme(nodes=6, dim=3))
    fast, slow = direct.read_graph_file(data), graph_from_any(data, SOURCE, NOW)
    assert fast.kind == slow.kind == KIND_STBME and fast.embedding_model is None
    for a, b in zip(fast.graph.nodes, slow.graph.nodes, strict=True):
        assert a.to_v3() == b.to_v3() and a.embedding.dtype == np.float32
        assert np.array_equal(a.embedding.view(np.uint32), b.embedding.view(np.uint32))
    assert [e.to_v3() for e in fast.graph.edges] == [e.to_v3() for e in slow.graph.edges]
    assert fast.graph.last_processed_seq == slow.graph.last_processed_seq


@pytest.mark.parametrize("text", [
    "plain", "林风来到青云山", "emoji \U0001F600 and é", "quote \" and backslash \\ and slash /",
    "controls \n\t\r\b\f \u0001 \u001f", "line sep \u2028 \u2029 nel \x85", "]}[{,:", '"embedding":[1,2]',
])
@pytest.mark.parametrize("ascii_only", [False, True])
def test_strings_with_unicode_and_escapes_read_the_same(text, ascii_only):
    doc = _st_bme()
    doc["nodes"][1]["fields"] = {"summary": text, text: [text, {"k": text}]}
    doc["edges"][0]["relation"] = text
    assert _direct_agrees(json.dumps(doc, ensure_ascii=ascii_only).encode())


def test_numbers_in_every_spelling_give_bit_identical_rows():
    rng = random.Random(5)
    texts = ["0", "-0", "-0.0", "0.0", "1", "-1", "1E5", "1e+5", "2.5e-3", "-1.0E-10", "5e-05", "123456789",
             "1.401298464324817e-45", "7e-46", "9007199254740991", "-9007199254740991", "0." + "1" * 40,
             "1" + "0" * 20 + "e-20", "1e-400", "-1e-400"]
    texts += [repr(rng.uniform(-1, 1) * 10 ** rng.randint(-45, 15)) for _ in range(200)]
    texts += [f"{rng.uniform(-1, 1):.17e}" for _ in range(40)] + [f"{rng.uniform(-1, 1):.25f}" for _ in range(20)]
    assert _direct_agrees(_with_vectors(texts))
    # beyond 2**53 an integer and a float of it may round differently: declined, and read the same
    assert not _direct_agrees(_with_vectors(texts[:-4] + ["3.4028234e38", "-3.4028234e38", "1e20", "1e300"]))


def _with_vectors(texts: list[str]) -> bytes:
    """An ST-BME graph of four nodes whose vectors are these number texts, as written."""
    texts = texts[: len(texts) // 4 * 4]
    doc = _st_bme(nodes=4, dim=len(texts) // 4)
    data = _compact(doc)
    for i, node in enumerate(doc["nodes"]):
        data = data.replace(_compact(node["embedding"]), ("[" + ",".join(texts[i::4]) + "]").encode(), 1)
    return data


def test_nodes_without_vectors_null_or_empty_are_read_directly():
    doc = _st_bme()
    doc["nodes"][0]["embedding"], doc["nodes"][2]["embedding"] = None, []
    assert _direct_agrees(_compact(doc))
    doc = _st_bme()
    for node in doc["nodes"]:
        node["embedding"] = None
    assert _direct_agrees(_compact(doc))


def test_keys_bme_itself_adds_to_nodes_and_edges_are_kept_in_their_order():
    doc = _st_bme()
    doc["nodes"][1].update({"bmeUser": True, "bmeHistory": [{"a": 1}], "_evolutionHistory": [{"at": 1}]})
    doc["nodes"][2] = {"bmeAuto": {"x": [1, 2]}, **doc["nodes"][2], "bmeSeed": 7}
    doc["edges"][0]["bmeSeq"] = 4
    assert _direct_agrees(_compact(doc))


def test_large_and_integral_numbers_outside_the_vectors_read_as_the_stdlib_reads_them():
    doc = _st_bme()
    doc["nodes"][0]["fields"] = {"big": 2 ** 70, "neg": -2 ** 64, "f": 1e300, "tiny": 5e-324, "int": 3}
    doc["nodes"][1]["importance"] = 7  # JavaScript writes 7.0 as 7
    doc["edges"][0]["strength"] = 1
    assert _direct_agrees(_compact(doc))


# -- declined, and read the ordinary way -------------------------------------------------------------
def _mutate(doc: dict, where: str, key: str, value: Any) -> dict:
    doc = copy.deepcopy(doc)
    item = doc if where == "top" else doc[where][1]
    if value is KeyError:
        del item[key]
    else:
        item[key] = value
    return doc


@pytest.mark.parametrize("where,key,value", [
    ("nodes", "level", KeyError), ("nodes", "seqRange", None), ("nodes", "importance", "5"),
    ("nodes", "unknown", 1), ("nodes", "id", ""), ("nodes", "id", "n0"), ("nodes", "seq", 2 ** 60),
    ("nodes", "fields", [1]), ("nodes", "childIds", [1]), ("nodes", "embedding", "text"),
    ("nodes", "embedding", {"a": 1}), ("nodes", "embedding", [[1, 2, 3, 4, 5]]),
    ("edges", "toId", "missing"), ("edges", "toId", "n1"), ("edges", "relation", ""), ("edges", "id", "e0"),
    ("edges", "strength", None), ("edges", "createdTime", 1.5), ("edges", "x", [1]),
    ("top", "version", 2), ("top", "version", 4), ("top", "extra", {"kept": True}), ("top", "lastProcessedSeq", "x"),
    ("top", "lastRecallResult", ["n0"]), ("top", "lastRecallResult", [1]), ("top", "nodes", {}),
])
def test_anything_unusual_is_declined_or_read_the_same(where, key, value, tmp_path, monkeypatch):
    data = _compact(_mutate(_st_bme(), where, key, value))
    _direct_agrees(data)
    assert _via_read_document(data, tmp_path, monkeypatch) == _ordinary(data)


@pytest.mark.parametrize("vector", [
    "[1,\"2\",3,4,5]", "[1,null,3,4,5]", "[1,true,3,4,5]", "[1e999,0,0,0,0]", "[1e39,0,0,0,0]",
    "[NaN,0,0,0,0]", "[1,2,3,4]", "[1,2,3,4,5,6]", "[ ]", "[18446744073709551616,0,0,0,0]",
    "[9007199254740993,0,0,0,0]", "[1,2,3,4,5", "[01,2,3,4,5]", "[.5,2,3,4,5]",
])
def test_odd_vectors_are_declined_and_read_the_same(vector, tmp_path, monkeypatch):
    doc = _st_bme()
    base = _compact(doc)
    data = base.replace(_compact(doc["nodes"][2]["embedding"]), vector.encode(), 1)
    assert data != base
    assert not _direct_agrees(data)
    assert _via_read_document(data, tmp_path, monkeypatch) == _ordinary(data)


@pytest.mark.parametrize("data", [
    json.dumps({"format": "bme-sidecar", "formatVersion": 1, "graph": ST_BME_EXPORT, "bme": {}}).encode(),
    json.dumps({"chat_metadata": {"st_bme_graph": ST_BME_EXPORT}}).encode(),
    b"\xef\xbb\xbf" + _compact(ST_BME_EXPORT), _compact(ST_BME_EXPORT) + b"\n{}", b"[]", b"",
    _compact({**ST_BME_EXPORT, "bmeEmbeddingModel": "m"}),
])
def test_other_documents_are_not_read_directly(data):
    assert direct.read_graph_file(data) is None


# -- through read_document, on a file ----------------------------------------------------------------
def _via_read_document(data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple:
    """read_document's outcome with the direct reader tried at any size and its buffers as for a big file."""
    monkeypatch.setattr(store, "TYPED_FROM_BYTES", 0)
    monkeypatch.setattr(inline, "_BIG", 0)
    monkeypatch.setattr(inline, "_DROP_EVERY", 0)
    path = tmp_path / "graph.json"
    path.write_bytes(data)
    out = _outcome(lambda: store.read_document(path, NOW))
    if out[0] == "error":  # the message names the file: name it as the in-memory reads do
        out = (*out[:2], out[2].replace(str(path), SOURCE), out[3])
    return out


def test_read_document_takes_the_direct_reader_and_drops_the_pages_it_read(tmp_path, monkeypatch):
    taken = []
    monkeypatch.setattr(direct, "attach_cut_vectors", lambda *a: taken.append(1) or inline.attach_cut_vectors(*a))
    dropped = []
    real = inline._Dropper.__call__
    monkeypatch.setattr(inline._Dropper, "__call__", lambda self, offset: dropped.append(offset) or real(self, offset))
    data = _compact(_st_bme(nodes=600, dim=64))
    assert _via_read_document(data, tmp_path, monkeypatch) == _ordinary(data)
    assert taken and len(dropped) >= 2


def test_a_pipe_is_read_by_the_direct_reader_too(tmp_path, monkeypatch):
    import os
    data = _compact(_st_bme())
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    import threading
    writer = threading.Thread(target=lambda: fifo.write_bytes(data))
    writer.start()
    monkeypatch.setattr(store, "TYPED_FROM_BYTES", 0)
    imported = store.read_document(fifo, NOW)
    writer.join()
    assert _outcome(lambda: imported) == _ordinary(data)


@FUZZ
@given(doc=mutated_documents(), compact=st.booleans())
@example(doc=_st_bme(), compact=True)
def test_any_mutated_document_reads_the_same_directly_or_not(doc, compact, tmp_path_factory):
    _direct_agrees(_compact(doc) if compact else _utf8(_dumps(doc)))


@st.composite
def _vector_documents(draw) -> bytes:
    """An ST-BME graph with vectors, one value anywhere in it changed or removed."""
    doc = _st_bme(nodes=3, dim=3, seed=draw(st.integers(0, 9)))
    item = draw(st.sampled_from([doc, *doc["nodes"], *doc["edges"], *(n["fields"] for n in doc["nodes"])]))
    key = draw(st.sampled_from(sorted(item)))
    if draw(st.booleans()):
        item[key] = draw(json_values | st.lists(st.floats(allow_nan=False, width=32), min_size=3, max_size=3))
    else:
        del item[key]
    return _compact(doc)


@FUZZ
@given(data=_vector_documents())
def test_any_changed_graph_with_vectors_reads_the_same_directly_or_not(data):
    _direct_agrees(data)


# -- the sidecar, streamed -----------------------------------------------------------------------------
def _streamed(graph: Graph) -> bytes | None:
    stream = stream_sidecar(graph)
    return None if stream is None else b"".join(bytes(c) for c in stream)


@pytest.mark.parametrize("piece", [1, 2, 4096])
def test_the_streamed_sidecar_is_byte_for_byte_encode_sidecars(piece, monkeypatch):
    monkeypatch.setattr(sidecar, "_PIECE", piece)
    monkeypatch.setattr(sidecar, "_B64_PIECE", 3 * piece)
    for graph in (_graph(), _graph(dim=None), Graph(), direct.read_graph_file(_compact(_st_bme(nodes=9))).graph):
        graph.meta.extra["note"] = {"nodes": "[]", "x": [1.5, None]}
        assert _streamed(graph) == b"".join(bytes(c) for c in encode_sidecar(graph))


def test_a_value_only_the_stdlib_writes_is_not_streamed_and_saves_as_before(tmp_path):
    graph = _graph()
    graph.nodes[1].fields["odd"] = "lone \ud800 surrogate"  # orjson refuses it halfway through
    stream = stream_sidecar(graph)
    assert stream is not None
    with pytest.raises(sidecar.Unstreamable):
        b"".join(bytes(c) for c in stream)
    store.save_graph(tmp_path / "g.bme.json", graph)
    assert (tmp_path / "g.bme.json").read_bytes() == b"".join(bytes(c) for c in encode_sidecar(graph))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    graph.nodes[0].importance = 2.0 ** 70  # a float the whole-document writer vouches for
    graph.nodes[0].fields["nan"] = float("nan")
    assert stream_sidecar(graph) is None


def test_changed_embeddings_are_written_from_the_nodes_not_the_matrix_they_came_from():
    graph = direct.read_graph_file(_compact(_st_bme(nodes=5, dim=3))).graph
    matrix, _ = graph.vector_block
    assert sidecar._vector_matrix(graph)[1] is matrix or np.shares_memory(sidecar._vector_matrix(graph)[1], matrix)
    graph.nodes[1].embedding = np.array([9, 9, 9], dtype=np.float32)
    graph.nodes[3], graph.nodes[4] = graph.nodes[4], graph.nodes[3]
    ids, written = sidecar._vector_matrix(graph)
    assert ids == [n.id for n in graph.nodes]
    assert np.array_equal(written, np.stack([n.embedding for n in graph.nodes]))
    assert not np.shares_memory(written, matrix)
