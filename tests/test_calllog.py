"""The call log: every model call recorded (never the key), concurrent writers, `bme log`."""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cli_support import SAMPLES, invoke, ok
from pydantic import BaseModel, SecretStr

import openai_stub as st
from bme_cli.errors import InvalidReplyError, ProviderError
from bme_cli.task import JsonTask
from bme_cli.providers.calllog import CallLog, CallRecord, chat_scope, default_data_dir, history, origin, totals
from bme_cli.providers.openai import OpenAIChatModel, OpenAIEmbedder
from bme_cli.settings import ChatEndpoint, EmbeddingEndpoint

KEY = "sk-calllog-0123456789abcdef"


class Items(BaseModel):
    items: list[str]


TASK = JsonTask(kind="recall", system="Pick.", user="Which ones?", response_model=Items, max_retries=0)


@pytest.fixture
def calls(tmp_path: Path) -> CallLog:
    return CallLog(tmp_path / "data" / "calls.sqlite3", with_text=False)


def _model(stub, calls: CallLog, **kw) -> OpenAIChatModel:
    ep = ChatEndpoint(base_url=stub.base_url + "/", api_key=SecretStr(KEY), model="m", max_retries=0, **kw)
    return OpenAIChatModel(ep, json_modes={}, calls=calls)


def test_a_call_is_recorded_with_the_same_tokens_as_the_usage(openai_stub, calls):
    openai_stub.enqueue(st.reply_json({"items": ["a"]}, usage=(120, 7)))
    model = _model(openai_stub, calls)
    with chat_scope("some/where/chat.jsonl"):
        model.complete_json(TASK)
    (rec,) = calls.query()
    assert (rec.task, rec.model, rec.outcome, rec.prompt_tokens, rec.completion_tokens) == ("recall", "m", "ok", 120, 7)
    assert rec.tokens_reported and rec.endpoint == origin(openai_stub.base_url) and "/v1" not in rec.endpoint
    assert rec.chat == str(Path("some/where/chat.jsonl").resolve()) and rec.seconds >= 0
    assert (model.usage.prompt_tokens, model.usage.completion_tokens) == (120, 7)
    assert rec.prompt is None and rec.reply is None      # text only when asked for
    model.close()


def test_without_usage_from_the_server_both_the_log_and_the_usage_use_bmes_estimate(openai_stub, calls):
    openai_stub.enqueue(st.reply_json({"items": ["a"]}, usage=None))
    model = _model(openai_stub, calls)
    model.complete_json(TASK)
    (rec,) = calls.query()
    assert not rec.tokens_reported and rec.prompt_tokens > 0
    assert (model.usage.prompt_tokens, model.usage.completion_tokens) == (rec.prompt_tokens, rec.completion_tokens)
    model.close()


def test_every_outcome_is_recorded_and_the_key_never_is(openai_stub, calls, tmp_path):
    openai_stub.enqueue(st.reject_json_schema(), st.malformed(), st.truncated('{"items": ["a", "b'))
    model = _model(openai_stub, calls)
    with pytest.raises(InvalidReplyError):
        model.complete_json(TASK)                                  # rejected, then unusable
    assert model.complete_json(TASK) == Items(items=["a"])       # cut off, one item kept
    openai_stub.enqueue(st.unauthorized(f"bad key {KEY}"))
    with pytest.raises(ProviderError):
        model.complete_json(TASK)
    outcomes = [r.outcome for r in reversed(calls.query())]
    assert outcomes == ["rejected", "unusable", "cut_off", "error"]
    model.close()
    for path in calls.path.parent.iterdir():
        assert KEY.encode() not in path.read_bytes()


def test_prompts_and_replies_are_recorded_only_when_asked_for(openai_stub, tmp_path):
    calls = CallLog(tmp_path / "calls.sqlite3", with_text=True)
    _model(openai_stub, calls).complete_json(TASK)
    (rec,) = calls.query()
    assert "Which ones?" in rec.prompt and json.loads(rec.reply)["items"]


def test_embedding_calls_are_recorded(openai_stub, calls):
    emb = OpenAIEmbedder(EmbeddingEndpoint(base_url=openai_stub.base_url, model="e"), calls=calls)
    emb.embed(["one", "two"])
    (rec,) = calls.query(task="embed")
    assert rec.model == "e" and rec.prompt_tokens > 0 and rec.outcome == "ok"


def test_an_unreachable_endpoint_is_recorded_as_an_error(calls):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = OpenAIChatModel(ChatEndpoint(base_url=f"http://127.0.0.1:{port}/v1", max_retries=0), json_modes={},
                            calls=calls)
    with pytest.raises(ProviderError):
        model.complete_json(TASK)
    (rec,) = calls.query()
    assert rec.outcome == "error" and "connection failed" in rec.detail


def test_the_log_file_is_private(calls):
    calls.record(CallRecord("x", "m", "http://h", 1, 1, 1, True, 0.1, "ok"))
    assert stat.S_IMODE(calls.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(calls.path.parent.stat().st_mode) == 0o700


_WRITER = """
import sys
from pathlib import Path
from bme_cli.providers.calllog import CallLog, CallRecord
log = CallLog(Path(sys.argv[1]))
for i in range(int(sys.argv[2])):
    log.record(CallRecord("extract", "m", "http://h", i, 1, 1, True, 0.0, "ok", detail="x" * 20000))
print(log.dropped)
"""


def test_concurrent_threads_and_processes_lose_no_record(calls):
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(calls.path), "100"], stdout=subprocess.PIPE,
                              text=True) for _ in range(2)]
    threads = [threading.Thread(target=lambda: [calls.record(CallRecord("conflict", "m", "http://h", 1, 1, 1, True,
                                                                        0.0, "ok")) for _ in range(50)])
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dropped = [int(p.communicate(timeout=60)[0]) for p in procs]
    assert dropped == [0, 0] and calls.dropped == 0
    assert len(calls.query(task="extract")) == 200 and len(calls.query(task="conflict")) == 200
    assert all(len(r.detail) == 20000 for r in calls.query(task="extract"))   # no torn record


def test_an_unwritable_log_never_fails_the_call(openai_stub, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    calls = CallLog(blocked / "calls.sqlite3")
    assert _model(openai_stub, calls).complete_json(TASK).items
    assert calls.dropped == 1


def test_filters_totals_and_history(calls):
    for i, (task, chat) in enumerate([("extract", "/a/one.jsonl"), ("extract", "/b/two.jsonl"),
                                      ("recall", "/a/one.jsonl")]):
        calls.record(CallRecord(task, "m", "http://h", 100, 10 * (i + 1), 50, True, 1.0, "ok", chat=chat,
                                time=1000.0 + i))
    assert [r.chat for r in calls.query(chat="one.jsonl")] == ["/a/one.jsonl"] * 2
    assert len(calls.query(task="extract", since=1000.5)) == 1 and len(calls.query(limit=2)) == 2
    assert totals(calls.query()) == {"calls": 3, "prompt_tokens": 300, "completion_tokens": 60, "seconds": 3.0,
                                     "outcomes": {"ok": 3}}
    past = history(calls, "extract", "m")
    assert past.calls == 2 and past.prompt_ratio == 2.0 and past.completion_mean == 15.0
    assert history(calls, "extract", "other") is None


# ------------------------------------------------------------------ through the command line

@pytest.fixture
def stub_env(openai_stub, monkeypatch, tmp_path):
    monkeypatch.setenv("BME_CHAT_BASE_URL", openai_stub.base_url)
    monkeypatch.setenv("BME_API_KEY", KEY)
    monkeypatch.setenv("BME_EMBEDDING_OFFLINE", "true")
    monkeypatch.setenv("BME_EMBEDDING_OFFLINE_MODEL", "hash")
    chat = tmp_path / "chats" / "group.jsonl"
    chat.parent.mkdir()
    chat.write_bytes((SAMPLES / "group.jsonl").read_bytes())
    return chat


def test_bme_log_lists_an_ingests_calls_with_totals(stub_env):
    ok("ingest", "--quiet", "--until", "4", stub_env)
    data = json.loads(ok("log", "--format", "json").stdout)
    assert data["log"] == str(default_data_dir() / "calls.sqlite3") and data["enabled"] is True
    extract = [c for c in data["calls"] if c["task"] == "extract"]
    assert extract and all(c["chat"] == str(stub_env.resolve()) and c["outcome"] == "ok" for c in extract)
    assert data["totals"]["calls"] == len(data["calls"]) and data["totals"]["prompt_tokens"] > 0
    only = json.loads(ok("log", "--task", "extract", "--chat", "group.jsonl", "--limit", "1",
                         "--format", "json").stdout)
    assert len(only["calls"]) == 1 and only["totals"]["calls"] == len(extract)
    assert json.loads(ok("log", "--since", "1h", "--format", "json").stdout)["totals"]["calls"] == len(data["calls"])
    table = ok("log").stdout
    assert "extract" in table and "group.jsonl" in table and "call(s)" in table
    assert KEY not in table


def test_log_text_records_prompts_for_one_run(stub_env):
    ok("--log-text", "ingest", "--quiet", "--until", "2", stub_env)
    first = len(json.loads(ok("log", "--task", "extract", "--format", "json").stdout)["calls"])
    ok("ingest", "--quiet", "--until", "4", stub_env)
    calls = json.loads(ok("--log-text", "log", "--task", "extract", "--format", "json").stdout)["calls"]
    assert first >= 1 and len(calls) > first   # newest first: the second run's calls, then the first's
    assert [c["prompt"] is not None for c in calls] == [False] * (len(calls) - first) + [True] * first


def test_call_log_off_writes_nothing(stub_env, monkeypatch):
    monkeypatch.setenv("BME_CALL_LOG", "false")
    ok("ingest", "--quiet", "--until", "2", stub_env)
    assert not (default_data_dir() / "calls.sqlite3").exists()
    assert "recording is off" in ok("log").stdout


def test_dry_run_is_calibrated_by_the_logged_calls(stub_env):
    before = ok("ingest", "--dry-run", stub_env).stdout
    assert "calibrated" not in before
    ok("ingest", "--quiet", "--until", "4", stub_env)
    after = ok("ingest", "--dry-run", stub_env).stdout
    assert "calibrated on the last" in after and "extract call(s)" in after


def test_since_takes_ages_and_dates():
    from bme_cli.cli.log_cmd import parse_since
    assert parse_since("2h", now=10_000.0) == 10_000.0 - 7200
    assert parse_since("2025-05-01") > 0
    result = invoke("log", "--since", "yesterday")
    assert result.exit_code == 2 and "--since" in result.stderr


def test_no_test_writes_to_the_real_data_dir(tmp_path):
    assert str(default_data_dir()).startswith(str(tmp_path))
    assert os.environ["XDG_DATA_HOME"].startswith(str(tmp_path))
