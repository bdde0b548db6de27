"""Crash safety of the other writing commands (issue 17): `bme compress`, `bme sleep` and
`bme import` SIGKILLed at random moments leave a sidecar that loads and validates, and running
the command again ends with the graph an uninterrupted run makes (by content, as in
test_crash.py, which does the same for ingest with 20 kills).

Each command runs as a real child process with the offline providers on a graph of the
adventure sample chat; the kill lands at a random fraction of how long the uninterrupted run
took, so some land in start-up, some in the work and some in the save.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from bme_cli.graph.store import load_graph, lock_path, sidecar_path
from fakes import NOW
from cli_support import cli_env, ingested, ingested_template  # noqa: F401
from test_crash import assert_same_content, bme_command, temp_litter

KILLS = 5
COMMANDS = {
    "compress": ["compress", "{chat}", "--force"],
    "sleep": ["sleep", "{chat}", "--threshold", "0.9", "--age", "story"],
    "import": ["import", "{chat}", "{export}", "--force"],
}


def _without_wall_times(graph):  # noqa: ANN001, ANN202 - a Graph
    """The graph without the wall-clock moment sleep forgot each node at (runs differ in it)."""
    for node in graph.nodes:
        if isinstance(node.extra.get("bmeForgotten"), dict):
            node.extra["bmeForgotten"].pop("at", None)
    return graph


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_"))}
    env.update({"XDG_CONFIG_HOME": str(home / "xdg-config"), "XDG_CACHE_HOME": str(home / "xdg-cache"),
                "XDG_DATA_HOME": str(home / "xdg-data"), "BME_EMBEDDING_OFFLINE_MODEL": "hash",
                "NO_COLOR": "1"})
    return env


def _copy(chat: Path, dest: Path) -> Path:
    """The chat and its sidecar, copied into dest."""
    dest.mkdir(parents=True)
    shutil.copy(sidecar_path(chat), dest / sidecar_path(chat).name)
    return Path(shutil.copy(chat, dest / chat.name))


def _args(command: str, chat: Path, export: Path) -> list[str]:
    return bme_command(*(a.format(chat=chat, export=export) for a in COMMANDS[command]))


def _run(args: list[str], env: dict[str, str]) -> float:
    start = time.monotonic()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    return time.monotonic() - start


def _killed(args: list[str], env: dict[str, str], after: float) -> None:
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(after)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_command_killed_at_random_moments_resumes_to_the_uninterrupted_graph(ingested, tmp_path, command):
    env = _env(tmp_path)
    source = ingested["adventure"]
    export = tmp_path / "export.json"
    subprocess.run(bme_command("export", str(source), "-o", str(export)), env=env, check=True,
                   capture_output=True, timeout=120)
    reference = _copy(source, tmp_path / "reference")
    took = _run(_args(command, reference, export), env)
    want = _without_wall_times(load_graph(sidecar_path(reference), NOW))
    assert want is not None and want != load_graph(sidecar_path(source), NOW)  # the command changes something

    rng = random.Random(f"crash-{command}")
    crashed = _copy(source, tmp_path / "crashed")
    for _ in range(KILLS):
        _killed(_args(command, crashed, export), env, after=rng.uniform(0.3, 1.1) * took)
        assert load_graph(sidecar_path(crashed), NOW) is not None  # loads and validates, every time
    _run(_args(command, crashed, export), env)
    assert_same_content(_without_wall_times(load_graph(sidecar_path(crashed), NOW)), want)
    assert temp_litter(crashed.parent) == [] and not lock_path(sidecar_path(crashed)).exists()
