"""A sidecar read through msgspec's typed records (graph.v3_typed) is the graph the ordinary
path reads: every field of every node and edge, its meta and vectors, and the bytes it saves
back. What the typed path does not take (an unknown key, a missing one, another type, an
integer beyond 2**53, text msgspec refuses) is read, or refused in the same words, by the
ordinary orjson path, which these tests run beside it on the same bytes.
"""
from __future__ import annotations

import copy
import json
import sys
from typing import Any

import pytest
from hypothesis import given, strategies as st

pytest.importorskip("msgspec")

from fakes import NOW  # noqa: E402
from bme_cli.errors import BmeError  # noqa: E402
from bme_cli.graph import sidecar, store, v3_typed  # noqa: E402
from bme_cli.graph.model import EDGE_KEYS, NODE_KEYS, Graph  # noqa: E402
from bme_cli.graph.ops import add_edge  # noqa: E402
from test_fuzz_graph import FUZZ, _graph, _paths, json_values  # noqa: E402

SOURCE = "chat.bme.json"
NODE_ATTRS = [a for a, _ in NODE_KEYS if a != "embedding"] + ["evolution_history", "extra"]
EDGE_ATTRS = [a for a, _ in EDGE_KEYS] + ["extra"]


@pytest.fixture(autouse=True)
def typed_for_every_size(monkeypatch):
    """Small test sidecars take the typed path too (it normally starts at 2 MiB of JSON)."""
    monkeypatch.setattr(sidecar, "TYPED_FROM_BYTES", 0)


def _rich_graph() -> Graph:
    """A graph with a value of every kind a sidecar holds."""
    g = _graph(dim=4)
    a, b, c = g.nodes
    a.evolution_history = [{"at": NOW, "note": "merged", "score": 0.5, "from": ["n9"]}]
    b.evolution_history = []
    a.fields.update({"age": 31, "alive": True, "aliases": ["M", {"deep": [1, 2.5, None]}], "note": None})
    b.parent_id, a.child_ids, a.clusters = a.id, [b.id], ["c1", "c2"]
    c.archived, c.importance, c.access_count, c.last_access_time = True, 7.25, 3, NOW + 9
    e = add_edge(g, a.id, c.id, "located_at", 1.0, NOW, new_id=lambda: "e-late").edge
    e.invalid_at, e.expired_at = NOW + 5, NOW + 6
    # bme's own extra keys, in the order each node was given them (written back in that order)
    a.extra = {"bmeUser": {"pinned": True, "edited": False}, "bmeHistory": [{"seq": 2, "fields": {"state": "ok"}}],
               "bmeBaseImportance": 5}
    b.extra = {"bmeBaseImportance": 4.5, "bmeUser": {"pinned": False}}
    c.extra = {"bmeSeed": "lorebook"}
    g.edges[0].extra, g.edges[1].extra = {"bmeSeq": 4}, {"bmeSeq": None}
    g.last_recall_result = [a.id, c.id]
    g.meta.extra = {"upkeepDue": {"compress": 2}, "userDeleted": [{"type": "event", "name": "x"}]}
    return g


def _sidecar_doc(graph: Graph) -> dict[str, Any]:
    return json.loads(b"".join(bytes(c) for c in sidecar.encode_sidecar(graph)))


def _bytes(doc: Any, ascii_only: bool = True) -> bytes:
    """Compact JSON as bme lays a sidecar out (NaN and lone surrogates written as they come)."""
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=ascii_only, allow_nan=True)
    return text.encode("utf-8", "surrogatepass")


def _canon(value: Any) -> str:
    """A value with its types showing (1, 1.0 and true differ), order kept."""
    return json.dumps(value, ensure_ascii=True, allow_nan=True)


def _state(graph: Graph) -> Any:
    """Everything a loaded graph holds, comparable with ==."""
    nodes = [(type(n).__name__, [(a, type(getattr(n, a)).__name__, _canon(getattr(n, a))) for a in NODE_ATTRS],
              None if n.embedding is None else (n.embedding.dtype.str, n.embedding.shape, n.embedding.tobytes()))
             for n in graph.nodes]
    edges = [(type(e).__name__, [(a, type(getattr(e, a)).__name__, _canon(getattr(e, a))) for a in EDGE_ATTRS])
             for e in graph.edges]
    m = graph.meta
    return (nodes, edges, graph.last_processed_seq, _canon(graph.last_recall_result), graph.version,
            _canon(graph.extra), m.embedding_model, m.embedding_dim, m.extraction_count,
            sorted(m.fingerprints.items()), _canon(m.extra))


def _outcome(data: bytes, monkeypatch, typed: bool) -> Any:
    """What reading the sidecar bytes gives: the graph's state, or the error bme reports."""
    with monkeypatch.context() as m:
        if not typed:
            m.setattr(sidecar, "_typed_graph_and_block", lambda head, source: None)
        try:
            graph = store._read_sidecar(bytearray(data), SOURCE, NOW)
        except BmeError as e:
            return ("error", type(e).__name__, e.message, e.hint)
    return ("graph", _state(graph))


def _typed_takes(data: bytes) -> bool:
    """Whether the typed path reads these bytes itself (rather than leaving them to orjson)."""
    cut = sidecar._split(data)
    return cut is not None and sidecar._typed_graph_and_block(data[:cut[0]] + b'"}}}', SOURCE) is not None


def test_a_sidecar_bme_wrote_is_read_by_the_typed_path_as_the_ordinary_path_reads_it(monkeypatch):
    data = _bytes(_sidecar_doc(_rich_graph()))
    assert _typed_takes(data)
    typed = _outcome(data, monkeypatch, typed=True)
    assert typed[0] == "graph" and typed == _outcome(data, monkeypatch, typed=False)
    assert typed == ("graph", _state(_rich_graph()))


def test_a_sidecar_loaded_by_the_typed_path_saves_back_byte_for_byte(tmp_path, monkeypatch):
    path = tmp_path / "chat.bme.json"
    store.save_graph(path, _rich_graph())
    written = path.read_bytes()
    calls: list[bool] = []
    real = v3_typed.read_sidecar_head
    monkeypatch.setattr(v3_typed, "read_sidecar_head", lambda *a: calls.append(True) or real(*a))
    loaded = store.load_graph(path, NOW)
    assert calls and loaded is not None
    assert b"".join(bytes(c) for c in sidecar.encode_sidecar(loaded)) == written
    store.save_graph(path, loaded)
    assert path.read_bytes() == written


def _set(doc: dict, path: tuple, value: Any) -> None:
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if value is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


_DELETE = object()
N0, E0 = ("graph", "nodes", 0), ("graph", "edges", 0)
DEEP = _nested(600)  # deeper than a graph value may nest (jsonio.MAX_NESTING), and msgspec reads it
# (where, what) -> whether the typed path reads it itself; either way it must read as orjson does
VARIANTS: list[tuple[tuple, Any, bool]] = [
    (N0 + ("importance",), 5, True),                # JavaScript writes 5.0 as 5
    (N0 + ("importance",), -(2 ** 53), True),
    (N0 + ("importance",), 2 ** 53 + 1, False),     # beyond 2**53: the checked path's float()
    (N0 + ("importance",), 10 ** 30, False),
    (N0 + ("importance",), True, False),
    (N0 + ("importance",), "5", False),
    (E0 + ("strength",), 1, True),
    (E0 + ("strength",), 2 ** 60, False),
    (N0 + ("seq",), 2.0, False),                    # an integral float: the checked path takes it
    (N0 + ("level",), 2 ** 53 + 1, False),
    (N0 + ("createdTime",), -(2 ** 53) - 1, False),
    (N0 + ("seqRange",), [2 ** 70, -(2 ** 70)], True),  # exact, as the stdlib re-read gives it
    (N0 + ("seqRange",), [1, 2, 3], False),
    (N0 + ("seqRange",), [1.0, 2], False),
    (N0 + ("fields",), {"big": 2 ** 70, "f": 1e300, "neg": -0.0, "s": "\u00e9\U0001f600"}, True),
    (N0 + ("fields",), {"lone": "\ud800"}, False),  # orjson and msgspec refuse it; the stdlib reads it
    (N0 + ("fields",), {"deep": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}, True),
    (N0 + ("fields",), [], False),
    (N0 + ("_evolutionHistory",), None, True),
    (N0 + ("_evolutionHistory",), [], True),
    (N0 + ("_evolutionHistory",), [1.5, {"a": [2 ** 70]}], True),
    (N0 + ("_evolutionHistory",), "x", False),
    (N0 + ("_evolutionHistory",), [DEEP], False),
    (N0 + ("fields",), {"deep": DEEP}, False),
    (("bme", "upkeepDue"), DEEP, False),
    (N0 + ("onLoad",), {"x": 1}, False),            # unknown keys are kept as extras
    (E0 + ("note",), "x", False),
    (N0 + ("bmeUser",), None, True),
    (N0 + ("bmeForgotten",), {"at": 1, "retention": 0.25}, True),
    (N0 + ("bmeForgotten",), [DEEP], False),
    (N0 + ("bmeUser",), _DELETE, True),
    (E0 + ("bmeSeq",), 2 ** 70, True),
    (E0 + ("bmeSeq",), [DEEP], False),
    (E0 + ("bmeSeq",), _DELETE, True),
    (("graph", "edges", 2, "bmeSeq"), {"seq": [1.5]}, True),
    (("graph", "pluginState"), {"a": 1}, False),
    (("bme", "upkeepDue"), {"b": [2 ** 70, 0.1]}, True),
    (("extraTop",), 1, False),
    (N0 + ("level",), _DELETE, False),             # missing: ST-BME's defaults
    (E0 + ("validAt",), _DELETE, False),
    (E0 + ("invalidAt",), _DELETE, False),
    (N0 + ("_evolutionHistory",), _DELETE, True),
    (N0 + ("embedding",), [], False),
    (N0 + ("embedding",), [0.5, 0.25, 1.0, 2.0], False),
    (N0 + ("parentId",), 5, False),
    (N0 + ("archived",), 0, False),
    (N0 + ("id",), "", False),
    (N0 + ("type",), "", False),
    (E0 + ("relation",), "", False),
    (E0 + ("toId",), "missing", False),
    (E0 + ("toId",), "n1", False),                  # edge 0 runs n1 -> n0: now a self-loop
    (("graph", "nodes", 1, "id"), "n0", False),     # a duplicate node id
    (("graph", "edges", 1, "id"), "n3", False),     # a duplicate edge id
    (("graph", "version"), 2, False),               # migrated
    (("graph", "version"), 3.0, False),
    (("graph", "version"), 4, False),               # refused: a newer ST-BME
    (("graph", "lastProcessedSeq"), 6.0, True),
    (("graph", "lastProcessedSeq"), None, True),
    (("graph", "lastProcessedSeq"), _DELETE, True),
    (("graph", "lastProcessedSeq"), "6", False),
    (("graph", "lastRecallResult"), None, True),
    (("graph", "lastRecallResult"), _DELETE, True),
    (("graph", "lastRecallResult"), [1], False),
    (("formatVersion",), 2, False),                 # a newer bme: refused, the file left alone
    (("formatVersion",), 1.0, False),
    (("format",), "other", False),
    (("bme", "extractionCount"), -1, False),
    (("bme", "embedding", "count"), 99, False),
]


@pytest.mark.parametrize("where,value,typed", VARIANTS, ids=[f"{'.'.join(map(str, w[1:]))}={v!r:.20}"
                                                            for w, v, _ in VARIANTS])
def test_a_changed_value_reads_as_the_ordinary_path_reads_it(where, value, typed, monkeypatch):
    doc = _sidecar_doc(_rich_graph())
    assert doc["graph"]["edges"][0]["fromId"] == "n1" and doc["graph"]["edges"][1]["id"] == "n4"
    _set(doc, where, value)
    if where == ("extraTop",):  # then move bme back to the end, as the layout wants
        doc["bme"] = doc.pop("bme")
    data = _bytes(doc)
    assert _typed_takes(data) is typed
    assert _outcome(data, monkeypatch, typed=True) == _outcome(data, monkeypatch, typed=False)


@pytest.mark.parametrize("text", [
    b'"id":"n0","id":"n0"',                 # a key twice: the last one counts, in both
    b'"importance":5.0,"importance":1e999',  # a number beyond a double
    b'"importance":5.0e0',
    b'"fields":{"name":"Mira","name":"M\xc3\xa9"',
    b'"fields":{"name":"\xff"',            # not UTF-8
    b'"fields":{"name":"\\ud83d\\ude00"',
    b'"fields":{"name":"\\ude00\\ud83d"',  # a reversed surrogate pair: only the stdlib reads it
    b'"fields":{"name":' + b"[" * 600 + b"]" * 600,  # deeper than a graph value may nest
    b'"bmeUser":{"pinned":false},"bmeUser":{"pinned":true}',  # the last value, in the first place
    b'"bmeUser":{"pinned":true,"edited":false}',
    b'"bmeSeed":"x","bmeUser":{"pinned":true,"edited":false},"bmeSeed":"y"',
    b'"bmeUser":{"pinned":false},"bmeSeq":3',   # an edge's key on a node: not one bme writes there
    b'"bmeUser":{"pinned":false},"bmeHistory":NaN',
    b'"bmeSeq":4,"bmeSeq":5',
    b'"bmeSeq":4,"bmeHistory":[]',
    b'"bmeSeq":1e999',
])
def test_text_only_some_parsers_take_reads_as_the_ordinary_path_reads_it(text, monkeypatch):
    data = _bytes(_sidecar_doc(_rich_graph()))
    anchor = {b'"id"': b'"id":"n0"', b'"importance"': b'"importance":5.0', b'"fields"': b'"fields":{"name":"Mira"',
              b'"bmeUser"': b'"bmeUser":{"pinned":false}', b'"bmeSeq"': b'"bmeSeq":4',
              b'"bmeSeed"': b'"bmeUser":{"pinned":true,"edited":false}'}
    old = next(v for k, v in anchor.items() if text.startswith(k))
    assert old in data
    data = data.replace(old, text, 1)
    assert _outcome(data, monkeypatch, typed=True) == _outcome(data, monkeypatch, typed=False)


@pytest.mark.parametrize("block", [
    b'{"x":1,"embedding":{},"x":{"vectors":"AAAAAA=="}}',  # a key twice: `embedding` ends up last
    b'{"embedding":{"vectors":"","ids":[]},"embedding":{"vectors":"AAAAAA=="}}',
    b'{"extractionCount":1,"embedding":{"ids":["n0"],"count":1,"dimension":1,"vectors":"AAAAAA=="}}',
])
def test_a_bme_block_laid_out_otherwise_reads_as_the_ordinary_path_reads_it(block, monkeypatch):
    data = _bytes(_sidecar_doc(_rich_graph()))
    data = data[:data.index(b',"bme":{') + 7] + block + b"}"
    assert _outcome(data, monkeypatch, typed=True) == _outcome(data, monkeypatch, typed=False)


def test_extra_keys_come_back_in_the_order_the_file_has_them(monkeypatch):
    doc = _sidecar_doc(_rich_graph())
    a = doc["graph"]["nodes"][0]
    assert list(a)[-3:] == ["bmeUser", "bmeHistory", "bmeBaseImportance"]
    a["bmeUser"] = a.pop("bmeUser")  # now last
    data = _bytes(doc)
    assert _typed_takes(data)
    typed = _outcome(data, monkeypatch, typed=True)
    assert typed == _outcome(data, monkeypatch, typed=False)
    assert [name for name, _, _ in typed[1][0][0][1] if name == "extra"] == ["extra"]
    extra = json.loads(dict((n, v) for n, _, v in typed[1][0][0][1])["extra"])
    assert list(extra) == ["bmeHistory", "bmeBaseImportance", "bmeUser"]


def test_the_extra_keys_read_typed_are_the_ones_bme_writes():
    from bme_cli.memory import apply, compress, edits, index, seed, sleep
    from bme_cli.graph.ops import UPDATE_EVENT_KEY
    written = {apply.HISTORY_KEY, apply.DELETED_KEY, edits.USER_KEY, sleep.FORGOTTEN_KEY, seed.SEED_KEY,
               index.BASE_IMPORTANCE_KEY, UPDATE_EVENT_KEY, compress.EXPIRED_EDGES_KEY}
    assert written == set(v3_typed.NODE_EXTRAS) and v3_typed.EDGE_EXTRA == apply.EDGE_SEQ_KEY


def test_without_msgspec_the_sidecar_is_read_the_ordinary_way(tmp_path, monkeypatch):
    path = tmp_path / "chat.bme.json"
    store.save_graph(path, _rich_graph())
    monkeypatch.setitem(sys.modules, "msgspec", None)
    monkeypatch.delitem(sys.modules, "bme_cli.graph.v3_typed")
    assert _state(store.load_graph(path, NOW)) == _state(_rich_graph())


def test_a_small_sidecar_is_read_without_importing_msgspec(tmp_path, monkeypatch):
    monkeypatch.setattr(sidecar, "TYPED_FROM_BYTES", 2 << 20)
    path = tmp_path / "chat.bme.json"
    store.save_graph(path, _rich_graph())
    def never(*args: Any) -> None:
        raise AssertionError("a small sidecar went through msgspec")

    monkeypatch.setattr(v3_typed, "read_sidecar_head", never)
    assert _state(store.load_graph(path, NOW)) == _state(_rich_graph())


# -- any change, anywhere ------------------------------------------------------------------------
_EDGE_VALUES = st.sampled_from([0, 1, -1, 5, 5.0, 2 ** 53, 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 64, 10 ** 30, True,
                                False, None, "", "n0", "n1", "n2", [], [1, 2], [1, 2, 3], {}, {"a": 1}, 0.5,
                                1e300, -0.0, float("nan")])
_NEW_KEYS = st.sampled_from(["_evolutionHistory", "zz", "id", "embedding", "extra", "vectors", "history", "bmeUser",
                            "bmeSeq", "bmeHistory"])


@st.composite
def changed_sidecars(draw) -> bytes:
    """A rich sidecar with one to three values replaced, removed, duplicated or added."""
    doc = copy.deepcopy(_RICH_DOC)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from([p for p in _paths(doc) if p]))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key, action = path[-1], draw(st.sampled_from(["replace", "remove", "duplicate", "add"]))
        # a copy: _EDGE_VALUES hands out the same [] and {} every time, and a later step may
        # add to one placed in the document (hypothesis then sees the strategy change under it)
        value = copy.deepcopy(draw(_EDGE_VALUES | json_values))
        if action == "replace":
            parent[key] = value
        elif action == "remove":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        elif isinstance(parent, dict):
            parent[draw(_NEW_KEYS)] = value
    if isinstance(doc, dict) and "bme" in doc:
        doc["bme"] = doc.pop("bme")  # keep the vectors last, where bme writes them
    return _bytes(doc, ascii_only=draw(st.booleans()))


_RICH_DOC = _sidecar_doc(_rich_graph())


@FUZZ
@given(data=changed_sidecars())
def test_any_changed_sidecar_reads_as_the_ordinary_path_reads_it(data, monkeypatch):
    assert _outcome(data, monkeypatch, typed=True) == _outcome(data, monkeypatch, typed=False)
