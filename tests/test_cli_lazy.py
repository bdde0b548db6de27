"""Commands are built when they are used: running one builds that one, help still lists them all."""
from __future__ import annotations

from typing import Annotated

import typer
from typer.testing import CliRunner

from bme_cli.cli import app as bme_app
from bme_cli.cli.global_flags import GlobalFlagsGroup
from bme_cli.cli.lazy import LazyTyper

runner = CliRunner()


def _app() -> LazyTyper:
    """An app of three members; building `broken` fails, as an annotation that cannot be evaluated does."""
    app = LazyTyper(name="demo", no_args_is_help=True, rich_markup_mode=None, cls=GlobalFlagsGroup,
                    pretty_exceptions_enable=False)

    @app.callback()
    def main(verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False) -> None:
        """The demo app."""

    @app.command()
    def hello(name: str, shout: bool = False) -> None:
        """Say hello."""
        typer.echo(f"hello {name.upper() if shout else name}")

    @app.command()
    def broken(value: "NoSuchType") -> None:  # noqa: F821 - the point: it cannot be built
        """Never built unless listed."""

    sub = typer.Typer(name="sub", no_args_is_help=True, help="A group of its own.")

    @sub.command()
    def inner() -> None:
        """Inside the group."""
        typer.echo("inner ran")

    app.add_typer(sub, name="sub")
    return app


def test_running_one_command_builds_only_that_one():
    app = _app()
    result = runner.invoke(app, ["hello", "ada", "--shout", "-v"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello ADA\n"
    assert runner.invoke(app, ["sub", "inner"]).stdout == "inner ran\n"


def test_help_lists_every_command_in_registration_order_and_builds_them():
    app = _app()
    del app.pending["broken"]   # help builds every command, so the unbuildable one must go
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0, result.output
    listed = result.stdout.split("Commands:")[1].split()
    assert [w for w in listed if w in ("hello", "sub", "broken")] == ["hello", "sub"]
    assert "A group of its own." in result.stdout


def test_a_mistyped_command_is_still_suggested():
    result = runner.invoke(_app(), ["helo", "x"])
    assert result.exit_code == 2
    assert "Did you mean 'hello'?" in result.output


def test_bme_lists_every_command_once_with_commands_before_groups():
    group = typer.main.get_command(bme_app)
    names = list(group.commands)
    assert len(names) == len(set(names)) == len(group.commands)
    assert {"recall", "ingest", "stats", "node", "config", "cache"} <= set(names)
    groups = [n for n in names if hasattr(group.commands[n], "commands")]
    assert names[-len(groups):] == groups   # Typer's own order: commands, then sub-apps
    assert "recall" in group.commands and "nonsense" not in group.commands
