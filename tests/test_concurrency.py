"""Two bme processes on one chat's graph: the second stops with "locked by pid N" (or waits
with --wait), their writes never interleave, readers never see a half-written sidecar, and
the lock of a SIGKILLed process is taken over at once.

Real processes (`python -m bme_cli`) against the stub model of test_crash, whose latency
keeps the first process holding the lock for a few seconds.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from openai_stub import OpenAIStub
from test_crash import (SAMPLE, assert_same_content, assert_valid_sidecar, bme_command, extraction_only,
                        heuristic_brain, plan_ends, stub_env, temp_litter)
from fakes import NOW
from bme_cli.graph.store import load_graph, lock_path, sidecar_path

LATENCY = 0.04
MESSAGES = 40  # the first 40 messages of the sample: about 20 batches, a couple of seconds


@pytest.fixture(scope="module")
def stub():
    server = OpenAIStub(delay=LATENCY, chat_content=heuristic_brain).start()
    try:
        yield server
    finally:
        server.stop()


def _env(stub: OpenAIStub, home: Path) -> dict[str, str]:
    return stub_env(stub.base_url, home, **extraction_only(home))


@pytest.fixture
def env(stub, tmp_path) -> dict[str, str]:
    return _env(stub, tmp_path)


@pytest.fixture(scope="module")
def reference(stub, tmp_path_factory):
    """The graph of one uninterrupted, unshared ingest of the sample chat."""
    home = tmp_path_factory.mktemp("reference")
    chat = _copy(home, "chat")
    done = _run(chat, _env(stub, home))
    assert done.returncode == 0, done.stderr[-2000:]
    return load_graph(sidecar_path(chat), NOW)


def _copy(folder: Path, name: str) -> Path:
    """The header and first MESSAGES messages of the sample chat, in a folder of their own."""
    (folder / name).mkdir()
    chat = folder / name / SAMPLE.name
    chat.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:MESSAGES + 1]),
                    encoding="utf-8")
    return chat


def _start(chat: Path, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen(bme_command("ingest", str(chat), "--seed", "7", *args), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(chat: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(bme_command("ingest", str(chat), "--seed", "7", *args), env=env,
                          capture_output=True, text=True, timeout=120)


def _wait_for_lock_holder(chat: Path, proc: subprocess.Popen, timeout: float = 30) -> None:
    """Until the lock file names proc (it holds the lock and is working)."""
    lock = lock_path(sidecar_path(chat))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the first bme ended early: {proc.communicate()[1][-1000:]}"
        try:
            if json.loads(lock.read_text())["pid"] == proc.pid:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.02)
    raise AssertionError("the first bme never took the lock")


def _pending(stderr: str) -> int:
    """How many batches a finished `bme ingest` found to do when it had the graph."""
    if re.search(r": up to date$", stderr, re.M):
        return 0
    counts = re.findall(r": (\d+) batch\(es\) pending$", stderr, re.M)
    assert len(counts) == 1, stderr[-2000:]
    return int(counts[0])


def _finish(proc: subprocess.Popen) -> str:
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    return err


def test_second_writer_without_wait_stops_naming_the_holders_pid(env, tmp_path):
    chat = _copy(tmp_path, "shared")
    first = _start(chat, env)
    try:
        _wait_for_lock_holder(chat, first)
        second = _run(chat, env)
    finally:
        _finish(first)
    assert second.returncode == 1
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert re.fullmatch(rf"bme: .*{re.escape(SAMPLE.name[:-6])}\.bme\.json is locked by pid {first.pid} "
                        r"\(started [0-9: -]+\) \(wait for it, or pass --wait SECONDS\)", lines[0]), lines[0]
    assert second.stdout == ""
    ends, last = plan_ends(chat)
    assert assert_valid_sidecar(sidecar_path(chat), ends, last).last_processed_seq == ends[-1]


def test_second_writer_with_wait_runs_after_the_first_and_loses_nothing(env, tmp_path, reference):
    chat = _copy(tmp_path, "shared")
    first = _start(chat, env, "--until", "20")
    try:
        _wait_for_lock_holder(chat, first)
        second = _start(chat, env, "--wait", "120")
        loads = 0
        while first.poll() is None:  # readers meanwhile always see a whole sidecar
            if load_graph(sidecar_path(chat), NOW) is not None:
                loads += 1
            time.sleep(0.01)
        _finish(first)
        second_err = _finish(second)
    finally:
        for p in (first, second):
            if p.poll() is None:
                p.kill()
    assert loads > 10
    ends, last = plan_ends(chat)
    first_part = sum(1 for end in ends if end <= 20)
    # the second loaded the graph only once the first had saved its last batch
    assert _pending(second_err) == len(ends) - first_part > 0
    got = assert_valid_sidecar(sidecar_path(chat), ends, last)
    assert_same_content(got, reference)  # as if the two had run one after the other
    assert temp_litter(chat.parent) == [] and not lock_path(sidecar_path(chat)).exists()


def test_writers_started_together_with_wait_serialise(env, tmp_path, reference):
    chat = _copy(tmp_path, "shared")
    procs = [_start(chat, env, "--until", "20", "--wait", "120"), _start(chat, env, "--wait", "120")]
    try:
        pending = [_pending(_finish(p)) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    ends, last = plan_ends(chat)
    # one ran first, the other started from its result: no batch was done twice
    first_part = sum(1 for end in ends if end <= 20)
    assert pending in ([first_part, len(ends) - first_part], [0, len(ends)])
    got = assert_valid_sidecar(sidecar_path(chat), ends, last)
    # whichever took the lock first, the result is that of running them one after the other
    assert_same_content(got, reference)


def test_lock_of_a_sigkilled_writer_is_taken_over_at_once(env, tmp_path, reference):
    chat = _copy(tmp_path, "shared")
    first = _start(chat, env)
    _wait_for_lock_holder(chat, first)
    time.sleep(0.5)  # let it save a batch or two
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    lock = lock_path(sidecar_path(chat))
    assert json.loads(lock.read_text())["pid"] == first.pid  # the stale lock file is still there
    started = time.monotonic()
    second = _run(chat, env)  # no --wait: a dead holder's lock must not block anyone
    assert second.returncode == 0, second.stderr[-2000:]
    assert time.monotonic() - started < 60
    ends, last = plan_ends(chat)
    got = assert_valid_sidecar(sidecar_path(chat), ends, last)
    assert_same_content(got, reference)
    assert temp_litter(chat.parent) == [] and not lock.exists()


def test_stale_lock_file_naming_a_dead_pid_does_not_block(env, tmp_path):
    chat = _copy(tmp_path, "shared")
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = lock_path(sidecar_path(chat))
    lock.write_text(json.dumps({"pid": dead.pid, "host": os.uname().nodename, "started": 0}))
    done = _run(chat, env, "--until", "6")
    assert done.returncode == 0, done.stderr[-2000:]
    assert load_graph(sidecar_path(chat), NOW).last_processed_seq == 6 and not lock.exists()
