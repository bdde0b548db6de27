"""Global options are accepted after the subcommand too, with one definition."""
from __future__ import annotations

from pathlib import Path

import pytest
import typer

from bme_cli.cli import app
from bme_cli.cli.global_flags import hoist
from cli_support import cli_env, invoke, ok  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")
SAMPLE = Path(__file__).resolve().parent.parent / "sample_chats" / "adventure.jsonl"


def _hoist(*args: str) -> list[str]:
    group = typer.main.get_command(app)
    with group.make_context("bme", ["--help"], resilient_parsing=True) as ctx:
        return hoist(group, ctx, list(args))


def test_global_options_after_the_subcommand_move_before_it():
    assert _hoist("ingest", "--no-cache", "chat.jsonl") == ["--no-cache", "ingest", "chat.jsonl"]
    assert _hoist("stats", "-v", "chat.jsonl", "--config", "c.toml") == ["--config", "c.toml", "-v", "stats",
                                                                        "chat.jsonl"]
    assert _hoist("config", "show", "--config=c.toml") == ["--config=c.toml", "config", "show"]
    assert _hoist("--no-cache", "stats", "chat.jsonl") == ["--no-cache", "stats", "chat.jsonl"]


def test_values_of_the_subcommands_own_options_and_what_follows_dashes_stay_put():
    assert _hoist("recall", "chat.jsonl", "--query", "-v") == ["recall", "chat.jsonl", "--query", "-v"]
    assert _hoist("recall", "chat.jsonl", "--", "--no-cache") == ["recall", "chat.jsonl", "--", "--no-cache"]
    assert _hoist("nonsense", "-v") == ["nonsense", "-v"]


def test_a_global_option_after_the_subcommand_takes_effect(tmp_path: Path):
    missing = tmp_path / "nowhere.toml"
    before = invoke("--config", str(missing), "stats", str(SAMPLE))
    after = invoke("stats", str(SAMPLE), "--config", str(missing))
    assert before.exit_code == after.exit_code != 0
    assert str(missing) in after.stderr and after.stderr == before.stderr
    assert ok("stats", str(SAMPLE), "-v", "--no-cache").stdout == ok("stats", str(SAMPLE)).stdout
