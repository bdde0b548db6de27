"""Every table fits 80 and 60 columns: no line wider, no header cut, no file name cut; off a
terminal a table is only as wide as its content."""
from __future__ import annotations

import io
import shutil
import unicodedata
from pathlib import Path

import pytest
from rich.console import Console

from bme_cli.render.fit import Fitted, least_width
from bme_cli.render.tables import add_columns, new_table
from cli_support import SAMPLES, cli_env, ingested, ingested_template, ok  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")

BOX = set("│┃┏┓┗┛┌┐└┘╇┡┩┳┻┣┫━─")
LONG_NAME = "a chat exported from SillyTavern on a long winter evening 2026-11-30@21h14m.jsonl"


def _width(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if BOX & set(line)]


def _check_fits(text: str, columns: int) -> None:
    lines = _table_lines(text)
    assert lines, text
    assert max(_width(line) for line in lines) <= columns, text
    assert not [line for line in lines if "┃" in line and "…" in line], text   # every header whole


def _first_cells(text: str) -> str:
    """The first column's text of a table's body rows, joined: a folded name comes out whole."""
    body = [line for line in text.splitlines() if line.startswith("│")]
    return "".join(line.split("│")[1].strip().replace(" ", "") for line in body)


@pytest.fixture
def long_named_chat(tmp_path: Path) -> Path:
    chat = tmp_path / LONG_NAME
    shutil.copy(SAMPLES / "adventure.jsonl", chat)
    return chat


@pytest.mark.parametrize("columns", [80, 60])
def test_ingest_folds_a_long_chat_name_and_keeps_every_header(long_named_chat: Path, columns: int) -> None:
    result = ok("ingest", long_named_chat, env={"COLUMNS": str(columns)})
    lines = result.stderr.splitlines()
    table = "\n".join(lines[[line.strip() for line in lines].index("ingest"):])
    _check_fits(table, columns)
    assert _first_cells(table) == LONG_NAME.replace(" ", "")   # wrapped at its spaces, never cut
    for header in ("chat", "batches", "created", "status"):      # what a user needs most stays
        assert header in table
    assert "ok" in table


@pytest.mark.parametrize("columns", [80, 60])
def test_dry_run_numbers_batches_within_each_chat(ingested: dict[str, Path], columns: int) -> None:
    out = ok("ingest", "--dry-run", "--rebuild", ingested["adventure"], ingested["group"],  # as if new
             env={"COLUMNS": str(columns)}).stdout
    _check_fits(out, columns)
    rows = [line.split("│") for line in out.splitlines() if line.startswith("│")]
    numbers = [(r[1].strip(), int(r[2])) for r in rows if r[2].strip().isdigit()]
    total = int(out.split(" batch(es)")[0].split()[-1])
    assert [n for name, n in numbers if name == "adventure.jsonl"][:3] == [1, 2, 3], out
    last = [n for name, n in numbers if name == "group.jsonl"][-1]
    assert 0 < last < total - 20, out                      # the second chat counts its own batches


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("args", [
    ("stats", "{adventure}"), ("stats", "{adventure}", "{chinese}", "{group}"), ("stats", "{chinese}", "--tree"),
    ("recall", "{adventure}", "--format", "table", "--no-reinforce"),
    ("show", "{adventure}"), ("show", "{chinese}", "--timeline"), ("search", "{adventure}", "lantern"),
    ("compress", "{adventure}", "--dry-run"), ("sleep", "{adventure}", "--dry-run"),
])
def test_every_table_fits(ingested: dict[str, Path], columns: int, args: tuple[str, ...]) -> None:
    argv = [a.format(**{k: str(v) for k, v in ingested.items()}) for a in args]
    result = ok(*argv, env={"COLUMNS": str(columns)})
    text = result.stdout
    if _table_lines(text):
        _check_fits(text, columns)


def test_explain_is_a_table_when_wide_and_a_list_when_narrow(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    wide = ok("recall", chat, "--explain", "--no-reinforce", env={"COLUMNS": "200"}).stderr
    assert "┃ type" in wide and "\n1. " not in wide
    for columns in (80, 60):
        narrow = ok("recall", chat, "--explain", "--no-reinforce", env={"COLUMNS": str(columns)}).stderr
        lines = [line for line in narrow.splitlines() if not line.startswith("bme: ")]
        assert max(_width(line) for line in lines) <= columns
        assert "1. taken · " in narrow and "   why: " in narrow and "final " in narrow


def _render(table: object, width: int, *, terminal: bool = True) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=terminal, color_system=None)
    console.print(table)
    return console.file.getvalue()


def test_fit_drops_optional_columns_in_order_until_headers_fit() -> None:
    t = new_table(title="t")
    add_columns(t, ("chat", "batches", "created", "archived", "seconds", "status"), names=("chat",))
    t.add_row("x.jsonl", "3/3", "12", "0", "1.5", "ok")
    assert least_width(t) > 40
    out = _render(Fitted(t, drop=("seconds", "archived", "created")), 40)
    assert "seconds" not in out and "archived" not in out
    assert "batches" in out and "status" in out and "…" not in out
    assert max(_width(line) for line in out.splitlines()) <= 40


def test_off_a_terminal_an_expanding_table_is_as_wide_as_its_content() -> None:
    t = new_table(title="t", expand=True)
    t.add_column("#", no_wrap=True)
    t.add_column("text", no_wrap=True, ratio=1)
    t.add_row("1", "short")
    piped = _render(Fitted(t), 200, terminal=False)
    assert max(_width(line) for line in piped.splitlines()) < 30
    t2 = new_table(title="t", expand=True)
    t2.add_column("#", no_wrap=True)
    t2.add_column("text", no_wrap=True, ratio=1)
    t2.add_row("1", "word " * 60)
    assert max(_width(line) for line in _render(Fitted(t2), 80, terminal=False).splitlines()) == 80
