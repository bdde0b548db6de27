"""Every `--format json` output has one shape (docs/json.md): an object, schemaVersion first,
lists under a named key whatever the number of chats, viewers or hits."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bme_cli.render import JSON_SCHEMA_VERSION
from cli_support import cli_env, ingested, ingested_template, ok  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")

STATS_KEYS = {"chat", "graph_path", "graph_exists", "messages", "hidden_messages", "assistant_turns",
              "last_processed_seq", "pending_turns", "total_nodes", "active_nodes", "archived_nodes",
              "active_by_type", "archived_by_type", "edges_valid", "edges_invalidated", "embedded_nodes",
              "embedding_model", "embedding_dim", "core_tokens", "extraction_count", "chat_bytes",
              "graph_bytes", "levels", "failed_batches", "filled_batches"}
RECALL_KEYS = {"query", "tokens", "text", "nodes", "gaps", "warnings", "rerank"}


def _doc(*args: str | Path) -> dict:
    doc = json.loads(ok(*args, "--format", "json").stdout)
    assert isinstance(doc, dict) and next(iter(doc)) == "schemaVersion"
    assert doc["schemaVersion"] == JSON_SCHEMA_VERSION == 1
    return doc


def _keys(doc: dict) -> set[str]:
    return set(doc) - {"schemaVersion"}


def test_stats_is_a_list_of_chats_for_one_chat_and_for_three(ingested: dict[str, Path]) -> None:
    one, three = _doc("stats", ingested["group"]), _doc("stats", *ingested.values())
    assert _keys(one) == _keys(three) == {"chats"}
    assert len(one["chats"]) == 1 and len(three["chats"]) == 3
    assert all(set(c) == STATS_KEYS for c in three["chats"])


def test_recall_and_its_viewers(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    assert _keys(_doc("recall", chat, "--no-reinforce")) == RECALL_KEYS
    each = _doc("recall", chat, "--each-member", "--no-reinforce")
    assert _keys(each) == {"viewers"} and each["viewers"]
    assert all(set(v) == RECALL_KEYS | {"viewer"} for v in each["viewers"])


def test_batch_recall_lines_carry_the_version(ingested: dict[str, Path], tmp_path: Path) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"query": "Who is Pip?"}\n{"query": "Where are we?"}\n', encoding="utf-8")
    lines = ok("recall", ingested["group"], "--queries", queries).stdout.splitlines()
    docs = [json.loads(line) for line in lines]
    assert len(docs) == 2 and all(d["schemaVersion"] == 1 and RECALL_KEYS <= set(d) for d in docs)


def test_show_messages_timeline_and_one_node(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    messages = _doc("show", chat)
    assert _keys(messages) == {"chat", "messages"} and messages["messages"][0]["seq"] == 0
    for flag in ("--timeline", "--tree"):
        timeline = _doc("show", chat, flag)
        assert _keys(timeline) == {"chat", "type", "nodes"} and timeline["nodes"]
    node_id = timeline["nodes"][0]["id"]
    node = _doc("show", chat, node_id[:8])
    assert node["id"] == node_id and {"fields", "edges", "messages"} <= set(node)


def test_search_hits_are_listed_even_when_there_is_one(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    some = _doc("search", chat, "lantern")
    one = _doc("search", chat, "lantern", "-n", "1")
    assert _keys(some) == _keys(one) == {"query", "hits"}
    assert len(some["hits"]) > 1 and len(one["hits"]) == 1 and one["query"] == "lantern"


def test_upkeep_and_tools(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    assert _keys(_doc("compress", chat, "--dry-run")) == {"dry_run", "created", "archived", "edges_reattached",
                                                          "skipped", "rejected", "errors", "chunks"}
    assert _keys(_doc("sleep", chat, "--dry-run")) == {"dry_run", "threshold", "age", "evaluated", "archived",
                                                       "items"}
    assert _keys(_doc("cache", "stats")) == {"dir", "entries", "bytes"}
    assert _keys(_doc("log")) == {"log", "enabled", "totals", "calls"}
    assert {"ok", "checks"} <= _keys(_doc("doctor"))
