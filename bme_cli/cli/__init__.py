"""The `bme` command line: Typer commands that parse, call the library and render.

Errors become one line on stderr and a documented exit code (see errors.ExitCode) in
`common.handled`, and nowhere else.
"""
from __future__ import annotations

import os
import sys

from ..errors import ExitCode
from . import (graph_cmds, ingest_cmd, interop_cmds, log_cmd, node_cmds, recall_cmd,  # noqa: F401  (register
               search_cmd, show_cmd, tool_cmds, upkeep_cmds, watch_cmd)                  # the commands)
from .common import app

__all__ = ["app", "main"]


def text_streams() -> None:
    """stdout and stderr that cannot fail on a character: UTF-8 into files and pipes (a Windows
    locale would make that cp1252 and lose every Chinese name), the console's own encoding
    with replacement where that encoding was chosen (a terminal, or PYTHONIOENCODING)."""
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        reconfigure = getattr(stream, "reconfigure", None)
        if encoding == "utf8" or reconfigure is None:
            continue
        try:
            if os.environ.get("PYTHONIOENCODING") or stream.isatty():
                reconfigure(errors="replace")
            else:
                reconfigure(encoding="utf-8")
        except (OSError, ValueError):   # a closed or detached stream: leave it be
            pass


def main() -> None:
    """Console-script entry point."""
    text_streams()
    try:
        app(prog_name="bme")
    except KeyboardInterrupt:
        from .. import render
        render.error_line("interrupted")
        sys.exit(int(ExitCode.INTERRUPTED))
