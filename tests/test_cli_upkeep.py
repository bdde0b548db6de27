"""`bme compress`, `bme sleep` (and --restore), `bme synopsis`, `bme reflect` and `bme reembed`
through the command line, on an ingested sample chat, offline."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bme_cli.graph import store
from fakes import NOW
from cli_support import (chats, cli_env, error_lines, ingested, ingested_template, invoke, ok,  # noqa: F401
                         sidecar, stats_json)

pytestmark = pytest.mark.usefixtures("cli_env")


def _active_ids(chat: Path) -> set[str]:
    return {n.id for n in store.load_graph(sidecar(chat), NOW).nodes if not n.archived}


def test_compress_dry_run_plans_chunks_and_changes_nothing(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    before = sidecar(chat).read_bytes()
    result = ok("compress", chat, "--force", "--dry-run")
    assert "(dry run)" in result.stdout
    plan = json.loads(ok("compress", chat, "--force", "--dry-run", "--format", "json").stdout)
    assert plan["dry_run"] is True and plan["chunks"] and plan["created"] == []
    assert f"{len(plan['chunks'])} chunk(s) would be compressed" in result.stderr
    assert sidecar(chat).read_bytes() == before


def test_compress_force_does_what_the_dry_run_planned(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    plan = json.loads(ok("compress", chat, "--force", "--dry-run", "-f", "json").stdout)
    active_before = stats_json(chat)["active_nodes"]
    done = json.loads(ok("compress", chat, "--force", "-f", "json").stdout)
    assert done["dry_run"] is False
    # planned higher levels name their future children "(planned ...)": compare the shapes
    assert [(c["type"], c["level"], len(c["children"]), c["seq_range"]) for c in done["chunks"]] == \
        [(c["type"], c["level"], len(c["children"]), c["seq_range"]) for c in plan["chunks"]]
    assert len(done["created"]) == len(plan["chunks"]) - done["skipped"]
    after = stats_json(chat)
    assert after["active_nodes"] == active_before + len(done["created"]) - done["archived"]
    graph = store.load_graph(sidecar(chat), NOW)
    by_id = {n.id: n for n in graph.nodes}
    for chunk in done["chunks"]:
        if chunk["new_id"]:
            assert all(by_id[c].archived and by_id[c].parent_id == chunk["new_id"] for c in chunk["children"])
    again = json.loads(ok("compress", chat, "-f", "json").stdout)
    assert again["created"] == []                     # nothing left over the thresholds


def test_compress_of_a_chat_without_a_graph_is_an_error(chats: dict[str, Path]) -> None:
    for command in (["compress"], ["sleep"], ["synopsis"], ["reflect"], ["reembed"]):
        result = invoke(*command, chats["group"])
        assert result.exit_code != 0, command
        assert result.stdout == ""
        assert len(error_lines(result)) == 1 and "no graph yet" in result.stderr
        assert not sidecar(chats["group"]).exists()


def test_sleep_dry_run_lists_what_would_be_forgotten_and_changes_nothing(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    before = sidecar(chat).read_bytes()
    report = json.loads(ok("sleep", chat, "--threshold", "0.9", "--dry-run", "-f", "json").stdout)
    assert report["dry_run"] is True and report["archived"] == 0
    assert report["items"] and all(item["retention"] < 0.9 for item in report["items"])
    table = ok("sleep", chat, "--threshold", "0.9", "--dry-run")
    assert "would be forgotten" in table.stdout
    assert f"{len(report['items'])} would be forgotten" in table.stderr
    for item in report["items"]:
        assert item["id"][:8] in table.stdout
    assert sidecar(chat).read_bytes() == before


def test_sleep_forgets_what_the_dry_run_listed_and_restore_brings_it_back(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    active_before = _active_ids(chat)
    planned = json.loads(ok("sleep", chat, "--threshold", "0.9", "--dry-run", "-f", "json").stdout)
    done = json.loads(ok("sleep", chat, "--threshold", "0.9", "-f", "json").stdout)
    forgotten = {item["id"] for item in done["items"]}
    assert forgotten == {item["id"] for item in planned["items"]}
    assert done["archived"] == len(forgotten) > 0
    assert _active_ids(chat) == active_before - forgotten
    listed = ok("sleep", chat, "--restore", "--dry-run")
    assert {line.split("\t")[0] for line in listed.stdout.splitlines()} == forgotten
    assert _active_ids(chat) == active_before - forgotten      # the listing wrote nothing
    restored = ok("sleep", chat, "--restore")
    assert f"restored {len(forgotten)}" in restored.stderr
    assert _active_ids(chat) == active_before


def test_sleep_restore_id_brings_back_one_node(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    done = json.loads(ok("sleep", chat, "--threshold", "0.9", "-f", "json").stdout)
    one = done["items"][0]["id"]
    ok("sleep", chat, "--restore-id", one)
    active = _active_ids(chat)
    assert one in active
    assert not ({item["id"] for item in done["items"][1:]} & active)


def test_sleep_at_the_default_threshold_keeps_a_fresh_graph(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    before = _active_ids(chat)
    result = ok("sleep", chat)
    assert "0 forgotten" in result.stderr
    assert _active_ids(chat) == before


def test_bad_sleep_age_is_a_usage_error(ingested: dict[str, Path]) -> None:
    before = sidecar(ingested["group"]).read_bytes()
    result = invoke("sleep", ingested["group"], "--age", "geologic")
    assert result.exit_code == 2 and len(error_lines(result)) == 1
    assert sidecar(ingested["group"]).read_bytes() == before


def test_synopsis_prints_the_summary_and_stores_one_synopsis_node(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    result = ok("synopsis", chat)
    text = result.stdout.strip()
    assert len(text) > 40 and "\n" not in text
    graph = store.load_graph(sidecar(chat), NOW)
    synopses = [n for n in graph.nodes if n.type == "synopsis" and not n.archived]
    assert len(synopses) == 1
    assert synopses[0].fields["summary"] == text
    ok("synopsis", chat)
    assert stats_json(chat)["active_by_type"]["synopsis"] == 1     # refreshed, not duplicated


def test_synopsis_of_the_chinese_chat_is_chinese(ingested: dict[str, Path]) -> None:
    text = ok("synopsis", ingested["chinese"]).stdout
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in text) > len(text) / 4


def test_reflect_prints_an_insight_and_adds_a_reflection(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    before = stats_json(chat)["active_by_type"]["reflection"]
    result = ok("reflect", chat)
    assert result.stdout.startswith("insight: ")
    assert stats_json(chat)["active_by_type"]["reflection"] == before + 1


def test_reflect_that_stores_nothing_says_why_and_is_no_usage_error(ingested: dict[str, Path]) -> None:
    """The Chinese sample has events enough; the heuristic finds no insight in them."""
    chat = ingested["chinese"]
    assert stats_json(chat)["active_by_type"]["event"] >= 2
    result = invoke("reflect", chat)
    assert result.exit_code == 0 and result.stdout == ""
    assert "nothing stored: the model had no insight to add" in result.stderr
    assert "not enough" not in result.stderr


def test_reembed_replaces_every_vector_with_the_configured_model(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    result = ok("reembed", chat)
    data = stats_json(chat)
    assert f"re-embedded {data['active_nodes']}" in result.stderr
    assert data["embedded_nodes"] == data["active_nodes"]
    assert data["embedding_model"] == "offline:hash-256"


def test_nothing_to_do_prints_no_empty_table(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    compressed = ok("compress", chat)
    assert compressed.stdout == "" and "nothing to compress yet" in compressed.stderr
    slept = ok("sleep", chat, "--threshold", "0", "--dry-run")
    assert slept.stdout == "" and "0 would be forgotten" in slept.stderr
