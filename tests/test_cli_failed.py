"""`bme ingest` against a real HTTP model that cannot answer one batch: the batch is recorded,
the rest extracted, the run exits 1 naming it; stats and recall show the gap; --retry-failed
and --on-fail heuristic fill it; a rebuild before it drops the record."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fakes import NOW
from cli_support import copy_samples, error_lines, invoke, ok, stats_json
from openai_stub import OpenAIStub, Recorded
from test_crash import _task_kind, extraction_only, heuristic_brain, plan_ends

from bme_cli.graph.store import load_graph, sidecar_path

_RANGE = re.compile(r"## Dialogue to extract \(messages #(-?\d+) to #(-?\d+)\)")


class FailOne:
    """heuristic_brain, except that every extraction prompt ending at `end` gets prose, not JSON."""

    def __init__(self, end: int | None):
        self.end, self.failed = end, 0

    def __call__(self, rec: Recorded) -> str:
        m = _RANGE.search(str(rec.messages[-1].get("content")))
        if _task_kind(rec) == "extract" and m and int(m[2]) == self.end:
            self.failed += 1
            return "I am sorry, I cannot summarise this part of the story."
        return heuristic_brain(rec)


@pytest.fixture
def stub(openai_stub: OpenAIStub) -> OpenAIStub:
    return openai_stub


@pytest.fixture
def group(tmp_path: Path, stub: OpenAIStub, monkeypatch: pytest.MonkeyPatch) -> Path:
    env = {"BME_CHAT_BASE_URL": stub.base_url, "BME_CHAT_MAX_RETRIES": "0",
           "BME_EMBEDDING_OFFLINE": "true", "BME_EMBEDDING_OFFLINE_MODEL": "hash",
           **extraction_only(tmp_path)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return copy_samples(tmp_path / "chats", ("group",))["group"]


def _second_batch_end(chat: Path) -> tuple[int, int]:
    ends, _ = plan_ends(chat)
    return ends[0] + 1, ends[1]


def test_a_batch_the_model_cannot_answer_is_recorded_and_named_and_the_rest_extracted(group, stub):
    first_after, end = _second_batch_end(group)
    stub.chat_content = brain = FailOne(end)
    result = invoke("--no-cache", "ingest", group)
    assert result.exit_code == 1, result.stderr
    [line] = error_lines(result)
    assert str(group) in line and f"#{end}" in line and "recorded as failed" in line
    assert "--retry-failed" in line and brain.failed >= 1
    assert "│ gaps" in result.stderr  # the summary table's status
    stats = stats_json(group)
    [record] = stats["failed_batches"]
    assert record["endSeq"] == end and record["startSeq"] >= first_after and record["reason"]
    assert stats["pending_turns"] >= 1
    assert stats["last_processed_seq"] == load_graph(sidecar_path(group), NOW).last_processed_seq > end
    table = ok("stats", group, env={"COLUMNS": "80"}).stdout
    assert "failed batches" in table and f"#{end}" in table
    recall = json.loads(ok("recall", group, "--format", "json", "--no-reinforce").stdout)
    assert recall["gaps"] == [{"messages": [record["startSeq"], end]}]
    explained = ok("recall", group, "--explain", "--no-reinforce", env={"COLUMNS": "80"})
    assert "the graph has gaps" in explained.stderr and f"#{end}" in explained.stderr
    # a plain rerun does not retry the batch, and still says the graph has a gap
    stub.chat_content = FailOne(None)
    before = len(stub.requests_to("chat"))
    rerun = invoke("--no-cache", "ingest", group)
    assert rerun.exit_code == 1 and "(earlier run)" in error_lines(rerun)[0]
    assert len(stub.requests_to("chat")) == before


def test_retry_failed_with_a_model_that_answers_fills_the_batch(group, stub):
    _, end = _second_batch_end(group)
    stub.chat_content = FailOne(end)
    invoke("--no-cache", "ingest", group)
    prompt_then = [str(r.messages[-1]["content"]) for r in stub.requests_to("chat")
                   if (m := _RANGE.search(str(r.messages[-1]["content"]))) and int(m[2]) == end][0]
    stub.chat_content = FailOne(None)
    before = len(stub.requests_to("chat"))
    ok("--no-cache", "ingest", "--retry-failed", group)
    retried = [str(r.messages[-1]["content"]) for r in stub.requests_to("chat")[before:]]
    assert len(retried) == 1 and _RANGE.search(retried[0])[0] == _RANGE.search(prompt_then)[0]
    # the same context window: the dialogue part of the prompt is the same text
    dialogue = lambda p: p.split("## Current graph")[0]  # noqa: E731
    assert dialogue(retried[0]) == dialogue(prompt_then)
    stats = stats_json(group)
    assert stats["failed_batches"] == [] and stats["pending_turns"] == 0
    assert json.loads(ok("recall", group, "--format", "json", "--no-reinforce").stdout)["gaps"] == []


def test_on_fail_heuristic_fills_the_batch_offline_and_records_that(group, stub):
    _, end = _second_batch_end(group)
    stub.chat_content = FailOne(end)
    result = ok("--no-cache", "ingest", "--on-fail", "heuristic", group)
    assert "1 batch(es) the model could not answer were filled by the offline heuristic" in result.stderr
    stats = stats_json(group)
    assert stats["failed_batches"] == [] and stats["pending_turns"] == 0
    [filled] = stats["filled_batches"]
    assert filled["endSeq"] == end and filled["by"] == "heuristic"
    graph = load_graph(sidecar_path(group), NOW)
    assert any(n.seq_range[1] == end for n in graph.active_nodes("event"))
    assert "filled offline" in ok("stats", group, env={"COLUMNS": "80"}).stdout


def test_rebuild_from_before_the_failed_batch_drops_its_record(group, stub):
    first_after, end = _second_batch_end(group)
    stub.chat_content = FailOne(end)
    invoke("--no-cache", "ingest", group)
    stub.chat_content = FailOne(None)
    ok("--no-cache", "ingest", "--rebuild-from", str(first_after - 1), group)
    assert stats_json(group)["failed_batches"] == []


def test_on_fail_must_be_record_or_heuristic(group):
    result = invoke("ingest", "--on-fail", "skip", group)
    assert result.exit_code == 2 and "--on-fail" in error_lines(result)[0]


def test_export_says_the_failed_batches_do_not_travel_and_stays_st_bme(group, stub):
    _, end = _second_batch_end(group)
    stub.chat_content = FailOne(end)
    invoke("--no-cache", "ingest", group)
    result = ok("export", group)
    assert f"#{end}" in result.stderr and "ST-BME will count" in result.stderr
    assert "failedBatches" not in result.stdout and "bme" not in json.loads(result.stdout)


def test_dry_run_with_retry_failed_lists_the_failed_batch_first_and_calls_nothing(group, stub):
    _, end = _second_batch_end(group)
    stub.chat_content = FailOne(end)
    invoke("--no-cache", "ingest", group)
    before = len(stub.requests)
    plain = ok("ingest", "--dry-run", group).stdout
    retry = ok("ingest", "--dry-run", "--retry-failed", group).stdout
    record = stats_json(group)["failed_batches"][0]
    span = f"#{record['startSeq']}-#{record['endSeq']}"
    assert span not in plain and "0 batch(es)" in plain
    assert span in retry and "1 batch(es)" in retry and len(stub.requests) == before
