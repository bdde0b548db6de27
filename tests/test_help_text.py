"""--help names values plainly (CHAT, PATHS..., N, PATH, TEXT), never Python types or braces."""
from __future__ import annotations

import re

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
