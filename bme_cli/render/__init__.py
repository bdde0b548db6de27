"""Everything bme shows a person: Rich tables, the plain Markdown block, JSON. The only
package besides cli/ that imports rich. Results go to stdout, diagnostics to stderr;
no colour or live display when the stream is not a terminal or NO_COLOR is set.

This module holds the consoles and the plain writers; the tables live in render.tables
(ingest, stats, upkeep, generic), render.recall (recall and --explain), render.messages
(bme show's messages) and render.views (search hits, the timeline, one node), and fit to the
console's width through render.fit.
"""
from __future__ import annotations

import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich is imported where a table or console is made: plain output needs none of it
    from rich.console import Console
    from rich.progress import Progress


# Rich falls back to 80 columns when the stream is not a terminal, which cuts bme's wider
# tables (ingest summary, recall --explain) into wrapped, ellipsised cells in a pipe or a
# log file. There, use $COLUMNS when set, else this width: wide enough for every table's
# usual content on one line per row, while a very long cell still wraps.
PIPE_WIDTH = 200


def _is_terminal(stream) -> bool:  # noqa: ANN001 - a text stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _console(stream) -> Console:  # noqa: ANN001 - a text stream
    width = None
    if not _is_terminal(stream) and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    from rich.console import Console
    return Console(file=stream, no_color=bool(os.environ.get("NO_COLOR")), highlight=False,
                   soft_wrap=False, width=width)


def out() -> Console:
    """The stdout console (results)."""
    return _console(sys.stdout)


def err() -> Console:
    """The stderr console (progress, notices, errors)."""
    return _console(sys.stderr)


# C0 controls but tab and newline, DEL and C1: graph text (imported, or written by a model)
# must not be able to set the window title, clear the screen or recolour the terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text with terminal control characters removed."""
    return _CONTROLS.sub("", text)


def write_text(text: str) -> None:
    """Print text to stdout with one final newline: never Rich markup, never terminal controls."""
    text = printable(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def write_document(text: str) -> None:
    """A document (an export, a lorebook) to stdout exactly as given: its bytes are the format's,
    so no newline is added and nothing is stripped (the format escapes what it must)."""
    sys.stdout.write(text)
    sys.stdout.flush()


# Every `--format json` document is an object that starts with this (docs/json.md): a script
# checks it, and it goes up only when a key it may rely on changes or goes.
JSON_SCHEMA_VERSION = 1


def write_json(data: dict[str, Any], *, compact: bool = False) -> None:
    """A JSON document to stdout, schemaVersion first: pretty by default, one line when compact."""
    data = {"schemaVersion": JSON_SCHEMA_VERSION, **data}
    text = (json.dumps(data, ensure_ascii=False, separators=(",", ":")) if compact
            else json.dumps(data, ensure_ascii=False, indent=2))
    # json escapes C0 controls itself; DEL and C1 only appear inside strings, so escaping
    # them keeps the JSON valid and the data exact.
    sys.stdout.write(_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    sys.stdout.flush()


def notice(message: str) -> None:
    """A one-line diagnostic on stderr."""
    sys.stderr.write(f"bme: {message}\n")
    sys.stderr.flush()


def error_line(message: str) -> None:
    """The one line an error gets on stderr."""
    sys.stderr.write(f"bme: error: {message}\n")
    sys.stderr.flush()


def progress(quiet: bool) -> Progress | None:
    """A live progress display on stderr when it is a terminal, else None (log lines instead)."""
    if quiet or not sys.stderr.isatty() or os.environ.get("NO_COLOR"):
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=err(),
                    transient=False)


# The tables, under the names the commands have always called them by.
from .messages import message_text, messages_table  # noqa: E402
from .recall import explain_notes, explain_table, gaps_line, recall_table  # noqa: E402
from .tables import (  # noqa: E402
    COMPLETION_TOKENS_PER_BATCH, DRY_RUN_ROWS, DryRunRows, compress_notes, compress_table, dry_run_table, dry_run_total,
    forgotten_list, ingest_notes, ingest_summary, key_value_table, rows_table, sleep_note, sleep_table, stats_summary,
    stats_tables,
)
