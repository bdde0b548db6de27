"""`bme stats`, `bme export` and `bme import` through the command line."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bme_cli.graph import store
from fakes import NOW
from cli_support import (SAMPLES, chats, cli_env, error_lines, ingested, ingested_template, invoke,  # noqa: F401
                         ok, sidecar, stats_json)

pytestmark = pytest.mark.usefixtures("cli_env")

# ST-BME's export layout (spec §1.2-1.4, §1.6), in ST-BME's key order.
TOP_KEYS = ["version", "lastProcessedSeq", "nodes", "edges", "lastRecallResult"]
NODE_KEYS = ["id", "type", "level", "parentId", "childIds", "seq", "seqRange", "archived", "fields",
             "embedding", "importance", "accessCount", "lastAccessTime", "createdTime", "prevId",
             "nextId", "clusters"]
EDGE_KEYS = ["id", "fromId", "toId", "relation", "strength", "edgeType", "createdTime", "validAt",
             "invalidAt", "expiredAt"]


def _raw_counts(chat: Path) -> dict[str, int]:
    """Message counts read straight from the .jsonl, independently of bme's reader."""
    rows = [json.loads(line) for line in chat.read_text(encoding="utf-8-sig").splitlines() if line.strip()]
    messages = [r for r in rows if "mes" in r]
    assistant = [i for i, m in enumerate(messages) if not m.get("is_user") and not m.get("is_system")]
    return {"messages": len(messages), "hidden": sum(bool(m.get("is_system")) for m in messages),
            "assistant": len(assistant), "pending": len(assistant),
            "last_assistant": assistant[-1]}


# -- stats -----------------------------------------------------------------------------------
def test_stats_on_a_chat_without_a_graph_counts_messages_and_pending_turns(chats: dict[str, Path]) -> None:
    chat = chats["group"]
    raw = _raw_counts(chat)
    data = stats_json(chat)
    assert data["graph_exists"] is False
    assert (data["messages"], data["hidden_messages"], data["assistant_turns"]) == \
        (raw["messages"], raw["hidden"], raw["assistant"])
    assert data["last_processed_seq"] == -1
    assert data["pending_turns"] == raw["pending"]          # the greeting (seq 0) counts
    assert data["active_nodes"] == data["total_nodes"] == 0
    assert data["graph_bytes"] == 0 and data["chat_bytes"] == chat.stat().st_size
    assert not sidecar(chat).exists()


def test_stats_table_on_a_chat_without_a_graph(chats: dict[str, Path]) -> None:
    result = ok("stats", chats["adventure"])
    assert "(none yet)" in result.stdout
    assert "pending turns" in result.stdout and "49" in result.stdout   # 48 replies and the greeting
    assert result.stderr == ""
    assert not sidecar(chats["adventure"]).exists()


def test_stats_after_ingest_matches_the_graph_on_disk(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    data = stats_json(chat)
    graph = store.load_graph(sidecar(chat), NOW)
    raw = _raw_counts(chat)
    assert data["graph_exists"] is True
    assert data["last_processed_seq"] == raw["last_assistant"] == graph.last_processed_seq
    assert data["pending_turns"] == 0
    active = [n for n in graph.nodes if not n.archived]
    assert data["total_nodes"] == len(graph.nodes) > 0
    assert data["active_nodes"] == len(active)
    assert data["archived_nodes"] == len(graph.nodes) - len(active)
    assert {t: n for t, n in data["active_by_type"].items() if n} == dict(Counter(n.type for n in active))
    assert sum(data["edges_valid"].values()) == sum(1 for e in graph.edges if e.is_active())
    assert sum(data["edges_invalidated"].values()) == sum(1 for e in graph.edges if not e.is_active())
    assert data["embedded_nodes"] == sum(1 for n in active if n.embedding is not None) == len(active)
    assert data["embedding_model"] == "offline:hash-256" and data["embedding_dim"] == 256
    assert data["core_tokens"] > 0
    assert data["graph_bytes"] == sidecar(chat).stat().st_size


def test_stats_table_is_not_cut_to_80_columns_in_a_pipe(ingested: dict[str, Path]) -> None:
    out = ok("stats", *ingested.values()).stdout
    assert "…" not in out                     # no ellipsised cells or headers
    for name in ("adventure.jsonl", "chinese.jsonl", "group.jsonl"):
        assert name in out
    summary = out[out.index("summary"):]
    assert "processed" in summary and "Core tok" in summary


def test_stats_on_several_chats_adds_a_summary_and_json_lists_them(ingested: dict[str, Path]) -> None:
    out = ok("stats", *ingested.values()).stdout
    assert "summary" in out
    data = json.loads(ok("stats", *ingested.values(), "--format", "json").stdout)["chats"]
    assert [Path(d["chat"]).name for d in data] == ["adventure.jsonl", "chinese.jsonl", "group.jsonl"]
    assert all(d["pending_turns"] == 0 and d["active_nodes"] > 0 for d in data)
    single = ok("stats", ingested["group"]).stdout
    assert "summary" not in single


def test_stats_tree_shows_compression_levels(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    levels = stats_json(chat)["levels"]["event"]
    assert len(levels) >= 2            # the offline ingest compressed events at least once
    out = ok("stats", chat, "--tree").stdout
    assert "compression levels" in out
    table = out[out.index("compression levels"):]
    rows = {tuple(cell.strip() for cell in line.split("│")[1:4]) for line in table.splitlines() if "│" in line}
    for level, count in levels.items():
        assert ("event", level, str(count)) in rows
    assert "compression levels" not in ok("stats", chat).stdout


def test_stats_accepts_a_folder_and_a_glob(ingested: dict[str, Path]) -> None:
    folder = ingested["group"].parent
    assert len(json.loads(ok("stats", folder, "--format", "json").stdout)["chats"]) == 3
    assert len(json.loads(ok("stats", f"{folder}/*.jsonl", "--format", "json").stdout)["chats"]) == 3
    empty = invoke("stats", f"{folder}/*.nothing")
    assert empty.exit_code == 2 and len(error_lines(empty)) == 1


# -- bad chat files --------------------------------------------------------------------------
def _break_line(chat: Path, line_no: int) -> None:
    lines = chat.read_text(encoding="utf-8").split("\n")
    lines[line_no - 1] = '{"name": "Sam", "mes": "unterminated'
    chat.write_text("\n".join(lines), encoding="utf-8")


@pytest.mark.parametrize("command", [["stats"], ["ingest"], ["recall"], ["ingest", "--dry-run"]])
def test_a_bad_chat_line_is_one_error_line_exit_3_and_nothing_written(chats: dict[str, Path],
                                                                       command: list[str]) -> None:
    chat = chats["group"]
    _break_line(chat, 7)
    before = sorted(p.name for p in chat.parent.iterdir())
    result = invoke(*command, chat)
    assert result.exit_code == 3
    assert result.stdout == ""
    errors = error_lines(result)
    assert len(errors) == 1
    assert f"{chat} line 7" in errors[0] and "not valid JSON" in errors[0]
    assert sum("line 7" in line for line in result.stderr.splitlines()) == 1
    assert sorted(p.name for p in chat.parent.iterdir()) == before      # no sidecar, no lock, no temp


def test_a_bad_chat_line_leaves_an_existing_sidecar_byte_identical(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    before = sidecar(chat).read_bytes()
    _break_line(chat, 3)
    for command in (["ingest"], ["recall"], ["sleep"], ["compress", "--force"], ["synopsis"], ["reflect"]):
        result = invoke(*command, chat)
        assert result.exit_code == 3, command
        assert len(error_lines(result)) == 1 and "line 3" in result.stderr
        assert sidecar(chat).read_bytes() == before, command


def test_skip_bad_lines_warns_once_and_goes_on(chats: dict[str, Path]) -> None:
    chat = chats["group"]
    _break_line(chat, 7)
    result = ok("stats", chat, "--skip-bad-lines", "--format", "json")
    assert sum("line 7" in line for line in result.stderr.splitlines()) == 1
    assert "skipped" in result.stderr
    [data] = json.loads(result.stdout)["chats"]
    raw_messages = len([ln for ln in (SAMPLES / "group.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()])
    assert data["messages"] == raw_messages - 1
    ok("ingest", chat, "--skip-bad-lines", "--quiet")
    assert sidecar(chat).exists()


@pytest.mark.parametrize("command", [["stats"], ["ingest"], ["recall"], ["export"], ["compress"],
                                     ["sleep"], ["synopsis"], ["reflect"]])
def test_a_missing_chat_file_is_a_clear_error(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nope.jsonl"
    result = invoke(*command, missing)
    assert result.exit_code == 3, result.stderr
    assert result.stdout == ""
    errors = error_lines(result)
    assert len(errors) == 1 and str(missing) in errors[0] and "no such file" in errors[0]
    assert list(tmp_path.iterdir()) == []


# -- export ----------------------------------------------------------------------------------
def test_export_has_st_bme_keys_and_null_embeddings(ingested: dict[str, Path]) -> None:
    result = ok("export", ingested["adventure"])
    assert result.stderr == ""
    assert result.stdout.startswith('{\n  "version": 3,\n')       # pretty, 2-space indent
    doc = json.loads(result.stdout)
    assert list(doc) == TOP_KEYS
    assert doc["nodes"] and doc["edges"]
    for node in doc["nodes"]:
        assert list(node)[:len(NODE_KEYS)] == NODE_KEYS
        assert node["embedding"] is None
    for edge in doc["edges"]:
        assert list(edge)[:len(EDGE_KEYS)] == EDGE_KEYS
    assert doc["lastProcessedSeq"] == stats_json(ingested["adventure"])["last_processed_seq"]


def test_export_nodes_and_edges_carry_only_st_bme_keys(ingested: dict[str, Path]) -> None:
    doc = json.loads(ok("export", ingested["adventure"]).stdout)
    assert {k for n in doc["nodes"] for k in n} <= {*NODE_KEYS, "_evolutionHistory"}
    assert {k for e in doc["edges"] for k in e} == set(EDGE_KEYS)
    full = json.loads(ok("export", ingested["adventure"], "--with-embeddings").stdout)
    assert any(k.startswith("bme") for n in full["nodes"] for k in n)  # bme-to-bme moves keep it all


def test_export_to_a_file_matches_stdout_and_with_embeddings_keeps_vectors(ingested: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    chat = ingested["group"]
    out = tmp_path / "group-export.json"
    result = ok("export", chat, "-o", out)
    assert result.stdout == ""
    assert out.read_text(encoding="utf-8") == ok("export", chat).stdout
    assert str(out) in result.stderr
    with_vectors = json.loads(ok("export", chat, "--with-embeddings").stdout)
    active = [n for n in with_vectors["nodes"] if not n["archived"]]
    assert all(isinstance(n["embedding"], list) and len(n["embedding"]) == 256 for n in active)


def test_export_of_a_chat_without_a_graph_says_so(chats: dict[str, Path]) -> None:
    result = invoke("export", chats["group"])
    assert result.exit_code != 0
    assert result.stdout == ""
    assert len(error_lines(result)) == 1 and "no graph yet" in result.stderr


# -- import ----------------------------------------------------------------------------------
def test_export_import_export_is_byte_identical(ingested: dict[str, Path], chats: dict[str, Path],
                                                tmp_path: Path) -> None:
    first = tmp_path / "first.json"
    ok("export", ingested["adventure"], "-o", first)
    target = chats["group"]                               # another chat, with no graph yet
    result = ok("import", target, first)
    assert "imported" in result.stderr and result.stdout == ""
    second = ok("export", target).stdout
    assert second.encode("utf-8") == first.read_bytes()


def test_import_refuses_a_non_empty_graph_without_force_and_keeps_a_bak_with_it(
        ingested: dict[str, Path], tmp_path: Path) -> None:
    source = tmp_path / "group.json"
    ok("export", ingested["group"], "-o", source)
    target = ingested["adventure"]
    before = sidecar(target).read_bytes()
    refused = invoke("import", target, source)
    assert refused.exit_code != 0
    assert len(error_lines(refused)) == 1 and "--force" in refused.stderr
    assert sidecar(target).read_bytes() == before
    assert not store.backup_path(sidecar(target)).exists()
    ok("import", target, source, "--force")
    assert store.backup_path(sidecar(target)).read_bytes() == before
    assert ok("export", target).stdout.encode("utf-8") == source.read_bytes()


@pytest.mark.parametrize("content", ['{"nodes": [', "[1, 2, 3]\n", '{"version": 3, "nodes": [{"id": 5}], "edges": []}',
                                     "", '{"hello": "world"}'])
def test_import_of_a_bad_file_is_exit_3_and_touches_nothing(ingested: dict[str, Path], tmp_path: Path,
                                                            content: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    target = ingested["group"]
    folder_before = sorted(p.name for p in target.parent.iterdir())
    before = sidecar(target).read_bytes()
    result = invoke("import", target, bad, "--force")
    assert result.exit_code == 3
    assert result.stdout == ""
    errors = error_lines(result)
    assert len(errors) == 1 and str(bad) in errors[0]
    assert sidecar(target).read_bytes() == before
    assert sorted(p.name for p in target.parent.iterdir()) == folder_before


def test_import_of_a_missing_file_is_exit_3(ingested: dict[str, Path], tmp_path: Path) -> None:
    result = invoke("import", ingested["group"], tmp_path / "absent.json")
    assert result.exit_code == 3
    assert len(error_lines(result)) == 1 and "absent.json" in result.stderr


def test_import_reads_the_graph_from_a_chat_files_header(ingested: dict[str, Path], chats: dict[str, Path],
                                                         tmp_path: Path) -> None:
    exported = json.loads(ok("export", ingested["group"]).stdout)
    carrier = tmp_path / "carrier.jsonl"
    lines = (SAMPLES / "adventure.jsonl").read_text(encoding="utf-8").split("\n")
    header = json.loads(lines[0])
    header["chat_metadata"]["st_bme_graph"] = exported
    carrier.write_text("\n".join([json.dumps(header, ensure_ascii=False), *lines[1:]]), encoding="utf-8")
    target = chats["chinese"]
    ok("import", target, carrier)
    assert json.loads(ok("export", target).stdout) == exported


def test_import_of_a_chat_without_a_graph_in_its_header_is_exit_3(chats: dict[str, Path]) -> None:
    result = invoke("import", chats["chinese"], chats["adventure"])
    assert result.exit_code == 3
    assert "st_bme_graph" in result.stderr and len(error_lines(result)) == 1
    assert not sidecar(chats["chinese"]).exists()


def test_import_of_a_sidecar_keeps_embeddings_of_the_same_model(ingested: dict[str, Path],
                                                                chats: dict[str, Path]) -> None:
    target = chats["group"]
    result = ok("import", target, sidecar(ingested["group"]))
    assert "vectors kept (offline:hash-256)" in result.stderr
    data = stats_json(target)
    assert data["embedded_nodes"] == data["active_nodes"] > 0


def test_import_of_an_export_drops_embeddings(ingested: dict[str, Path], chats: dict[str, Path],
                                              tmp_path: Path) -> None:
    source = tmp_path / "with.json"
    ok("export", ingested["group"], "--with-embeddings", "-o", source)
    target = chats["group"]
    ok("import", target, source, env={"BME_EMBEDDING_OFFLINE_MODEL": "use-m3"})   # another model: dropped
    assert stats_json(target)["embedded_nodes"] == 0


# -- corrupt sidecars and --graph -------------------------------------------------------------
@pytest.mark.parametrize("command", [["stats"], ["ingest"], ["recall"], ["export"], ["compress"],
                                     ["sleep"], ["reembed"]])
def test_a_corrupt_sidecar_is_exit_3_and_never_overwritten(ingested: dict[str, Path], command: list[str]) -> None:
    chat = ingested["group"]
    broken = sidecar(chat).read_bytes()[:500]
    sidecar(chat).write_bytes(broken)
    listing = sorted(p.name for p in chat.parent.iterdir())
    result = invoke(*command, chat)
    assert result.exit_code == 3
    assert result.stdout == ""
    errors = error_lines(result)
    assert len(errors) == 1 and str(sidecar(chat)) in errors[0] and "not overwrite" in errors[0]
    assert sidecar(chat).read_bytes() == broken
    assert sorted(p.name for p in chat.parent.iterdir()) == listing


def test_import_force_replaces_a_corrupt_sidecar_and_keeps_it_as_bak(ingested: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    source = tmp_path / "group.json"
    ok("export", ingested["group"], "-o", source)
    chat = ingested["adventure"]
    sidecar(chat).write_text('{"format": "bme-sidecar", "trunc', encoding="utf-8")
    refused = invoke("import", chat, source)
    assert refused.exit_code == 3
    assert sidecar(chat).read_text(encoding="utf-8") == '{"format": "bme-sidecar", "trunc'
    ok("import", chat, source, "--force")
    assert store.backup_path(sidecar(chat)).read_text(encoding="utf-8") == '{"format": "bme-sidecar", "trunc'
    assert ok("export", chat).stdout.encode("utf-8") == source.read_bytes()


def test_import_into_a_missing_chat_is_exit_3_and_creates_nothing(ingested: dict[str, Path], tmp_path: Path) -> None:
    result = invoke("import", tmp_path / "typo.jsonl", sidecar(ingested["group"]))
    assert result.exit_code == 3
    assert "typo.jsonl" in error_lines(result)[0]
    assert not (tmp_path / "typo.bme.json").exists()


def test_graph_option_keeps_the_graph_where_asked(chats: dict[str, Path], tmp_path: Path) -> None:
    chat = chats["group"]
    elsewhere = tmp_path / "graphs" / "g.json"
    elsewhere.parent.mkdir()
    ok("ingest", "--quiet", chat, "--graph", elsewhere)
    assert elsewhere.exists() and not sidecar(chat).exists()
    assert stats_json(chat, "--graph", str(elsewhere))["pending_turns"] == 0
    assert stats_json(chat)["graph_exists"] is False
    assert json.loads(ok("recall", chat, "-g", elsewhere, "-f", "json", "--no-reinforce").stdout)["nodes"]
    two = invoke("stats", chat, chats["adventure"], "--graph", elsewhere)
    assert two.exit_code == 2 and "--graph" in error_lines(two)[0]


def test_a_json_error_message_reads_cleanly(ingested: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "ctrl.json"
    bad.write_text('{"version": 3, "nodes": "a\tb"}', encoding="utf-8")
    result = invoke("import", ingested["group"], bad, "--force")
    assert result.exit_code == 3
    assert "at at" not in error_lines(result)[0]


# -- vectors of an imported ST-BME graph ---------------------------------------------------------
def _stbme_file_with_vectors(ingested: dict[str, Path], tmp_path: Path) -> Path:
    """An ST-BME export with vectors: bme's export with embeddings, without bme's model tag."""
    source = tmp_path / "with.json"
    ok("export", ingested["group"], "--with-embeddings", "-o", source)
    doc = json.loads(source.read_text(encoding="utf-8"))
    doc.pop("bmeEmbeddingModel")
    source.write_text(json.dumps(doc), encoding="utf-8")
    return source


def test_import_of_an_stbme_file_says_its_vectors_were_dropped_and_how_to_keep_them(
        ingested: dict[str, Path], chats: dict[str, Path], tmp_path: Path) -> None:
    target = chats["group"]
    result = ok("import", target, _stbme_file_with_vectors(ingested, tmp_path))
    assert "vectors dropped" in result.stderr and "does not say which model" in result.stderr
    assert "--embedding-model" in result.stderr and "bme reembed" in result.stderr
    assert "next ingest" not in result.stderr
    assert stats_json(target)["embedded_nodes"] == 0
    warned = ok("recall", target, "--query", "the harbour", "--no-reinforce")
    assert "have no vectors" in warned.stderr and "bme reembed" in warned.stderr


def test_import_with_embedding_model_keeps_the_vectors_and_recall_uses_them(
        ingested: dict[str, Path], chats: dict[str, Path], tmp_path: Path) -> None:
    target = chats["group"]
    result = ok("import", target, _stbme_file_with_vectors(ingested, tmp_path),
                "--embedding-model", "offline:hash-256")
    assert "vectors kept (offline:hash-256, 256-d)" in result.stderr
    data = stats_json(target)
    assert data["embedded_nodes"] == data["active_nodes"] > 0 and data["embedding_model"] == "offline:hash-256"
    recalled = json.loads(ok("recall", target, "--query", "the harbour", "--no-reinforce", "-f", "json").stdout)
    assert recalled["warnings"] == [] and any(n["scores"].get("vector") for n in recalled["nodes"])


def test_vectors_of_a_model_not_configured_are_compared_only_with_query_vectors(
        ingested: dict[str, Path], chats: dict[str, Path], tmp_path: Path) -> None:
    target = chats["group"]
    ok("import", target, _stbme_file_with_vectors(ingested, tmp_path), "--embedding-model", "their-model")
    plain = json.loads(ok("recall", target, "--query", "the harbour", "--no-reinforce", "-f", "json").stdout)
    assert any("their-model" in w for w in plain["warnings"])
    assert not any(n["scores"].get("vector") for n in plain["nodes"] if n["type"] != "excerpt")
    vector = store.load_graph(sidecar(target), NOW).nodes[0].embedding.tolist()
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "the harbour", "embedding": vector}) + "\n", encoding="utf-8")
    line = json.loads(ok("recall", target, "--queries", queries).stdout)
    assert line["warnings"] == [] and any(n["scores"].get("vector") for n in line["nodes"])


def test_import_refuses_an_embedding_model_the_file_contradicts(ingested: dict[str, Path],
                                                                 chats: dict[str, Path], tmp_path: Path) -> None:
    source = tmp_path / "tagged.json"
    ok("export", ingested["group"], "--with-embeddings", "-o", source)
    result = invoke("import", chats["group"], source, "--embedding-model", "another")
    assert result.exit_code == 2 and "offline:hash-256" in result.stderr
    assert not sidecar(chats["group"]).exists()
