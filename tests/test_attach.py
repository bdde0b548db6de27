"""`bme attach` / `bme detach`: bme's graph in the chat header at chat_metadata.st_bme_graph."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from bme_cli.chat import read_chat
from bme_cli.graph import codec, store
from bme_cli.sillytavern.attach import attached_by_bme, backup_path
from bme_cli.workflow import import_graph
from fakes import NOW
from cli_support import (chats, cli_env, error_lines, ingested, ingested_template, invoke, ok,  # noqa: F401
                         sidecar)

pytestmark = pytest.mark.usefixtures("cli_env")
NOW = 1_700_000_000_000  # the clock import_graph is handed: only times a document leaves out take it


def header_of(chat: Path) -> dict:
    return json.loads(chat.read_bytes().split(b"\n", 1)[0])


def message_bytes(chat: Path) -> bytes:
    return chat.read_bytes().split(b"\n", 1)[1]


@pytest.mark.parametrize("name", ["adventure", "chinese"])
def test_attach_keeps_message_lines_and_header_keys_and_imports_back_to_the_same_graph(
        ingested: dict[str, Path], tmp_path: Path, name: str) -> None:
    chat = ingested[name]
    before, header_before = chat.read_bytes(), header_of(chat)
    ok("attach", chat)
    assert message_bytes(chat) == before.split(b"\n", 1)[1]
    header = header_of(chat)
    assert list(header) == list(header_before)
    meta = header["chat_metadata"]
    assert list(meta)[:-1] == list(header_before["chat_metadata"])
    assert {k: meta[k] for k in header_before["chat_metadata"]} == header_before["chat_metadata"]
    assert meta["integrity"] == header_before["chat_metadata"]["integrity"]
    graph = meta["st_bme_graph"]
    assert graph["version"] == 3 and attached_by_bme(graph)
    assert all(n["embedding"] is None for n in graph["nodes"])   # offline vectors mean nothing to ST-BME
    assert backup_path(chat).read_bytes() == before
    assert len(read_chat(chat).messages) == len(read_chat(backup_path(chat)).messages)
    back = tmp_path / "back.bme.json"
    ok("import", chat, chat, "--graph", back)
    assert ok("export", chat, "--graph", back).stdout == ok("export", chat).stdout
    assert (ok("export", chat, "--graph", back, "--with-embeddings").stdout.count('"id"')
            == ok("export", chat, "--with-embeddings").stdout.count('"id"'))


def test_detach_restores_the_chat_byte_for_byte(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    original = chat.read_bytes()
    ok("attach", chat)
    result = ok("detach", chat)
    assert "removed the ST-BME graph" in result.stderr
    assert chat.read_bytes() == original
    assert "no ST-BME graph" in ok("detach", chat).stderr


def test_attaching_again_writes_nothing_and_a_newer_graph_replaces_bmes_own(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    ok("attach", chat)
    stamp = chat.stat().st_mtime_ns
    assert "already holds this graph" in ok("attach", chat).stderr
    assert chat.stat().st_mtime_ns == stamp
    g = store.load_graph(sidecar(chat), NOW)
    g.nodes[0].fields["state"] = "changed by a later ingest"
    store.save_graph(sidecar(chat), g)
    ok("attach", chat)   # the header held bme's own earlier graph: no --force needed
    assert header_of(chat)["chat_metadata"]["st_bme_graph"]["nodes"][0]["fields"]["state"] == \
        "changed by a later ingest"


def test_a_graph_sillytavern_changed_is_replaced_or_removed_only_with_force(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    ok("attach", chat)
    header = header_of(chat)
    header["chat_metadata"]["st_bme_graph"]["lastRecallResult"] = ["x"]   # what an ST-BME recall does
    chat.write_bytes(json.dumps(header).encode() + b"\n" + message_bytes(chat))
    edited = chat.read_bytes()
    for command in ("attach", "detach"):
        result = invoke(command, chat)
        assert result.exit_code == 2
        [line] = error_lines(result)
        assert "SillyTavern" in line and "--force" in line and "nothing was written" in line
        assert chat.read_bytes() == edited
    ok("attach", chat, "--force")
    assert backup_path(chat).read_bytes() == edited
    assert attached_by_bme(header_of(chat)["chat_metadata"]["st_bme_graph"])


def test_attach_refuses_a_chat_edited_since_ingest(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    lines = chat.read_bytes().split(b"\n")
    row = json.loads(lines[3])
    row["mes"] = row["mes"] + " (edited)"
    lines[3] = json.dumps(row).encode()
    chat.write_bytes(b"\n".join(lines))
    edited = chat.read_bytes()
    result = invoke("attach", chat)
    assert result.exit_code == 1
    [line] = error_lines(result)
    assert "changed since the last ingest" in line and "#2 edited" in line
    assert chat.read_bytes() == edited and not backup_path(chat).exists()


def test_attach_without_a_graph_or_to_a_headerless_group_chat_is_one_line(
        chats: dict[str, Path], ingested: dict[str, Path], tmp_path: Path) -> None:
    result = invoke("attach", chats["adventure"])
    assert result.exit_code == 2 and "no graph yet" in error_lines(result)[0]
    old_group = tmp_path / "old-group.jsonl"
    old_group.write_bytes(message_bytes(ingested["group"]))     # group files of old ST had no header
    ok("ingest", "--quiet", old_group)
    before = old_group.read_bytes()
    result = invoke("attach", old_group)
    assert result.exit_code == 3
    [line] = error_lines(result)
    assert "no header line" in line and old_group.read_bytes() == before
    for command in ("attach", "detach"):
        result = invoke(command, tmp_path / "nope.jsonl")
        assert result.exit_code == 3 and "nope.jsonl: no such file" in error_lines(result)[0]
        result = invoke(command, tmp_path / "no-folder" / "x.jsonl")
        assert result.exit_code == 3 and "no such file" in error_lines(result)[0]


def test_endpoint_vectors_ride_through_attach_and_import(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat = ingested["adventure"]
    g = store.load_graph(sidecar(chat), NOW)
    rng = np.random.default_rng(3)
    for n in g.nodes:
        n.embedding = rng.standard_normal(8).astype(np.float32)
    g.meta.embedding_model, g.meta.embedding_dim = "openai:nomic-embed-text", 8
    store.save_graph(sidecar(chat), g)
    ok("attach", chat)
    stored = header_of(chat)["chat_metadata"]["st_bme_graph"]
    assert stored[codec.EXPORT_MODEL_KEY] == "openai:nomic-embed-text"
    assert all(len(n["embedding"]) == 8 for n in stored["nodes"])
    back = tmp_path / "back.bme.json"
    summary = import_graph(chat, chat, now=NOW, graph_override=back, force=False, lock_wait=0,
                           embedding_model="openai:nomic-embed-text")
    assert f"{len(g.nodes)} vectors kept" in summary
    again = store.load_graph(back, NOW)
    for a, b in zip(g.nodes, again.nodes):
        assert np.array_equal(np.asarray(a.embedding), np.asarray(b.embedding))
    ok("attach", chat, "--no-vectors")
    assert all(n["embedding"] is None for n in header_of(chat)["chat_metadata"]["st_bme_graph"]["nodes"])


def test_attach_keeps_the_chat_file_mode(ingested: dict[str, Path]) -> None:
    chat = ingested["chinese"]
    os.chmod(chat, 0o640)
    ok("attach", chat)
    assert chat.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in chat.parent.glob(".*.tmp")) == []


def test_an_st_bme_graph_keeps_its_vectors_through_import_attach_import_and_export(
        ingested: dict[str, Path], tmp_path: Path) -> None:
    chat = ingested["adventure"]
    doc = json.loads(ok("export", chat).stdout)           # ST-BME's layout: vectors as plain arrays
    rng = np.random.default_rng(7)
    for node in doc["nodes"]:
        node["embedding"] = rng.standard_normal(6).astype(np.float32).tolist()
    st_file = tmp_path / "st-bme-graph-1712345678901.json"
    st_file.write_text(json.dumps(doc), encoding="utf-8")
    summary = import_graph(chat, st_file, now=NOW, graph_override=None, force=True, lock_wait=0,
                           embedding_model=None, vectors_model="nomic-embed-text")
    assert "vectors kept (nomic-embed-text, 6-d)" in summary
    ok("attach", chat)
    stored = header_of(chat)["chat_metadata"]["st_bme_graph"]
    assert stored[codec.EXPORT_MODEL_KEY] == "nomic-embed-text"
    assert [n["embedding"] for n in stored["nodes"]] == [n["embedding"] for n in doc["nodes"]]
    back = tmp_path / "back.bme.json"
    import_graph(chat, chat, now=NOW, graph_override=back, force=False, lock_wait=0, embedding_model="nomic-embed-text")
    again = json.loads(ok("export", chat, "--graph", back, "--with-embeddings").stdout)
    assert [n["embedding"] for n in again["nodes"]] == [n["embedding"] for n in doc["nodes"]]


def test_attach_says_failed_batches_will_look_processed_to_st_bme(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    g = store.load_graph(sidecar(chat), NOW)
    g.meta.extra["failedBatches"] = [{"startSeq": 6, "endSeq": 6, "contextStart": 2, "reason": "no reply",
                                      "at": 1712345678901, "attempts": 1}]
    store.save_graph(sidecar(chat), g)
    result = ok("attach", chat)
    assert "1 failed batch(es) (#6-#6)" in result.stderr and "--retry-failed" in result.stderr
    assert "failedBatches" not in chat.read_text(encoding="utf-8").split("\n", 1)[0]
