"""--help names values plainly (CHAT, PATHS..., N, PATH, TEXT), never Python types or braces;
`bme --help`'s stored text is what Typer renders."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import typer.main

from bme_cli.cli import app
from cli_support import ok

PLACEHOLDER = re.compile(r"<(list|int|float|str|path)[^>]*>|\{[a-z_]+\}|\{[A-Z_.]+\}")


def _commands() -> list[tuple[str, ...]]:
    group = typer.main.get_command(app)
    names: list[tuple[str, ...]] = []
    for name, cmd in group.commands.items():
        names.append((name,))
        names += [(name, sub) for sub in getattr(cmd, "commands", {})]
    return names


@pytest.mark.parametrize("command", _commands(), ids=" ".join)
def test_help_has_no_type_placeholders(command: tuple[str, ...]) -> None:
    text = ok(*command, "--help").stdout
    assert not PLACEHOLDER.search(text), PLACEHOLDER.search(text).group()


def test_recall_help_states_the_budget_range() -> None:
    assert "50 to 200000" in ok("recall", "--help").stdout


def test_the_stored_top_help_is_what_typer_renders() -> None:
    from bme_cli.cli.static_help import HELP_FILE, rendered
    assert HELP_FILE.read_text(encoding="utf-8") == rendered(), \
        "bme --help changed: run `python -m bme_cli.cli.static_help` to store the new text"


@pytest.mark.parametrize("columns", [80, 120, 60, 40])
def test_bme_help_prints_what_typer_would_at_every_width(columns: int) -> None:
    from bme_cli.cli.static_help import rendered
    env = {**os.environ, "COLUMNS": str(columns)}
    printed = subprocess.run([sys.executable, "-m", "bme_cli", "--help"], env=env, capture_output=True,
                             text=True, encoding="utf-8", check=True).stdout
    assert printed == rendered(columns)
    assert ("Long-term graph memory for SillyTavern chats (ST-BME compatible)." in printed) == (columns >= 80)


def test_bme_help_at_full_width_loads_no_typer() -> None:
    code = ("import sys; sys.argv = ['bme', '--help']; from bme_cli.__main__ import main; main(); "
            "sys.stderr.write(' '.join(m for m in ('typer', 'click', 'rich', 'numpy') if m in sys.modules))")
    env = {**os.environ, "COLUMNS": "100"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.startswith("Usage: bme") and done.stderr == ""
