"""The `bme` command line: Typer commands that parse, call the library and render.

Errors become one line on stderr and a documented exit code (see errors.ExitCode) in
`common.handled`, and nowhere else.
"""
from __future__ import annotations

import sys

from ..errors import ExitCode
from . import (graph_cmds, ingest_cmd, log_cmd, node_cmds, recall_cmd, search_cmd,  # noqa: F401  (register
               show_cmd, tool_cmds, upkeep_cmds, watch_cmd)                        # the commands)
from .common import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    try:
        app(prog_name="bme")
    except KeyboardInterrupt:
        from .. import render
        render.error_line("interrupted")
        sys.exit(int(ExitCode.INTERRUPTED))
