"""The recall index saved beside the sidecar: the same block as a fresh build, never stale
(editing the sidecar, the chat's processed messages or the schema invalidates it), and a file
bme cannot read is rebuilt, never an error."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from bme_cli import index_cache
from bme_cli.graph import store
from bme_cli.graph.arrays import read_arrays, write_arrays
from bme_cli.graph.model import Edge
from bme_cli.graph.schema import Schema
from bme_cli.memory import packed
from bme_cli.memory.index import RecallIndex
from fakes import NOW
from cli_support import cli_env, frozen_clock, ingested, ingested_template, ok  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env", "frozen_clock")

QUERIES = ["Where did they find the map?", "Who is the captain", "the storm at sea", "火车站", "an old friend"]


def _age(path: Path, seconds: float = 60.0) -> None:
    """Date a file back: a cache is only written for a sidecar not changed in the last moments."""
    t = time.time_ns() - int(seconds * 1e9)
    os.utime(path, ns=(t, t))


def _queries(tmp: Path) -> Path:
    path = tmp / "queries.jsonl"
    path.write_text("".join(json.dumps({"query": q}) + "\n" for q in QUERIES), encoding="utf-8")
    return path


def _batch(chat: Path, queries: Path) -> str:
    return ok("recall", chat, "--queries", queries).stdout


def _candidates(chat: Path, query: str) -> str:
    """What --explain lists (every candidate recall looked at), on stderr."""
    return ok("recall", chat, "--query", query, "--no-reinforce", "--explain").stderr


def _no_sidecar_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the sidecar was parsed although a saved index holds")
    monkeypatch.setattr(store, "load_graph", refuse)


@pytest.mark.parametrize("name", ["adventure", "chinese", "group"])
def test_a_saved_index_gives_the_same_block_as_a_fresh_build(ingested: dict[str, Path], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    chat, queries = ingested[name], _queries(tmp_path)
    side = store.sidecar_path(chat)
    _age(side)
    fresh = _batch(chat, queries)                       # builds the index, and saves it
    cache = index_cache.cache_path(side)
    assert cache.exists() and read_arrays(cache) is not None and cache.stat().st_mode & 0o777 == 0o600
    single = ok("recall", chat, "--no-reinforce", "-f", "json", "--explain")
    with monkeypatch.context() as m:
        _no_sidecar_parse(m)
        assert _batch(chat, queries) == fresh            # from the saved index alone
        again = ok("recall", chat, "--no-reinforce", "-f", "json", "--explain")
    assert (again.stdout, again.stderr) == (single.stdout, single.stderr)
    cache.unlink()
    assert _batch(chat, queries) == fresh                # and the same once built again


def test_editing_the_sidecar_invalidates_the_index(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat, queries = ingested["adventure"], _queries(tmp_path)
    side = store.sidecar_path(chat)
    _age(side)
    assert "They lit the zanzibarian lantern" not in _candidates(chat, "zanzibarian lantern")
    graph = store.load_graph(side, NOW)
    event = next(n for n in graph.nodes if n.type == "event" and not n.archived)
    event.fields["summary"] = "They lit the zanzibarian lantern at the pier."
    store.save_graph(side, graph)
    assert "They lit the zanzibarian lantern" in _candidates(chat, "zanzibarian lantern")
    # an edit in place, of the same size, with the old mtime put back: the ctime still tells
    _age(side)
    ok("recall", chat, "--queries", queries)
    data = side.read_bytes()
    assert data.count(b"zanzibarian") == 1
    stat = side.stat()
    with open(side, "r+b") as f:
        f.write(data.replace(b"zanzibarian", b"quixoticals"))
    os.utime(side, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert "They lit the quixoticals lantern" in _candidates(chat, "quixoticals lantern")


def test_an_unreadable_index_is_rebuilt_not_an_error(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat, queries = ingested["group"], _queries(tmp_path)
    side = store.sidecar_path(chat)
    _age(side)
    fresh = _batch(chat, queries)
    cache = index_cache.cache_path(side)
    good = cache.read_bytes()
    for bad in (b"", b"not an index", good[:len(good) // 2], good[:40] + b"\xff" * 60 + good[100:]):
        cache.write_bytes(bad)
        result = ok("recall", chat, "--queries", queries)
        assert result.stdout == fresh and "Traceback" not in result.stderr
    assert read_arrays(cache) is not None               # written again, whole


def test_a_reinforcing_recall_keeps_the_index_current(ingested: dict[str, Path], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    chat, queries = ingested["adventure"], _queries(tmp_path)
    side = store.sidecar_path(chat)
    _age(side)
    ok("recall", chat, "--query", "the map")             # reinforces, saves, writes the index
    key = index_cache.file_key(side)
    assert read_arrays(index_cache.cache_path(side))[0]["key"]["sidecar"] == key
    builds = []
    real = RecallIndex.build
    monkeypatch.setattr(RecallIndex, "build", classmethod(lambda cls, *a, **k: builds.append(1) or real(*a, **k)))
    ok("recall", chat, "--query", "the map")
    cached = _batch(chat, queries)
    assert builds == []                                   # neither recall built an index
    index_cache.cache_path(side).unlink()
    assert _batch(chat, queries) == cached               # and a fresh build agrees


def test_an_edited_message_or_another_schema_gives_a_new_index(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat, queries = ingested["adventure"], _queries(tmp_path)
    side = store.sidecar_path(chat)
    _age(side)
    _batch(chat, queries)
    graph = store.load_graph(side, NOW)
    lines = chat.read_text(encoding="utf-8").splitlines()
    target = next(i for i, line in enumerate(lines[1:], 1) if i - 1 <= graph.last_processed_seq
                  and json.loads(line).get("mes") and not json.loads(line).get("is_user"))
    msg = json.loads(lines[target])
    msg["mes"] = "The quixotical heron stole the captain's compass."
    lines[target] = json.dumps(msg)
    chat.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = json.loads(ok("recall", chat, "--query", "quixotical heron compass", "--no-reinforce", "-f", "json").stdout)
    assert "quixotical heron" in out["text"]           # quoted from the edited message: not the old index
    key = index_cache.base_key(side, Schema.default(), "offline:hash-256")
    other = Schema.default()
    other.types[0]["label"] = "renamed"
    assert index_cache.base_key(side, other, "offline:hash-256")["schema"] != key["schema"]


def test_the_index_is_used_only_while_the_same_edges_are_active(ingested: dict[str, Path]) -> None:
    graph = store.load_graph(store.sidecar_path(ingested["adventure"]), NOW)
    now = 1_800_000_000_000
    a, b = graph.nodes[0].id, graph.nodes[1].id
    graph.edges.append(Edge("e-past", a, b, invalid_at=now - 10))
    graph.edges.append(Edge("e-future", a, b, expired_at=now + 10))
    assert packed.time_window(graph, now) == (now - 10, now + 10)


def test_packed_index_round_trips(ingested: dict[str, Path]) -> None:
    graph = store.load_graph(store.sidecar_path(ingested["chinese"]), NOW)
    schema, now = Schema.default(), 1_800_000_000_000
    index = RecallIndex.build(graph, schema, now=now)
    meta, arrays = packed.pack_recall_index(index, graph)
    back = packed.unpack_recall_index(meta, arrays, schema, now)
    for name in ("active", "recallable", "importance", "emb", "emb_rows", "specificity", "events_by_seq"):
        assert np.array_equal(getattr(index, name), getattr(back, name)), name
    assert back.bm25.vocab == index.bm25.vocab and back.names == index.names
    assert [back.nodes[i].to_v3() for i in range(index.n)] == [n.to_v3() for n in index.nodes]
    assert [back.ids[i] for i in range(index.n)] == index.ids
    assert all(back.row_of[nid] == i for i, nid in enumerate(index.ids))


def test_an_unpacked_index_packs_again_to_the_same_arrays(ingested: dict[str, Path]) -> None:
    """A reinforcing recall re-packs what it unpacked: the vocabulary, names and excerpts are
    passed on as they were, not decoded and sorted again (the same bytes either way)."""
    from bme_cli.memory.excerpts import ExcerptIndex
    from bme_cli.workflow import processed_units
    from bme_cli.chat import read_chat
    chat = ingested["chinese"]
    graph = store.load_graph(store.sidecar_path(chat), NOW)
    schema, now = Schema.default(), 1_800_000_000_000
    meta, arrays = packed.pack_recall_index(RecallIndex.build(graph, schema, now=now), graph)
    again_meta, again = packed.pack_recall_index(packed.unpack_recall_index(meta, arrays, schema, now), graph)
    assert again_meta == meta and again.keys() == arrays.keys()
    assert all(np.array_equal(again[k], arrays[k]) for k in arrays), [k for k in arrays if not np.array_equal(again[k], arrays[k])]
    ex_meta, ex_arrays = packed.pack_excerpts(ExcerptIndex.build(processed_units(read_chat(chat), graph)))
    ex_again = packed.pack_excerpts(packed.unpack_excerpts(ex_meta, ex_arrays))
    assert ex_again[0] == ex_meta and all(np.array_equal(ex_again[1][k], ex_arrays[k]) for k in ex_arrays)


def test_array_files_refuse_what_they_cannot_read_back(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    write_arrays(path, {"a": 1}, {"m": np.arange(6, dtype=np.float32).reshape(2, 3), "e": np.zeros((0, 0))})
    meta, arrays = read_arrays(path)
    assert meta == {"a": 1} and arrays["m"].tolist() == [[0, 1, 2], [3, 4, 5]] and arrays["e"].shape == (0, 0)
    assert not arrays["m"].flags.writeable
    with pytest.raises(ValueError):
        write_arrays(path, {}, {"o": np.array(["text"], dtype=object)})
    assert read_arrays(tmp_path / "missing") is None


def test_packed_terms_and_names_are_found_by_bisection_without_decoding_all():
    """The vocabulary and the name index keep their strings packed; every key is found, in any
    script (a lone surrogate, as the stdlib reads from a bad ST-BME file, included), and a
    missing key is a KeyError, never a neighbour."""
    terms = {t: i for i, t in enumerate(["zeta", "alpha", "火车站", "mañana", "\ud800x", "al", "alphabet"])}
    arrays = packed._pack_vocab(terms, "v")
    vocab = packed._Vocab(packed._Strings(arrays, "v"), arrays["v_ids"])
    assert {t: vocab[t] for t in terms} == terms and len(vocab) == len(terms)
    assert sorted(vocab) == sorted(terms) and vocab.get("alph") is None and vocab.get("") is None
    names = {"mira": [(3, "mira vale"), (9, "mira")], "陈默": [(1, "陈默")], "vale": [(3, "mira vale")]}
    index = packed._Names(packed._pack_names(names))
    assert {k: index[k] for k in names} == names and set(index) == set(names) and len(index) == 3
    assert index.get("mir") is None and index.get("zzz", ()) == ()
    assert packed._Strings(packed._pack_strings([], "e"), "e")[:] == []


def test_a_builder_name_that_names_no_module_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    # a renamed module left in the list would stop saved indexes following its code
    monkeypatch.setattr(index_cache, "_code", None)
    monkeypatch.setattr(index_cache, "_BUILDERS", ("memory.index", "graph.renamed_away"))
    with pytest.raises(ModuleNotFoundError, match="graph.renamed_away"):
        index_cache.code_digest()
