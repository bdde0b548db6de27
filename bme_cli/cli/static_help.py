"""The text of `bme --help`, kept beside the package so the commonest question needs no Typer.

Importing typer alone costs about as much CPU as issue 12 allows `bme --help` in all
(docs/performance.md), so `bme --help` prints `top_help.txt` when the terminal is wide
enough that click would lay the help out at its full width (80 columns or more, or not a
terminal); narrower, Typer renders it. tests/test_help_text.py fails when the file differs
from what Typer renders; `python -m bme_cli.cli.static_help` writes it anew.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HELP_FILE = Path(__file__).with_name("top_help.txt")


def rendered(columns: int = 100) -> str:
    """`bme --help` as Typer renders it (in a child process, the real way; full width by default)."""
    env = {**os.environ, "COLUMNS": str(columns)}
    code = "import sys; sys.argv = ['bme', '--help']; from bme_cli.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          encoding="utf-8", check=True).stdout


if __name__ == "__main__":
    HELP_FILE.write_text(rendered(), encoding="utf-8")
    print(f"wrote {HELP_FILE}")
