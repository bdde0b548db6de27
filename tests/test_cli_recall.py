"""`bme recall` through the command line: the block within its budget, the three formats,
--explain on stderr, batch mode, read-only runs, and a chat with no graph."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bme_cli.graph import store
from bme_cli.graph.model import Graph
from bme_cli.text import estimate_tokens
from fakes import NOW
from cli_support import (chats, cli_env, error_lines, ingested, ingested_template, invoke, ok, frozen_clock,  # noqa: F401
                         sidecar)

pytestmark = pytest.mark.usefixtures("cli_env")

NODE_KEYS = {"id", "type", "section", "seqRange", "score", "scores"}


def _check_shape(data: dict, graph: Graph) -> None:
    assert set(data) == {"schemaVersion", "query", "tokens", "text", "nodes", "gaps", "warnings", "rerank"}
    assert data["gaps"] == [] and isinstance(data["warnings"], list) and data["rerank"] is None
    assert isinstance(data["query"], str) and isinstance(data["text"], str)
    assert data["tokens"] == estimate_tokens(data["text"])
    by_id = {n.id: n for n in graph.nodes}
    for node in data["nodes"]:
        assert set(node) == NODE_KEYS
        if node["type"] == "excerpt":  # a quote of the chat: its id and range name the message
            seq, part = map(int, node["id"].removeprefix("message:").split(":"))
            assert node["section"] == "excerpts" and node["seqRange"] == [seq, seq] and part >= 0
            assert seq <= graph.last_processed_seq
            continue
        assert node["section"] in ("core", "recalled")
        found = by_id[node["id"]]
        # archived nodes only as detail compressed into a parent, and never as Core
        assert not found.archived or (node["section"] == "recalled" and found.parent_id is not None)
        assert isinstance(node["seqRange"], list) and len(node["seqRange"]) == 2
        assert isinstance(node["score"], (int, float)) and isinstance(node["scores"], dict)


@pytest.mark.parametrize("budget", [200, 600, 1500])
def test_markdown_block_fits_its_budget(ingested: dict[str, Path], budget: int) -> None:
    result = ok("recall", ingested["adventure"], "--budget", str(budget), "--no-reinforce")
    block = result.stdout
    assert block.startswith("[Memory - ")
    assert block.endswith("\n") and not block.endswith("\n\n")
    assert 0 < estimate_tokens(block.rstrip("\n")) <= budget
    assert "[Memory - Core]" not in result.stderr        # diagnostics only on stderr


def test_a_bigger_budget_holds_at_least_as_much(ingested: dict[str, Path]) -> None:
    small = json.loads(ok("recall", ingested["adventure"], "-b", "300", "-f", "json", "--no-reinforce").stdout)
    large = json.loads(ok("recall", ingested["adventure"], "-b", "3000", "-f", "json", "--no-reinforce").stdout)
    assert small["tokens"] <= 300 < large["tokens"] <= 3000
    assert len(large["nodes"]) > len(small["nodes"])


def test_chinese_chat_gets_chinese_headings_within_budget(ingested: dict[str, Path]) -> None:
    block = ok("recall", ingested["chinese"], "--budget", "800", "--no-reinforce").stdout
    assert estimate_tokens(block.rstrip("\n")) <= 800
    assert "当前状态记忆" in block or "情景事件记忆" in block or "[Memory - Core]" in block


def test_json_shape_and_query(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    result = ok("recall", chat, "--query", "Where is the Sunken Archive?", "--format", "json", "--no-reinforce")
    data = json.loads(result.stdout)
    _check_shape(data, store.load_graph(sidecar(chat), NOW))
    assert data["query"] == "Where is the Sunken Archive?"
    assert data["nodes"] and data["tokens"] <= 1500
    # Core rows compete with the rest once the query ranks them (which of them make it depends
    # on the sample's texts); recalled nodes and quoted excerpts answer this query
    assert {"recalled", "excerpts"} <= {n["section"] for n in data["nodes"]} <= {"core", "recalled", "excerpts"}
    markdown = ok("recall", chat, "--query", "Where is the Sunken Archive?", "--no-reinforce").stdout
    assert markdown == data["text"] + "\n"


def test_table_format_lists_the_injected_nodes_uncut(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    data = json.loads(ok("recall", chat, "-f", "json", "--no-reinforce").stdout)
    table = ok("recall", chat, "--format", "table", "--no-reinforce").stdout
    assert f"{data['tokens']}/1500 tokens" in table
    rows = [line for line in table.splitlines() if line.startswith("│")]
    assert len(rows) == len(data["nodes"])               # one line per node: nothing wrapped
    for row in rows:                                     # a long memory is shortened at a word end
        memory = row.split("│")[5].strip()
        if memory.endswith("…"):
            head = re.sub(r"^#\d+ ", "", memory[:-1].rstrip())    # an excerpt's label leads with its message
            assert re.search(re.escape(head) + r"(?![\w])", data["text"]), memory


def test_explain_goes_to_stderr_and_leaves_stdout_clean(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    plain = ok("recall", chat, "--no-reinforce").stdout
    explained = ok("recall", chat, "--explain", "--no-reinforce")
    assert explained.stdout == plain
    assert "candidates for:" in explained.stderr
    for column in ("graph", "vector", "lexical", "importance", "decay", "final", "why"):
        assert column in explained.stderr
    assert "budget" in explained.stderr or "core" in explained.stderr
    assert not [line for line in explained.stderr.splitlines() if "┃" in line and "…" in line]  # headers whole


def test_batch_queries_give_one_json_line_each_and_leave_the_sidecar_alone(ingested: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    chat = ingested["adventure"]
    queries = tmp_path / "q.jsonl"
    asked = ["Who is the Widow?", "What happened to the compass?", "Tell me about Brannoch"]
    queries.write_text("\n".join(json.dumps({"query": q}) for q in asked) + "\n\n", encoding="utf-8")
    before = sidecar(chat).read_bytes()
    result = ok("recall", chat, "--queries", queries)
    lines = result.stdout.splitlines()
    assert len(lines) == len(asked)
    graph = store.load_graph(sidecar(chat), NOW)
    for line, q in zip(lines, asked):
        data = json.loads(line)
        _check_shape(data, graph)
        assert data["query"] == q and data["tokens"] <= 1500
    assert sidecar(chat).read_bytes() == before
    single = json.loads(ok("recall", chat, "--query", asked[1], "-f", "json", "--no-reinforce").stdout)
    assert json.loads(lines[1])["text"] == single["text"]


def test_a_bad_batch_line_costs_only_its_own_answer_and_ends_in_exit_3(ingested: dict[str, Path],
                                                                       tmp_path: Path) -> None:
    chat = ingested["group"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "fine"}\n{"question": "wrong key"}\nnot json\n{"query": "also fine"}\n',
                   encoding="utf-8")
    result = invoke("recall", chat, "--queries", bad)
    assert result.exit_code == 3
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o.get("query") for o in out] == ["fine", None, None, "also fine"]   # one line per input line
    assert [o.get("line") for o in out[1:3]] == [2, 3] and all(o["error"] for o in out[1:3])
    assert len(error_lines(result)) == 1 and "2 of 4" in error_lines(result)[0]
    assert "line 2" in result.stderr and "line 3" in result.stderr
    both = invoke("recall", chat, "--queries", bad, "--query", "x")
    assert both.exit_code == 2


def test_no_reinforce_leaves_the_sidecar_byte_identical_but_a_plain_recall_saves(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    before = sidecar(chat).read_bytes()
    ok("recall", chat, "--no-reinforce")
    ok("recall", chat, "--no-reinforce", "--format", "json", "--explain")
    assert sidecar(chat).read_bytes() == before
    data = json.loads(ok("recall", chat, "--format", "json").stdout)
    after = store.load_graph(sidecar(chat), NOW)
    assert after.last_recall_result == [n["id"] for n in data["nodes"] if n["type"] != "excerpt"]
    assert sidecar(chat).read_bytes() != before


def test_recall_on_a_chat_without_a_graph_is_empty_and_writes_nothing(chats: dict[str, Path]) -> None:
    chat = chats["group"]
    listing = sorted(p.name for p in chat.parent.iterdir())
    result = ok("recall", chat)
    assert result.stdout == ""
    assert "no graph yet" in result.stderr
    data = json.loads(ok("recall", chat, "--format", "json").stdout)
    assert data["nodes"] == [] and data["text"] == "" and data["tokens"] == 0
    assert sorted(p.name for p in chat.parent.iterdir()) == listing


@pytest.mark.usefixtures("frozen_clock")
def test_a_seed_makes_recall_reproducible(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    env = {"BME_ENABLE_PROB_RECALL": "true", "BME_PROB_RECALL_CHANCE": "0.5"}

    def chosen(seed: int) -> str:
        return ok("recall", chat, "--seed", str(seed), "--no-reinforce", "-f", "json", env=env).stdout

    assert chosen(7) == chosen(7)
    assert len({chosen(s) for s in range(6)}) > 1      # the chance really is drawn, so the seed made the runs equal


@pytest.mark.usefixtures("frozen_clock")
def test_a_seeded_batch_answers_each_query_as_if_it_were_asked_alone(ingested: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    chat = ingested["adventure"]
    env = {"BME_ENABLE_PROB_RECALL": "true", "BME_PROB_RECALL_CHANCE": "0.5"}
    line = json.dumps({"query": "Who is the Widow?"}) + "\n"

    def answers(times: int) -> list:
        queries = tmp_path / "q.jsonl"
        queries.write_text(line * times, encoding="utf-8")
        return ok("recall", chat, "--seed", "7", "--queries", queries, env=env).stdout.splitlines()

    assert answers(8) == answers(1) * 8   # no query draws on where the ones before it left the stream


def test_the_block_quotes_the_chat_beside_the_nodes_and_the_setting_turns_it_off(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    query = ("--query", "What did the Widow take from Brannoch's office?", "--no-reinforce")
    block = ok("recall", chat, *query).stdout
    assert "## Excerpts from the chat" in block and "[2" in block.split("## Excerpts from the chat")[1]
    quotes = block.split("## Excerpts from the chat\n")[1].splitlines()
    assert any(line.startswith(("Mira: ", "Rowan: ")) for line in quotes)
    explained = ok("recall", chat, *query, "--explain", env={"COLUMNS": "200"})
    assert "excerpts: quoted" in explained.stderr
    strict = ok("recall", chat, *query, env={"BME_EXCERPTS": "false", "BME_QUERY_CELLS": "false"}).stdout
    assert "Excerpts" not in strict and strict.startswith("[Memory - ")
    zh = ok("recall", ingested["chinese"], "--query", "苏晚晴中了什么毒？", "--no-reinforce").stdout
    assert "## 对话原文摘录" in zh
