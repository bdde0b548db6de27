"""How a run of `bme ingest` over several chats ends: error lines and the exit code."""
from __future__ import annotations

from pathlib import Path

from bme_cli.ingest_runner import ChatOutcome, IngestRun


def _run(*outcomes: ChatOutcome) -> IngestRun:
    return IngestRun(outcomes=list(outcomes))


def test_a_run_where_no_chat_failed_has_no_failure_code_and_no_error_lines():
    run = _run(ChatOutcome(Path("a.jsonl")), ChatOutcome(Path("b.jsonl")))
    assert run.failure_exit_code() is None and run.error_lines() == []


def test_every_chat_failing_the_same_way_exits_with_that_code():
    run = _run(ChatOutcome(Path("a.jsonl"), error="down", exit_code=4),
               ChatOutcome(Path("b.jsonl"), error="down", exit_code=4))
    assert run.failure_exit_code() == 4


def test_a_mix_of_codes_or_a_partial_failure_exits_1():
    mixed = _run(ChatOutcome(Path("a.jsonl"), error="down", exit_code=4),
                 ChatOutcome(Path("b.jsonl"), error="bad line", exit_code=3))
    partial = _run(ChatOutcome(Path("a.jsonl"), error="down", exit_code=4), ChatOutcome(Path("b.jsonl")))
    assert mixed.failure_exit_code() == 1 and partial.failure_exit_code() == 1


def test_error_lines_name_the_chat_once():
    run = _run(ChatOutcome(Path("a.jsonl"), error="a.jsonl line 3: not valid JSON", exit_code=3),
               ChatOutcome(Path("b.jsonl")),
               ChatOutcome(Path("c.jsonl"), error="the server said 500", exit_code=4))
    assert run.error_lines() == ["a.jsonl line 3: not valid JSON", "c.jsonl: the server said 500"]
