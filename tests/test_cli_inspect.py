"""`bme search` and `bme show --timeline / NODE_ID`: finding a memory and looking at it."""
from __future__ import annotations

import json
from pathlib import Path

from fakes import NOW
from cli_support import cli_env, error_lines, ingested, ingested_template, invoke, ok, sidecar  # noqa: F401

from bme_cli.graph import store


def _graph(chat: Path):
    return store.load_graph(sidecar(chat), NOW)


def test_search_finds_the_node_that_names_the_text_with_its_id(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    hits = json.loads(ok("search", chat, "lantern", "--format", "json").stdout)["hits"]
    assert hits and all("lantern" in json.dumps(h["fields"]).lower() for h in hits[:3])
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert _graph(chat).get(hits[0]["id"]) is not None
    only = json.loads(ok("search", chat, "lantern", "--type", "rule", "-n", "2", "--format", "json").stdout)["hits"]
    assert only and len(only) <= 2 and {h["type"] for h in only} == {"rule"}


def test_search_table_fits_80_columns_and_shows_a_pin(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    first = json.loads(ok("search", chat, "lantern", "--format", "json").stdout)["hits"][0]
    ok("node", "pin", chat, first["id"])
    out = ok("search", chat, "lantern", env={"COLUMNS": "80"}).stdout
    assert first["id"][:8] in out and "pinned" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_search_without_graph_or_text_is_a_usage_error(ingested: dict[str, Path], tmp_path: Path) -> None:
    fresh = tmp_path / "none.jsonl"
    fresh.write_text(ingested["adventure"].read_text(encoding="utf-8"), encoding="utf-8")
    assert invoke("search", fresh, "x").exit_code == 2
    assert invoke("search", ingested["adventure"], "  ").exit_code == 2


def test_timeline_lists_active_events_in_story_order_and_filters(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    rows = json.loads(ok("show", chat, "--timeline", "--format", "json").stdout)["nodes"]
    active = [n for n in _graph(chat).active_nodes("event")]
    assert len(rows) == len(active) and {r["type"] for r in rows} == {"event"}
    ends = [r["seqRange"][1] for r in rows]
    assert ends == sorted(ends)
    since = json.loads(ok("show", chat, "--since", str(ends[len(ends) // 2]), "--format", "json").stdout)["nodes"]
    assert since and all(r["seqRange"][1] >= ends[len(ends) // 2] for r in since) and len(since) < len(rows)
    who = rows[0]["who"].split(",")[0].strip()
    mine = json.loads(ok("show", chat, "--who", who, "--format", "json").stdout)["nodes"]
    assert mine and all(who.lower() in (r["who"] + r["summary"]).lower() for r in mine)
    every = json.loads(ok("show", chat, "--type", "all", "--format", "json").stdout)["nodes"]
    assert len(every) == len(_graph(chat).active_nodes())


def test_tree_shows_compressed_nodes_under_their_summary(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    rows = json.loads(ok("show", chat, "--tree", "--format", "json").stdout)["nodes"]
    top = next(r for r in rows if r["level"] > 0)
    assert top["children"] and all(c["level"] == top["level"] - 1 for c in top["children"])
    out = ok("show", chat, "--tree", env={"COLUMNS": "80"}).stdout
    assert "├──" in out and max(len(line) for line in out.splitlines()) <= 80


def test_node_view_has_fields_edges_history_and_source_messages(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    person = next(n for n in _graph(chat).active_nodes("character"))
    ok("node", "edit", chat, person.id, "--set", "state=asleep")
    d = json.loads(ok("show", chat, person.id[:8], "--format", "json").stdout)
    assert d["id"] == person.id and d["fields"]["state"] == "asleep" and d["status"] == "kept"
    assert d["user"][-1]["action"] == "edit" and d["messages"] and d["edges"]
    assert {"valid", "invalidAt", "validAt", "relation"} <= set(d["edges"][0])
    text = ok("show", chat, person.id, env={"COLUMNS": "80"}).stdout
    assert "fields" in text and "history:" in text and "user edit: state" in text
    assert "source messages:" in text and max(len(line) for line in text.splitlines()) <= 80


def test_message_view_still_works_and_does_not_mix_with_node_view(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    assert ok("show", chat, "--message", "2").stdout.startswith("#2 ")
    node = next(n for n in _graph(chat).active_nodes())
    bad = invoke("show", chat, node.id, "--message", "2")
    assert bad.exit_code == 2 and "--message" in error_lines(bad)[0]
    assert invoke("show", chat, "no-such-id").exit_code == 2
