"""Upkeep commands against a real HTTP model that answers with junk: a date, a loop, the prompt
copied back, invented text. Nothing is stored, the old nodes stay, and the rejections are
counted in the command's output and JSON (and in ingest's notes)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fakes import NOW
from cli_support import cli_env, error_lines, ingested, ingested_template, invoke, ok  # noqa: F401
from openai_stub import OpenAIStub, Recorded
from test_crash import _task_kind, heuristic_brain

from bme_cli.graph.store import load_graph, sidecar_path


def _fields(summary: str) -> str:
    return json.dumps({"fields": {"summary": summary, "participants": "Mira", "status": "ongoing"}})


JUNK = {
    "date": lambda rec: _fields("16 Mar 2025"),
    "loop": lambda rec: _fields("Mira walks. " * 30),
    "copy": lambda rec: _fields(str(rec.messages[-1]["content"])[:1100]),
    "instructions": lambda rec: _fields(str(rec.messages[0]["content"]).splitlines()[0][:1100]),
}


@pytest.fixture
def stub(openai_stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> OpenAIStub:
    for name, value in {"BME_CHAT_BASE_URL": openai_stub.base_url, "BME_CHAT_MAX_RETRIES": "0",
                        "BME_EMBEDDING_OFFLINE": "true"}.items():
        monkeypatch.setenv(name, value)
    return openai_stub


def _content(chat: Path) -> list:
    g = load_graph(sidecar_path(chat), NOW)
    return sorted((n.id, n.archived, repr(sorted(n.fields.items()))) for n in g.nodes)


@pytest.mark.parametrize("junk", sorted(JUNK))
def test_compress_stores_no_junk_summary_and_archives_nothing(ingested, stub, junk):  # noqa: F811
    chat = ingested["adventure"]
    before = _content(chat)
    stub.chat_content = JUNK[junk]
    result = ok("--no-cache", "compress", chat, "--force", "--format", "json")
    report = json.loads(result.stdout)
    assert report["created"] == [] and report["archived"] == 0
    assert report["rejected"] >= 1 and all("rejected" in e for e in report["errors"])
    assert _content(chat) == before
    table = ok("--no-cache", "compress", chat, "--force")
    assert f"{report['rejected']} reply(ies) rejected" in table.stderr


def test_synopsis_loop_is_rejected_and_the_old_synopsis_kept(ingested, stub):  # noqa: F811
    chat = ingested["adventure"]
    old = [n.fields["summary"] for n in load_graph(sidecar_path(chat), NOW).active_nodes("synopsis")]
    stub.chat_content = lambda rec: json.dumps({"summary": "The story continues. " * 40})
    result = invoke("--no-cache", "synopsis", chat)
    assert result.exit_code == 6 and result.stdout == ""
    [line] = error_lines(result)
    assert "synopsis reply was rejected" in line and "repeats itself" in line
    assert [n.fields["summary"] for n in load_graph(sidecar_path(chat), NOW).active_nodes("synopsis")] == old


def test_reflect_invented_text_is_rejected_and_nothing_stored(ingested, stub):  # noqa: F811
    chat = ingested["group"]
    before = _content(chat)
    invented = ("The ancient dragon of the northern mountains guards a treasure of infinite wisdom, "
                "and whoever finds it will rule the seven kingdoms forever.")
    for insight in (invented, (invented + " ") * 3):
        stub.chat_content = lambda rec, text=insight: json.dumps(
            {"insight": text, "trigger": "", "suggestion": "", "importance": 8})
        result = invoke("--no-cache", "reflect", chat)
        assert result.exit_code == 6 and "reflect reply was rejected" in error_lines(result)[0]
    assert _content(chat) == before


def test_ingest_counts_rejected_upkeep_replies_and_stores_no_junk_synopsis(tmp_path, stub, monkeypatch):
    from cli_support import copy_samples
    chat = copy_samples(tmp_path / "c", ("group",))["group"]
    monkeypatch.setenv("BME_SYNOPSIS_EVERY_N", "1")
    monkeypatch.setenv("BME_EMBEDDING_OFFLINE_MODEL", "hash")

    def brain(rec: Recorded) -> str:
        if _task_kind(rec) == "synopsis":
            return json.dumps({"summary": "16 Mar 2025"})
        return heuristic_brain(rec)

    stub.chat_content = brain
    result = ok("--no-cache", "ingest", chat)
    assert "upkeep rejected" in result.stderr and "synopsis reply was rejected" in result.stderr
    assert load_graph(sidecar_path(chat), NOW).active_nodes("synopsis") == []
