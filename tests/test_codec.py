"""Graph documents: migration (spec §1.5), validation, detection, and ST-BME's export (§1.6)."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from bme_cli.errors import GraphFormatError
from bme_cli.graph.codec import (EXPORT_MODEL_KEY, KIND_BME_EXPORT, KIND_CHAT, KIND_METADATA,
                                 KIND_SIDECAR, KIND_STBME, KIND_UNKNOWN, detect_document,
                                 edge_dict, export_document, graph_from_any,
                                 graph_from_v3_document, migrate_v3, node_dict, parse_json)
from bme_cli.graph.export import reference_export
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_edge, add_node, invalidate_edge, make_node

NOW = 1_700_000_000_000
SRC = "export.json"
ST_BME_NODE_KEYS = ["id", "type", "level", "parentId", "childIds", "seq", "seqRange", "archived",
                    "fields", "embedding", "importance", "accessCount", "lastAccessTime",
                    "createdTime", "prevId", "nextId", "clusters"]
ST_BME_EDGE_KEYS = ["id", "fromId", "toId", "relation", "strength", "edgeType", "createdTime",
                    "validAt", "invalidAt", "expiredAt"]


def v3_node(node_id: str, **kw) -> dict:
    node = {"id": node_id, "type": "event", "level": 0, "parentId": None, "childIds": [], "seq": 3,
            "seqRange": [3, 3], "archived": False, "fields": {"summary": f"about {node_id}"},
            "embedding": None, "importance": 5.5, "accessCount": 0, "lastAccessTime": NOW,
            "createdTime": NOW, "prevId": None, "nextId": None, "clusters": []}
    node.update(kw)
    return node


def v3_edge(edge_id: str, src: str, dst: str, **kw) -> dict:
    edge = {"id": edge_id, "fromId": src, "toId": dst, "relation": "related", "strength": 0.8,
            "edgeType": 0, "createdTime": NOW, "validAt": NOW, "invalidAt": None, "expiredAt": None}
    edge.update(kw)
    return edge


def v3_doc(**kw) -> dict:
    doc = {"version": 3, "lastProcessedSeq": 7, "nodes": [v3_node("a"), v3_node("b")],
           "edges": [v3_edge("e1", "a", "b")], "lastRecallResult": None}
    doc.update(kw)
    return doc


def rich_graph() -> Graph:
    counter = iter(range(1, 100))
    new_id = lambda: f"id-{next(counter)}"  # noqa: E731
    g = Graph(last_processed_seq=12, last_recall_result=["id-1"])
    a = add_node(g, make_node("event", {"summary": "雨夜里的约定", "participants": "Ann, Bo"}, 4, NOW,
                              importance=7.25, new_id=new_id))
    b = add_node(g, make_node("character", {"name": "Ann", "state": "tired\nbut \"fine\""}, 4, NOW,
                              new_id=new_id, clusters=["hero"]))
    c = add_node(g, make_node("event", {"summary": "later", "odd": "\udc80 lone"}, 9, NOW + 5,
                              seq_range=[5, 9], new_id=new_id))
    c.evolution_history = [{"triggeredBy": a.id, "timestamp": NOW, "reason": "merged"}]
    c.extra = {"customKey": {"nested": [1, 2.5, None]}}
    b.archived = True
    add_edge(g, a.id, b.id, "involved_in", 0.9, NOW, new_id=new_id)
    e = add_edge(g, b.id, c.id, "updates", 0.35, NOW, new_id=new_id).edge
    invalidate_edge(e, NOW + 10)
    add_edge(g, a.id, c.id, "contradicts", 1.0, NOW, new_id=new_id).edge.extra = {"note": "x"}
    g.extra = {"futureTopLevel": True}
    return g


def with_vectors(g: Graph, dim: int = 8, seed: int = 3) -> Graph:
    rng = np.random.default_rng(seed)
    for n in g.nodes:
        n.embedding = rng.standard_normal(dim).astype(np.float32)
    g.nodes[0].embedding[:3] = [1e-30, 3.3e38, -0.0]
    g.meta.embedding_model = "text-embedding-3-small"
    g.meta.embedding_dim = dim
    return g


# -- migration -------------------------------------------------------------------------
def test_migrate_v1_fills_edge_times_seq_ranges_and_last_processed_seq():
    v1 = {"version": 1, "nodes": [{"id": "a", "type": "event", "seq": 4, "createdTime": 50},
                                  {"id": "b", "type": "event"}],
          "edges": [{"id": "e", "fromId": "a", "toId": "b", "createdTime": 70},
                    {"id": "f", "fromId": "b", "toId": "a", "createdTime": 0}]}
    before = copy.deepcopy(v1)
    out = migrate_v3(v1, now=NOW)
    assert v1 == before  # worked on a copy
    assert out["version"] == 3 and out["lastProcessedSeq"] == -1 and out["lastRecallResult"] is None
    assert [n["seqRange"] for n in out["nodes"]] == [[4, 4], [0, 0]]
    assert out["nodes"][0]["lastAccessTime"] == 50 and out["nodes"][1]["lastAccessTime"] == NOW
    e, f = out["edges"]
    assert (e["validAt"], e["invalidAt"], e["expiredAt"]) == (70, None, None)
    assert f["validAt"] == NOW  # createdTime 0 is falsy: `createdTime || now`
    assert out["nodes"][0]["childIds"] == [] and out["nodes"][0]["clusters"] == []


def test_migrate_v2_keeps_edge_history_and_adds_seq_ranges():
    v2 = {"version": 2, "lastProcessedSeq": 9,
          "nodes": [{"id": "a", "type": "event", "seq": 2}, {"id": "b", "type": "rule", "seq": 5,
                                                             "seqRange": [1, 5]}],
          "edges": [{"id": "e", "fromId": "a", "toId": "b", "createdTime": 1, "validAt": 2,
                     "invalidAt": 3, "expiredAt": None}]}
    out = migrate_v3(v2, now=NOW)
    assert out["version"] == 3 and out["lastProcessedSeq"] == 9
    assert [n["seqRange"] for n in out["nodes"]] == [[2, 2], [1, 5]]
    assert out["edges"][0]["validAt"] == 2 and out["edges"][0]["invalidAt"] == 3


def test_migrate_leaves_wrongly_typed_values_for_the_validator():
    out = migrate_v3({"version": 2, "lastProcessedSeq": "x", "nodes": [], "edges": []}, now=NOW)
    assert out["lastProcessedSeq"] == "x"
    with pytest.raises(GraphFormatError, match="lastProcessedSeq must be an integer"):
        graph_from_v3_document({"version": 2, "lastProcessedSeq": "x", "nodes": [], "edges": []},
                               SRC, NOW)


def test_v1_document_becomes_a_v3_graph_with_st_bme_defaults():
    v1 = {"version": 1, "nodes": [{"id": "a", "type": "event", "fields": {"summary": "s"}, "seq": 3}],
          "edges": []}
    g = graph_from_v3_document(v1, SRC, NOW)
    n = g.nodes[0]
    assert g.version == 3 and g.last_processed_seq == -1 and g.last_recall_result is None
    assert (n.level, n.parent_id, n.child_ids, n.seq_range, n.archived) == (0, None, [], [3, 3], False)
    assert (n.importance, n.access_count, n.created_time, n.last_access_time) == (5.0, 0, NOW, NOW)
    assert n.embedding is None and n.clusters == [] and n.extra == {}


def test_missing_optional_values_get_defaults_and_nulls_count_as_missing():
    doc = v3_doc(nodes=[{"id": "a", "type": "rule", "level": None, "fields": None, "importance": None}],
                 edges=[], lastProcessedSeq=None)
    g = graph_from_v3_document(doc, SRC, NOW)
    n = g.nodes[0]
    assert (n.level, n.fields, n.importance, n.seq, n.seq_range) == (0, {}, 5.0, 0, [0, 0])
    assert g.last_processed_seq == -1


def test_edge_defaults_follow_normalisation():
    doc = v3_doc(edges=[{"id": "e", "fromId": "a", "toId": "b", "createdTime": 40}])
    e = graph_from_v3_document(doc, SRC, NOW).edges[0]
    assert (e.relation, e.strength, e.edge_type, e.created_time, e.valid_at) == ("related", 0.8, 0, 40, 40)
    assert e.invalid_at is None and e.expired_at is None


def test_unknown_keys_are_kept_in_place_after_the_known_ones():
    doc = v3_doc(nodes=[v3_node("a", zeta=1, alpha={"x": [1]}), v3_node("b")],
                 edges=[v3_edge("e1", "a", "b", weight=2)], extraTop="keep")
    g = graph_from_v3_document(doc, SRC, NOW)
    assert g.nodes[0].extra == {"zeta": 1, "alpha": {"x": [1]}} and g.edges[0].extra == {"weight": 2}
    out = json.loads(export_document(g))
    assert list(out["nodes"][0])[-2:] == ["zeta", "alpha"] and out["edges"][0]["weight"] == 2
    assert list(out)[-1] == "extraTop" and out["extraTop"] == "keep"


def test_complete_and_partial_nodes_build_the_same_graph():
    full = v3_doc(nodes=[v3_node("a", importance=6.5), v3_node("b")])
    extra = copy.deepcopy(full)
    for n in extra["nodes"]:
        n["marker"] = 1  # forces the checked path for every node
    for e in extra["edges"]:
        e["marker"] = 1
    a, b = graph_from_v3_document(full, SRC, NOW), graph_from_v3_document(extra, SRC, NOW)
    strip = [{k: v for k, v in d.items() if k != "marker"} for d in json.loads(export_document(b))["nodes"]]
    assert strip == json.loads(export_document(a))["nodes"]


# -- validation ---------------------------------------------------------------------------
def _set(path: str, value):
    def mutate(doc: dict) -> None:
        *parents, last = path.split(".")
        target = doc
        for p in parents:
            target = target[int(p)] if p.isdigit() else target[p]
        if value is _DELETE:
            del target[int(last) if last.isdigit() else last]
        elif last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value
    return mutate


_DELETE = object()
BAD_DOCUMENTS = [
    (_set("nodes.1.id", _DELETE), "export.json: node #1 has no 'id'"),
    (_set("nodes.0.id", 42), "export.json: node #0 'id' must be a non-empty string (found 42)"),
    (_set("nodes.0.type", _DELETE), "export.json: node 'a' has no 'type'"),
    (_set("nodes.1.id", "a"), "node id 'a' appears twice (nodes #0 and #1)"),
    (_set("nodes.0.seq", "x"), "node 'a': seq must be an integer (found \"x\")"),
    (_set("nodes.0.seq", 1.5), "node 'a': seq must be an integer"),
    (_set("nodes.0.seq", 10 ** 20), "node 'a': seq must be an integer"),
    (_set("nodes.0.seqRange", [1]), "node 'a': seqRange must be two integers"),
    (_set("nodes.0.seqRange", "1-3"), "node 'a': seqRange must be two integers"),
    (_set("nodes.0.importance", "high"), "node 'a': importance must be a finite number"),
    (_set("nodes.0.importance", True), "node 'a': importance must be a finite number"),
    (_set("nodes.0.importance", float("nan")), "node 'a': importance must be a finite number"),
    (_set("nodes.0.fields", ["x"]), "node 'a': fields must be an object"),
    (_set("nodes.0.archived", "yes"), "node 'a': archived must be true or false"),
    (_set("nodes.0.childIds", [1]), "node 'a': childIds must be a list of strings"),
    (_set("nodes.0.parentId", 5), "node 'a': parentId must be a string or null"),
    (_set("nodes.0.embedding", "abc"), "node 'a': embedding must be a list of numbers or null"),
    (_set("nodes.0.embedding", [1, "x"]), "node 'a': embedding must hold finite float32 numbers"),
    (_set("nodes.0.embedding", [1e39, 0.0]), "node 'a': embedding must hold finite float32 numbers"),
    (_set("nodes.0._evolutionHistory", "x"), "node 'a': _evolutionHistory must be a list"),
    (_set("nodes.1", "b"), "node #1 is not an object"),
    (_set("edges.0.toId", "zz"), "export.json: edge 'e1' points to missing node 'zz'"),
    (_set("edges.0.toId", "a"), "edge 'e1' links node 'a' to itself"),
    (_set("edges.0.id", _DELETE), "edge #0 has no 'id'"),
    (_set("edges.0.fromId", _DELETE), "edge 'e1' has no 'fromId'"),
    (_set("edges.0.strength", "strong"), "edge 'e1': strength must be a finite number"),
    (_set("edges.0.invalidAt", "yesterday"), "edge 'e1': invalidAt must be an integer"),
    (_set("edges.0.relation", 3), "edge 'e1': relation must be a string"),
    (lambda d: d["edges"].append(v3_edge("e1", "b", "a")), "edge id 'e1' appears twice"),
    (_set("nodes", {"a": 1}), "'nodes' must be a list"),
    (_set("edges", _DELETE), "'edges' must be a list"),
    (_set("version", _DELETE), "has no 'version'"),
    (_set("version", "3"), "'version' must be an integer"),
    (_set("lastRecallResult", "a"), "lastRecallResult must be a list of strings"),
    (_set("lastProcessedSeq", 1e300), "lastProcessedSeq must be an integer"),
]


@pytest.mark.parametrize("mutate,expected", BAD_DOCUMENTS, ids=[e for _, e in BAD_DOCUMENTS])
def test_bad_document_is_refused_with_one_line_naming_source_and_problem(mutate, expected):
    doc = v3_doc()
    mutate(doc)
    with pytest.raises(GraphFormatError) as info:
        graph_from_v3_document(doc, SRC, NOW)
    message = info.value.message
    assert expected in message and message.startswith(f"{SRC}: ") and "\n" not in message


def test_top_level_that_is_not_an_object_is_refused():
    with pytest.raises(GraphFormatError, match="a graph must be a JSON object"):
        graph_from_v3_document([1, 2], SRC, NOW)


def test_error_messages_stay_on_one_printable_line_for_hostile_ids():
    doc = v3_doc(edges=[v3_edge("e\n1\ud800", "a", "x" * 500)])
    with pytest.raises(GraphFormatError) as info:
        graph_from_v3_document(doc, SRC, NOW)
    message = info.value.message
    assert "\n" not in message and len(message) < 200 and message.encode("utf-8")
    assert "edge 'e\\n1\\ud800' points to missing node 'xxxx" in message


def test_version_4_is_refused_as_written_by_newer_software():
    with pytest.raises(GraphFormatError, match=r"graph version 4 was written by a newer ST-BME/bme"):
        graph_from_v3_document(v3_doc(version=4), SRC, NOW)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999", "-1E+400"])
@pytest.mark.parametrize("where", ['"importance": 5.5', '"summary": "about a"', '"lastRecallResult": null',
                                   '"strength": 0.8'])
def test_nan_infinity_and_overflowing_numbers_are_refused_anywhere(token, where):
    doc = v3_doc(nodes=[v3_node("a", extraKey=1), v3_node("b")], edges=[v3_edge("e1", "a", "b", note=1)])
    text = json.dumps(doc).replace(where, f"{where.split(':')[0]}: {token}", 1)
    with pytest.raises(GraphFormatError) as info:
        graph_from_any(text, SRC, NOW)
    assert info.value.message.startswith(f"{SRC}: ") and "\n" not in info.value.message


@pytest.mark.parametrize("mutate", [
    _set("nodes.0.fields.deep", {"x": [1, float("inf")]}), _set("nodes.0.extraKey", float("nan")),
    _set("edges.0.weight", [float("-inf")]), _set("topExtra", {"n": float("nan")}),
    _set("nodes.0._evolutionHistory", [{"score": float("inf")}]),
])
def test_non_finite_numbers_nested_in_free_form_values_are_refused(mutate):
    doc = v3_doc()
    mutate(doc)
    with pytest.raises(GraphFormatError, match="NaN or an infinite number|must be a list of JSON values"):
        graph_from_v3_document(doc, SRC, NOW)


def test_invalid_json_reports_line_and_column():
    with pytest.raises(GraphFormatError, match=r"export.json: not valid JSON \(.* at line 2 column \d+\)"):
        graph_from_any('{"version": 3,\n "nodes": [,]}', SRC, NOW)


def test_bytes_that_are_not_utf8_are_refused():
    with pytest.raises(GraphFormatError, match="not UTF-8"):
        graph_from_any(b'{"version": 3, "x": "\xff"}', SRC, NOW)


def test_deeply_nested_json_is_refused_without_a_crash():
    with pytest.raises(GraphFormatError, match="nested too deeply|not valid JSON"):
        graph_from_any("[" * 200_000 + "]" * 200_000, SRC, NOW)


# -- detection and import ------------------------------------------------------------------
def test_detect_document_kinds():
    assert detect_document(v3_doc()) == KIND_STBME
    assert detect_document({**v3_doc(), EXPORT_MODEL_KEY: "m"}) == KIND_BME_EXPORT
    assert detect_document({"format": "bme-sidecar", "formatVersion": 1}) == KIND_SIDECAR
    assert detect_document({"user_name": "u", "chat_metadata": {}}) == KIND_CHAT
    assert detect_document({"st_bme_graph": v3_doc()}) == KIND_METADATA
    assert detect_document({"mes": "hi"}) == KIND_UNKNOWN and detect_document([1]) == KIND_UNKNOWN


def _chat_text(graph_value, second_line: str = '{"name": "Ann", "is_user": true, "mes": "hi"}') -> str:
    header = {"user_name": "unused", "character_name": "unused",
              "chat_metadata": {"integrity": "x", "st_bme_graph": graph_value}}
    return json.dumps(header, ensure_ascii=False) + "\n" + second_line


def test_chat_file_graph_is_read_from_the_header_line_only():
    doc = v3_doc(nodes=[v3_node("a", embedding=[0.5, 0.25]), v3_node("b", embedding=[1, 2, 3])])
    imported = graph_from_any(_chat_text(doc, "this line is not JSON at all {"), "chat.jsonl", NOW)
    assert imported.kind == KIND_CHAT and imported.embedding_model is None
    assert [n.id for n in imported.graph.nodes] == ["a", "b"] and imported.graph.last_processed_seq == 7
    assert imported.graph.nodes[0].embedding.dtype == np.float32  # untagged sizes may differ
    assert imported.drop_embeddings_unless("any-model") == 2
    assert all(n.embedding is None for n in imported.graph.nodes)


def test_chat_header_graph_stored_as_a_json_string_is_accepted():
    imported = graph_from_any(_chat_text(json.dumps(v3_doc())), "chat.jsonl", NOW)
    assert len(imported.graph.nodes) == 2


def test_chat_without_a_graph_says_so():
    text = json.dumps({"user_name": "u", "chat_metadata": {"integrity": "x"}}) + "\n{}"
    with pytest.raises(GraphFormatError, match=r"chat.jsonl: the chat header has no chat_metadata.st_bme_graph"):
        graph_from_any(text, "chat.jsonl", NOW)


def test_bad_graph_in_chat_header_names_where_it_is():
    with pytest.raises(GraphFormatError, match=r"chat.jsonl \(chat_metadata.st_bme_graph\): node #0 has no 'id'"):
        graph_from_any(_chat_text(v3_doc(nodes=[{"type": "event"}], edges=[])), "chat.jsonl", NOW)


def test_headerless_group_chat_is_recognised():
    text = '{"name": "Ann", "is_user": false, "mes": "hi"}\n{"name": "Bo", "is_user": true, "mes": "yo"}'
    with pytest.raises(GraphFormatError, match="SillyTavern chat without a header line"):
        graph_from_any(text, "group.jsonl", NOW)


def test_unknown_json_document_is_refused_with_what_was_found():
    with pytest.raises(GraphFormatError, match=r"x.json: not an ST-BME graph, a bme sidecar or a SillyTavern chat \(keys \"a\""):
        graph_from_any('{"a": 1}', "x.json", NOW)


def test_bme_export_with_mixed_embedding_sizes_is_refused():
    doc = {**v3_doc(nodes=[v3_node("a", embedding=[0.5]), v3_node("b", embedding=[1.0, 2.0])]),
           EXPORT_MODEL_KEY: "m"}
    with pytest.raises(GraphFormatError, match=r"embeddings of different sizes \(1, 2\)"):
        graph_from_any(doc, SRC, NOW)


# -- export -------------------------------------------------------------------------------
EXPECTED_EXPORT = """{
  "version": 3,
  "lastProcessedSeq": 2,
  "nodes": [
    {
      "id": "n1",
      "type": "character",
      "level": 0,
      "parentId": null,
      "childIds": [],
      "seq": 2,
      "seqRange": [
        1,
        2
      ],
      "archived": false,
      "fields": {
        "name": "李雷"
      },
      "embedding": null,
      "importance": 5,
      "accessCount": 0,
      "lastAccessTime": 1700000000000,
      "createdTime": 1700000000000,
      "prevId": null,
      "nextId": null,
      "clusters": []
    }
  ],
  "edges": [],
  "lastRecallResult": null
}
"""


def test_export_is_st_bme_layout_exactly():
    g = Graph(last_processed_seq=2)
    n = add_node(g, make_node("character", {"name": "李雷"}, 2, NOW, seq_range=[1, 2], new_id=lambda: "n1"))
    n.embedding = np.ones(4, dtype=np.float32)
    assert export_document(g) == EXPECTED_EXPORT


def test_fast_writers_match_the_model_serialisation_key_for_key():
    g = with_vectors(rich_graph())
    for n in g.nodes:
        assert list(node_dict(n).items()) == list(n.to_v3(with_embedding=False).items())
    for e in g.edges:
        assert list(edge_dict(e).items()) == list(e.to_v3().items())


def test_export_keys_follow_st_bme_order_and_embeddings_are_null():
    out = json.loads(export_document(with_vectors(rich_graph())))
    assert list(out)[:5] == ["version", "lastProcessedSeq", "nodes", "edges", "lastRecallResult"]
    assert EXPORT_MODEL_KEY not in out
    for node in out["nodes"]:
        assert list(node)[:17] == ST_BME_NODE_KEYS and node["embedding"] is None
    for edge in out["edges"]:
        assert list(edge)[:10] == ST_BME_EDGE_KEYS
    assert out["edges"][2]["edgeType"] == 255 and out["edges"][2]["strength"] == 1


def test_export_import_export_is_byte_identical():
    first = export_document(rich_graph())
    imported = graph_from_any(first, SRC, NOW)
    assert imported.kind == KIND_STBME
    assert export_document(imported.graph) == first
    assert "\\udc80" in first  # a lone surrogate is escaped as JavaScript does, not a crash


def test_export_with_embeddings_round_trips_exact_float32_and_the_model_tag():
    g = with_vectors(rich_graph())
    first = export_document(g, with_embeddings=True)
    imported = graph_from_any(first, SRC, NOW)
    assert imported.kind == KIND_BME_EXPORT and imported.embedding_model == "text-embedding-3-small"
    assert imported.graph.meta.embedding_dim == 8 and EXPORT_MODEL_KEY not in imported.graph.extra
    for a, b in zip(g.nodes, imported.graph.nodes):
        assert b.embedding.dtype == np.float32 and a.embedding.tobytes() == b.embedding.tobytes()
    assert export_document(imported.graph, with_embeddings=True) == first
    assert export_document(imported.graph) == export_document(g)
    assert imported.drop_embeddings_unless("text-embedding-3-small") == 0


def test_embeddings_from_another_model_are_dropped_on_request():
    imported = graph_from_any(export_document(with_vectors(rich_graph()), True), SRC, NOW)
    assert imported.drop_embeddings_unless("other-model") == 3
    assert imported.graph.meta.embedding_model is None


def test_st_bme_integers_stay_integers_on_export():
    doc = v3_doc(nodes=[v3_node("a", importance=5), v3_node("b", importance=7.5)],
                 edges=[v3_edge("e1", "a", "b", strength=1)])
    out = export_document(graph_from_v3_document(doc, SRC, NOW))
    assert '"importance": 5,' in out and '"importance": 7.5,' in out and '"strength": 1,' in out


def test_export_of_a_nan_field_fails_instead_of_writing_invalid_json():
    g = rich_graph()
    g.nodes[0].fields["score"] = float("nan")
    with pytest.raises(GraphFormatError, match="JSON cannot store"):
        export_document(g)


# -- orjson and the stdlib agree ------------------------------------------------------------
def odd_values_graph(stdlib_only: bool) -> Graph:
    """A graph with values orjson writes like the json module, or (stdlib_only) ones it cannot."""
    g = with_vectors(rich_graph())
    a, b, c = g.nodes
    c.fields["odd"] = "no lone surrogate"
    a.fields.update({"huge": 1.5e300, "negzero": -0.0, "whole": 3.0, "line": "a\u2028b\x85c\x7f\x1f\x00",
                     "nested": {"x": [0.25, 2.0]}})
    b.extra = {"bmeScore": 0.125}
    g.edges[0].extra = {"bmeWeight": 1.0}
    b.embedding[:4] = [1.0, -0.0, 0.0, 7e-5]  # whole, signed zero, tiny: vectors keep their floats
    if stdlib_only:
        c.fields["odd"] = "\udc80 lone"
        a.fields.update({"tiny": 1e-05, "tinier": 2.5e-07, "big": 2 ** 70 + 1, "keys": {1: "x"}})
        g.extra["futureTopLevel"] = {"ratio": 1e-9}
    return g


def test_integer_too_long_for_python_is_a_one_line_format_error():
    text = json.dumps(v3_doc()).replace('"seq": 3', '"seq": ' + "9" * 5000, 1)
    with pytest.raises(GraphFormatError) as info:
        graph_from_any(text, SRC, NOW)
    assert info.value.message.startswith(f"{SRC}: ") and "integer too long" in info.value.message
    with pytest.raises(GraphFormatError, match="integer too long"):
        parse_json("[" + "9" * 5000 + "]", SRC)


def test_integers_beyond_64_bits_in_free_form_values_stay_exact():
    big, small = 123456789012345678901234567890, -(2 ** 70) - 3
    doc = v3_doc(nodes=[v3_node("a", fields={"n": big}, bmeCount=small), v3_node("b")], extraTop=[big])
    imported = graph_from_any(json.dumps(doc), SRC, NOW)  # orjson reads these as doubles: re-read
    node = imported.graph.nodes[0]
    assert node.fields["n"] == big and node.extra["bmeCount"] == small and imported.graph.extra["extraTop"] == [big]
    first = export_document(imported.graph)
    assert str(big) in first and export_document(graph_from_any(first, SRC, NOW).graph) == first


def test_large_floats_in_free_form_values_stay_floats():
    doc = v3_doc(nodes=[v3_node("a", fields={"x": 1e20, "y": 1e300}), v3_node("b")])
    fields = graph_from_any(json.dumps(doc), SRC, NOW).graph.nodes[0].fields
    assert fields == {"x": 1e20, "y": 1e300} and type(fields["x"]) is float


def test_a_raw_control_character_is_reported_without_a_stutter():
    with pytest.raises(GraphFormatError) as info:
        graph_from_any('{"version": 3, "nodes": "a\tb"}', SRC, NOW)
    assert "Invalid control character at line 1 column" in info.value.message and "at at" not in info.value.message


@pytest.mark.parametrize("stdlib_only", [False, True], ids=["orjson-writes", "stdlib-writes"])
@pytest.mark.parametrize("with_embeddings", [False, True])
def test_export_equals_the_json_modules_text_byte_for_byte(with_embeddings, stdlib_only):
    g = odd_values_graph(stdlib_only)
    text = export_document(g, with_embeddings)
    assert text == reference_export(g, with_embeddings)
    again = graph_from_any(text, SRC, NOW).graph
    assert export_document(again, with_embeddings) == text


def test_export_with_embeddings_of_odd_shapes_equals_the_json_modules_text():
    g = with_vectors(rich_graph())
    g.nodes[0].embedding = np.ones((2, 2), dtype=np.float32)
    g.nodes[1].embedding = np.zeros(0, dtype=np.float32)
    g.nodes[2].extra = {"embedding": "shadow"}  # the layout the fast path relies on is gone
    assert export_document(g, True) == reference_export(g, True)


def test_export_of_a_nan_vector_fails_instead_of_writing_invalid_json():
    g = with_vectors(rich_graph())
    g.nodes[2].embedding = np.array([0.5, np.inf], dtype=np.float32)
    with pytest.raises(GraphFormatError, match="JSON cannot store"):
        export_document(g, with_embeddings=True)


def test_javascript_integers_in_float_fields_build_the_same_graph():
    as_js = v3_doc(nodes=[v3_node("a", importance=5), v3_node("b")], edges=[v3_edge("e1", "a", "b", strength=1)])
    as_py = v3_doc(nodes=[v3_node("a", importance=5.0), v3_node("b")], edges=[v3_edge("e1", "a", "b", strength=1.0)])
    a, b = graph_from_v3_document(as_js, SRC, NOW), graph_from_v3_document(as_py, SRC, NOW)
    assert type(a.nodes[0].importance) is float and type(a.edges[0].strength) is float
    assert export_document(a) == export_document(b)


def test_an_importance_beyond_the_double_range_is_refused_not_a_crash():
    with pytest.raises(GraphFormatError, match="importance must be a finite number"):
        graph_from_v3_document(v3_doc(nodes=[v3_node("a", importance=10 ** 400), v3_node("b")]), SRC, NOW)


def test_bad_json_string_graph_in_a_chat_header_names_where_it_is():
    with pytest.raises(GraphFormatError, match=r"chat.jsonl \(chat_metadata.st_bme_graph\): not valid JSON"):
        graph_from_any(_chat_text('{"version": 3, "nodes": ['), "chat.jsonl", NOW)
