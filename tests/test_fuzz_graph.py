"""Hostile input for the graph importer (`graph_from_any`) and the model-reply parser
(`jsonreply`): a valid result or one of bme's own errors, one line long, never a crash.

* Graph documents: random bytes and text, arbitrary JSON (NaN, Infinity, huge numbers,
  lone surrogates), deep nesting, other encodings, and valid ST-BME exports, bme exports and
  sidecars with one value replaced, removed or duplicated anywhere in them. Whatever is
  accepted is a valid graph that saves and loads back unchanged.
* Model replies: random text, broken and truncated JSON, fences and think blocks around
  operations of every wrong type, for every response model; an accepted extraction reply
  is always within the per-field and per-batch limits.
* Through the CLI, `bme import` of garbage is one error line, exit code 3, nothing written.
"""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from pydantic import BaseModel

from bme_cli.errors import BmeError, ExitCode
from bme_cli.graph.codec import export_document, graph_from_any
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli.graph.store import encode_sidecar, load_graph, save_graph
from bme_cli.prompts.compress import CompressReply
from bme_cli.prompts.conflict import ConflictReply
from bme_cli.prompts.evolve import EvolveReply
from bme_cli.prompts.extract import (MAX_FIELD_CHARS, MAX_FIELDS, MAX_ID_CHARS, MAX_KEY_CHARS, MAX_OPS,
                                     MAX_THOUGHT_CHARS, CreateOp, ExtractReply, UpdateOp)
from bme_cli.prompts.recall import RecallReply
from bme_cli.prompts.reflect import ReflectReply
from bme_cli.prompts.synopsis import SynopsisReply
from bme_cli.providers.jsonreply import candidates, check_reply, looks_truncated, repair_note, strip_think
from cli_support import error_lines, invoke
from test_crash import graph_content

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
NOW = 1_700_000_000_000
SOURCE = "stranger.json"
LINE_BREAKS = re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
REPLY_MODELS: list[type[BaseModel]] = [ExtractReply, ConflictReply, CompressReply, EvolveReply,
                                       RecallReply, ReflectReply, SynopsisReply]


# -- valid documents to start from -----------------------------------------------------------------
def _graph(dim: int | None = 4) -> Graph:
    ids = iter(f"n{i}" for i in range(1000))
    g = Graph(last_processed_seq=6)
    a = add_node(g, make_node("character", {"name": "Mira", "state": "hurt"}, 2, NOW, new_id=lambda: next(ids)))
    b = add_node(g, make_node("event", {"summary": "林风来到青云山", "participants": "Mira"}, 4, NOW,
                              new_id=lambda: next(ids)))
    c = add_node(g, make_node("location", {"name": "Saltmere"}, 6, NOW, new_id=lambda: next(ids)))
    add_edge(g, b.id, a.id, "involved_in", 0.9, NOW, new_id=lambda: next(ids))
    add_edge(g, b.id, c.id, "occurred_at", 0.8, NOW, new_id=lambda: next(ids))
    if dim:
        for i, n in enumerate((a, b, c)):
            n.embedding = np.arange(i, i + dim, dtype=np.float32) / 7
        g.meta.embedding_model, g.meta.embedding_dim = "hash-4", dim
    g.meta.extraction_count, g.meta.fingerprints = 3, {2: "aa", 4: "bb"}
    return g


ST_BME_EXPORT = json.loads(export_document(_graph()))
BME_EXPORT = json.loads(export_document(_graph(), with_embeddings=True))
SIDECAR = json.loads(b"".join(bytes(c) for c in encode_sidecar(_graph())))
CHAT_HEADER = {"user_name": "u", "character_name": "c", "chat_metadata": {"st_bme_graph": ST_BME_EXPORT}}
VALID = {"st-bme": ST_BME_EXPORT, "bme-export": BME_EXPORT, "sidecar": SIDECAR, "chat-header": CHAT_HEADER}


# -- strategies -----------------------------------------------------------------------------------
_scalars = (st.none() | st.booleans() | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
            | st.sampled_from(["", "n0", "n1", "event", "character", "related", "\ud800", "x" * 5000]))
json_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=5)
                           | st.dictionaries(st.text(max_size=12) | st.sampled_from(
                               ["id", "type", "nodes", "edges", "fields", "fromId", "toId", "seqRange",
                                "version", "embedding", "format", "graph", "bme"]), inner, max_size=5),
                           max_leaves=25)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys/indexes) to a value inside a JSON document."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated_documents(draw) -> Any:
    """A valid document with one to three values replaced, removed or duplicated."""
    doc = copy.deepcopy(VALID[draw(st.sampled_from(sorted(VALID)))])
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key, action = path[-1], draw(st.sampled_from(["replace", "remove", "duplicate", "nest"]))
        if action == "replace":
            parent[key] = draw(json_values)
        elif action == "remove":
            del parent[key]
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        else:
            parent[key] = [[[[[[[[parent[key]]]]]]]]]
        if not isinstance(doc, (dict, list)):
            break
    return doc


def _dumps(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False, allow_nan=True)


documents = (st.binary(max_size=300) | st.text(max_size=300) | json_values.map(_dumps)
             | mutated_documents().map(_dumps) | mutated_documents())


# -- the importer --------------------------------------------------------------------------------
def _assert_one_line_bme_error(error: BaseException) -> None:
    assert isinstance(error, BmeError), f"{type(error).__name__}: {error}"
    assert not LINE_BREAKS.search(str(error)), repr(str(error))
    assert len(str(error)) < 2000, "an error message that dumps the document"


def _assert_valid_and_saves(imported, tmp_path: Path) -> None:
    """An accepted graph is consistent, and saves and loads back as the same graph."""
    graph = imported.graph
    ids = [n.id for n in graph.nodes]
    assert len(set(ids)) == len(ids) and all(type(i) is str and i for i in ids)
    for e in graph.edges:
        assert e.from_id in ids and e.to_id in ids and e.from_id != e.to_id
        assert math.isfinite(e.strength)
    for n in graph.nodes:
        assert math.isfinite(n.importance) and type(n.fields) is dict
        assert n.embedding is None or bool(np.isfinite(n.embedding).all())
    imported.drop_embeddings_unless("hash-4")  # as `bme import` does for another embedder
    path = tmp_path / "imported.bme.json"
    path.unlink(missing_ok=True)
    try:
        save_graph(path, graph)
    except BmeError as e:  # refusing to store it is fine, if it says why in one line
        _assert_one_line_bme_error(e)
        return
    assert graph_content(load_graph(path, now=NOW)) == graph_content(graph)


@FUZZ
@given(doc=documents)
@example(doc="[" * 100_000)
@example(doc='{"version": 3, "nodes": ' + "[" * 5000 + "]" * 5000 + ', "edges": []}')
@example(doc='{"version": 3, "nodes": [], "edges": [], "lastProcessedSeq": NaN}')
@example(doc='{"version": 1e999, "nodes": [], "edges": []}')
@example(doc=json.dumps(ST_BME_EXPORT).encode("utf-16"))
@example(doc=json.dumps(ST_BME_EXPORT, ensure_ascii=False).encode("gb18030"))
@example(doc=b"\xef\xbb\xbf" + json.dumps(ST_BME_EXPORT).encode())
@example(doc=json.dumps({**ST_BME_EXPORT, "nodes": [{**ST_BME_EXPORT["nodes"][0], "fields": {"summary": "x" * 3_000_000}}]}))
@example(doc={"version": 3, "nodes": [{"id": "a", "type": "event", "embedding": [1e39]}], "edges": []})
@example(doc={"format": "bme-sidecar", "formatVersion": 1, "graph": ST_BME_EXPORT,
              "bme": {"embedding": {"ids": ["n0"], "count": 1, "vectors": "!!!"}}})
def test_graph_importer_accepts_a_valid_graph_or_raises_one_line_bme_error(doc, tmp_path):
    try:
        imported = graph_from_any(doc, SOURCE, NOW)
    except BmeError as e:
        _assert_one_line_bme_error(e)
        if isinstance(doc, (str, bytes)):
            assert SOURCE in str(e)
        return
    _assert_valid_and_saves(imported, tmp_path)


@pytest.mark.parametrize("kind", sorted(VALID))
def test_the_valid_documents_the_fuzzer_starts_from_are_accepted(kind, tmp_path):
    imported = graph_from_any(_dumps(VALID[kind]), SOURCE, NOW)
    assert len(imported.graph.nodes) == 3 and len(imported.graph.edges) == 2
    _assert_valid_and_saves(imported, tmp_path)


def test_unknown_keys_of_a_strangers_graph_are_kept_as_inert_data(tmp_path):
    doc = copy.deepcopy(ST_BME_EXPORT)
    payload = {"__class__": "os.system", "$ref": "/etc/passwd", "cmd": "rm -rf /"}
    doc["nodes"][0]["onLoad"] = payload
    doc["edges"][0]["script"] = "__import__('os').system('touch pwned')"
    doc["pluginState"] = payload
    imported = graph_from_any(_dumps(doc), SOURCE, NOW)
    assert imported.graph.nodes[0].extra == {"onLoad": payload}
    assert imported.graph.edges[0].extra == {"script": "__import__('os').system('touch pwned')"}
    assert imported.graph.extra["pluginState"] == payload
    path = tmp_path / "g.bme.json"
    save_graph(path, imported.graph)
    again = load_graph(path, NOW)
    assert again.nodes[0].extra == {"onLoad": payload} and again.extra["pluginState"] == payload
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.bme.json"]  # nothing else appeared


# -- the reply parser ----------------------------------------------------------------------------
_op_values = st.fixed_dictionaries({}, optional={
    "action": st.sampled_from(["create", "update", "delete", "CREATE ", "explode", "", None]) | json_values,
    "type": st.sampled_from(["event", "character", "location", "../../etc", "x" * 100]) | json_values,
    "fields": st.dictionaries(st.text(max_size=80), json_values, max_size=40) | json_values,
    "nodeId": st.sampled_from(["n0", "missing", "../x"]) | json_values,
    "ref": json_values, "importance": json_values, "seq": json_values, "clusters": json_values,
    "links": st.lists(st.fixed_dictionaries({}, optional={
        "targetNodeId": json_values, "targetRef": json_values, "relation": json_values,
        "strength": json_values}) | json_values, max_size=4) | json_values,
})
extract_like = st.fixed_dictionaries({"operations": st.lists(_op_values | json_values, max_size=8)},
                                     optional={"thought": json_values, "invalid_ops": json_values,
                                               "excess_ops": json_values})
_wrappers = st.sampled_from(["{}", "```json\n{}\n```", "<think>{{[</think>{}", "Sure! {} Hope it helps {{",
                             "{}" + "}" * 3, "[{}", "```\n{}"])
replies = (st.text(max_size=400) | json_values.map(_dumps)
           | st.tuples(_wrappers, extract_like.map(_dumps)).map(lambda t: t[0].replace("{}", t[1], 1))
           | extract_like.map(_dumps).map(lambda s: s[: len(s) // 2]))


def _assert_within_limits(reply: ExtractReply) -> None:
    assert len(reply.operations) <= MAX_OPS and len(reply.thought) <= MAX_THOUGHT_CHARS
    for op in reply.operations:
        if isinstance(op, (CreateOp, UpdateOp)):
            assert len(op.fields) <= MAX_FIELDS
            assert all(len(k) <= MAX_KEY_CHARS for k in op.fields)
            assert all(v is None or isinstance(v, (bool, int, float)) or len(v) <= MAX_FIELD_CHARS
                       for v in op.fields.values())
            assert all(isinstance(v, (bool, int, str)) or v is None or math.isfinite(v) for v in op.fields.values())
            for link in op.links:
                assert len(link.target_node_id or "") <= MAX_ID_CHARS and len(link.relation) <= 64
        ids = [getattr(op, "node_id", None), getattr(op, "ref", None)]
        assert all(i is None or len(i) <= MAX_ID_CHARS for i in ids)


@FUZZ
@given(text=replies, finish=st.sampled_from([None, "stop", "length"]), model=st.sampled_from(REPLY_MODELS))
@example(text="[" * 100_000, finish=None, model=ExtractReply)
@example(text='{"operations": [' + "[" * 3000 + "]" * 3000 + "]}", finish="stop", model=ExtractReply)
@example(text='{"fields": {"summary": ' + "[" * 990 + "]" * 990 + "}}", finish="stop", model=CompressReply)
@example(text='{"operations": [{"action": "create", "type": "event", "fields": {"summary": NaN, "a": Infinity}}]}',
         finish=None, model=ExtractReply)
@example(text=json.dumps({"thought": "t" * 1_000_000, "operations": [
    {"action": "create", "type": "event", "fields": {"summary": "s" * 1_000_000, "k" * 1000: "v"}}] * 3}),
         finish=None, model=ExtractReply)
@example(text=json.dumps({"operations": [{"action": "delete", "nodeId": f"n{i}"} for i in range(500)]}),
         finish=None, model=ExtractReply)
@example(text='{"operations": [], "invalid_ops": -1000000, "excess_ops": "1e400"}', finish=None, model=ExtractReply)
def test_reply_parser_returns_a_check_and_never_raises(text, finish, model):
    check = check_reply(text, model, finish)
    assert check.ok == (check.value is not None)
    if not check.ok:
        assert check.problem and not LINE_BREAKS.search(check.problem) and len(check.problem) < 1000
        note = repair_note(check)
        assert "previous reply" in note and len(note) < 1500
    elif model is ExtractReply:
        _assert_within_limits(check.value)
    for helper in (candidates, strip_think, looks_truncated):
        helper(text)


def test_forged_skip_counters_in_a_reply_are_never_negative():
    reply = check_reply('{"operations": [], "invalid_ops": -5, "excess_ops": -7}', ExtractReply).value
    assert reply is not None and reply.invalid_ops >= 0 and reply.excess_ops >= 0


# -- through the CLI ------------------------------------------------------------------------------
@pytest.fixture
def import_target(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("import")
    chat = folder / "chat.jsonl"
    chat.write_text('{"user_name": "u", "character_name": "c", "chat_metadata": {}}\n'
                    '{"name": "c", "is_user": false, "mes": "hello"}\n', encoding="utf-8")
    return chat


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # lone surrogates become invalid UTF-8, on purpose


_cli_garbage = (st.binary(min_size=1, max_size=200) | json_values.map(_dumps).map(_utf8)
                | mutated_documents().map(_dumps).map(_utf8))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=_cli_garbage)
@example(data=b"[" * 200_000)
@example(data=b"\x00\xff" * 1000)
@example(data=json.dumps(ST_BME_EXPORT).encode("utf-16"))
@example(data=b'{"version": 3, "nodes": [{"id": "a", "type": "event"}], "edges": [{"id": "e", "fromId": "a", "toId": "b"}]}')
def test_bme_import_of_garbage_is_one_line_exit_3_and_writes_nothing(data, import_target, monkeypatch):
    monkeypatch.setenv("BME_EMBEDDING_OFFLINE_MODEL", "hash")
    try:
        graph_from_any(data, "probe", NOW)
        return  # valid after all (hypothesis can build one): not garbage
    except BmeError as e:
        # bad input, or (exit 1) a sidecar from a newer bme, which is not garbage
        expected = e.exit_code
        assert expected == ExitCode.BAD_INPUT or "newer bme" in str(e), str(e)
    source = import_target.with_name("garbage.json")
    source.write_bytes(data)
    result = invoke("import", import_target, source)
    assert result.exit_code == expected, result.stderr
    assert len(result.stderr.splitlines()) == 1 and len(error_lines(result)) == 1, result.stderr
    assert result.stdout == ""
    assert sorted(p.name for p in import_target.parent.iterdir()) == ["chat.jsonl", "garbage.json"]


# -- what a stranger's graph can do to the terminal -------------------------------------------------
@pytest.mark.parametrize("fmt", ["markdown", "table"])
def test_recall_never_prints_terminal_control_sequences_from_graph_text(fmt, import_target, monkeypatch):
    monkeypatch.setenv("BME_EMBEDDING_OFFLINE_MODEL", "hash")
    doc = {"version": 3, "nodes": [{"id": "a", "type": "character", "importance": 9, "fields": {
        "name": "Mira\x1b]0;pwned\x07\x1b[2J", "state": "calm \x1b[31mred\x9b0m"}}], "edges": []}
    source = import_target.with_name("stranger.json")
    source.write_text(json.dumps(doc), encoding="utf-8")
    assert invoke("import", import_target, source).exit_code == 0
    result = invoke("recall", import_target, "--query", "Mira", "--no-reinforce", "--format", fmt)
    assert result.exit_code == 0 and "Mira" in result.stdout
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", result.stdout), repr(result.stdout)
