"""Issue 17 (10): `ingest --dry-run` and `stats` on a very large chat stay linear and bounded.

Time is measured by benchmarks/bench_big_chat.py, not here; these tests pin the behaviour
that makes it so: a dry run's estimates equal the prompts ingest would build (measured
without building them), and the dry-run table of a long backlog lists a bounded number of rows.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bme_cli import render
from bme_cli.chat import read_chat
from bme_cli.graph import store
from bme_cli.graph.model import Graph
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.extract import extract_task
from bme_cli.memory.ingest import plan_for
from bme_cli.memory.prompt_size import PromptSizer
from bme_cli.settings import MemorySettings
from bme_cli.text import estimate_tokens
from fakes import NOW
from cli_support import chats, cli_env, ok, sidecar  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")


@pytest.mark.parametrize("name", ["adventure", "chinese", "group"])
@pytest.mark.parametrize("graph_from", ["empty", "half ingested"])
def test_the_sizer_gives_exactly_the_estimate_of_the_prompt_extract_would_send(name, graph_from, chats):
    chat_path = chats[name]
    if graph_from != "empty":
        ok("ingest", "--quiet", "--until", "12", chat_path)
    graph = store.load_graph(sidecar(chat_path), NOW) or Graph()
    chat = read_chat(chat_path)
    settings = MemorySettings()
    ctx = MemoryContext(chat=None, embedder=None, settings=settings,  # type: ignore[arg-type]
                        language="zh" if name == "chinese" else "en")
    names = {"user_name": chat.user_name, "character_name": chat.character_name}
    sizer = PromptSizer(graph, ctx, **names)
    batches = plan_for(chat, graph, settings)
    assert batches
    for batch in batches:
        task = extract_task(graph, batch, ctx, **names)
        assert sizer.tokens(batch) == estimate_tokens(task.system) + estimate_tokens(task.user)


def _long_chat(path: Path, turns: int) -> Path:
    lines = [{"user_name": "Ana", "character_name": "Bo", "chat_metadata": {}}]
    for i in range(turns):
        lines += [{"name": "Ana", "is_user": True, "mes": f"Where now, {i}?"},
                  {"name": "Bo", "is_user": False, "mes": f"Bo walks to the gate number {i}."}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def test_a_long_backlogs_dry_run_lists_its_first_and_last_batches_and_counts_all(tmp_path):
    chat = _long_chat(tmp_path / "long.jsonl", 300)
    out = ok("ingest", "--dry-run", chat, env={"COLUMNS": "80"}).stdout
    rows = [line for line in out.splitlines() if "long.jsonl" in line]
    assert len(rows) == render.DRY_RUN_ROWS
    assert f"{300 - render.DRY_RUN_ROWS} more" in out and "300 batch(es)" in out
    assert "#1-#1" in out and "#599-#599" in out  # the first and the last batch
    assert all(len(line) <= 80 for line in out.splitlines() if "│" in line)


def test_a_read_keeping_only_the_first_texts_counts_everything_the_same(tmp_path):
    chat_path = _long_chat(tmp_path / "long.jsonl", 300)
    full, counted = read_chat(chat_path), read_chat(chat_path, keep_text=200)
    assert [m.text for m in counted.messages[:200]] == [m.text for m in full.messages[:200]]
    assert all(m.raw == m.text == "" for m in counted.messages[200:])  # not held: stats only counts
    assert [(m.seq, m.raw_name, m.is_user, m.is_system) for m in counted.messages] == \
        [(m.seq, m.raw_name, m.is_user, m.is_system) for m in full.messages]
    assert (counted.user_name, counted.character_name) == (full.user_name, full.character_name)


@pytest.mark.parametrize("name", ["adventure", "chinese", "group"])
def test_stats_reads_the_language_sample_and_reports_what_a_full_read_does(name, chats, tmp_path):
    from bme_cli import workflow
    from bme_cli.graph.schema import Schema
    from bme_cli.memory.stats import collect_stats
    from bme_cli.settings import load_settings
    chat_path = chats[name]
    ok("ingest", "--quiet", "--until", "20", chat_path)
    [shown] = json.loads(ok("stats", chat_path, "--format", "json").stdout)["chats"]
    full = read_chat(chat_path, story=workflow.story_options(load_settings()))
    graph = store.load_graph(sidecar(chat_path), NOW)
    want = collect_stats(full, graph, Schema.default(), graph_path=str(sidecar(chat_path)), graph_exists=True,
                         language=workflow.chat_language(full, "auto"),
                         include_greeting=load_settings().memory.include_greeting).as_dict()
    for key in ("messages", "hidden_messages", "assistant_turns", "pending_turns", "core_tokens"):
        assert shown[key] == want[key], key
