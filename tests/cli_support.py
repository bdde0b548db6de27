"""Shared helpers for the `bme` command-line tests (tests/test_cli_*.py).

Every command runs in-process through Typer's CliRunner, whose result keeps stdout and
stderr apart. The offline providers answer, with the hashing embedder for speed. One
session-wide ingest of the three sample chats is copied into each test that needs graphs.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
import pytest
from typer.testing import CliRunner, Result

from bme_cli.cli import app

SAMPLES = Path(__file__).resolve().parent.parent / "sample_chats"
CHATS = ("adventure", "chinese", "group")
FAST_ENV = {"BME_EMBEDDING_OFFLINE_MODEL": "hash"}

_runner = CliRunner()


def invoke(*args: str | Path, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    """Run `bme ARGS...` in-process; every run must end without a Python traceback."""
    result = _runner.invoke(app, [str(a) for a in args], env=env, input=input)
    assert_no_traceback(result)
    return result


def assert_no_traceback(result: Result) -> None:
    """A command may fail, but only with its own message and exit code, never a crash."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"bme crashed: {result.exception!r}\nstderr: {result.stderr}") \
            from result.exception
    assert "Traceback" not in result.stdout
    assert "Traceback" not in result.stderr
    # not a terminal: no colour codes or cursor movement in either stream
    assert "\x1b[" not in result.stdout and "\x1b[" not in result.stderr


def ok(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    """Run a command that must succeed."""
    result = invoke(*args, env=env)
    assert result.exit_code == 0, f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """One `now` for every run of a test: time decay moves recall's scores by 0.0001 about every
    40 s on a fresh graph, so two runs seconds apart could differ in the fourth decimal."""
    fixed = time.time()
    monkeypatch.setattr(time, "time", lambda: fixed)


def error_lines(result: Result) -> list[str]:
    """The `bme: error: ...` lines of a run's stderr."""
    return [line for line in result.stderr.splitlines() if line.startswith("bme: error:")]


def stats_json(chat: Path, *extra: str) -> dict:
    """`bme stats CHAT --format json`, parsed."""
    [one] = json.loads(ok("stats", chat, "--format", "json", *extra).stdout)["chats"]
    return one


def copy_samples(dest: Path, names: tuple[str, ...] = CHATS) -> dict[str, Path]:
    """Copies of the sample chats (no graphs) in dest, by name."""
    dest.mkdir(parents=True, exist_ok=True)
    return {n: Path(shutil.copy(SAMPLES / f"{n}.jsonl", dest / f"{n}.jsonl")) for n in names}


def point_chat_at_nothing(monkeypatch: pytest.MonkeyPatch) -> int:
    """Send chat calls (no retries) to a port on 127.0.0.1 nobody listens on; returns the port."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("BME_CHAT_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("BME_CHAT_MAX_RETRIES", "0")
    monkeypatch.setenv("BME_EMBEDDING_OFFLINE", "true")
    return port


def sidecar(chat: Path) -> Path:
    """Where bme keeps a chat's graph by default."""
    return chat.with_name(chat.stem + ".bme.json")


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast offline embedder (conftest already cleared BME_* and moved XDG dirs)."""
    for name, value in FAST_ENV.items():
        monkeypatch.setenv(name, value)


_TEMPLATE: list[Path] = []   # filled once per session: each test module imports the fixture
                             # below, which gives it its own copy of a session fixture


@pytest.fixture(scope="session")
def ingested_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three sample chats ingested once with the offline providers."""
    if not _TEMPLATE:
        _TEMPLATE.append(_ingest_template(tmp_path_factory.mktemp("ingested")))
    return _TEMPLATE[0]


def _ingest_template(root: Path) -> Path:
    chats = copy_samples(root / "chats")
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith(("BME_", "OPENAI_")):
                mp.delenv(name)
        mp.setenv("XDG_CONFIG_HOME", str(root / "xdg-config"))
        mp.setenv("XDG_CACHE_HOME", str(root / "xdg-cache"))
        mp.setenv("XDG_DATA_HOME", str(root / "xdg-data"))
        for name, value in FAST_ENV.items():
            mp.setenv(name, value)
        ok("ingest", "--quiet", *chats.values())
    return root / "chats"


@pytest.fixture
def ingested(ingested_template: Path, tmp_path: Path, cli_env: None) -> dict[str, Path]:
    """This test's own copy of the ingested sample chats and their sidecars, by name."""
    dest = tmp_path / "chats"
    shutil.copytree(ingested_template, dest)
    return {n: dest / f"{n}.jsonl" for n in CHATS}


@pytest.fixture
def chats(tmp_path: Path, cli_env: None) -> dict[str, Path]:
    """This test's own copies of the sample chats, with no graphs yet."""
    return copy_samples(tmp_path / "fresh")
