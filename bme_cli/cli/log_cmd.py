"""`bme log`: the record of model calls (task, chat, model, tokens, time, outcome), with totals."""
from __future__ import annotations

import re
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import UsageError
from .common import FormatOpt, app, check_format, handled, runtime

if TYPE_CHECKING:   # the call log (and sqlite3) load when `bme log` runs, not for every command
    from ..providers.calllog import CallRecord

_AGO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(value: str, now: float | None = None) -> float:
    """'30m', '2h', '7d', '1w' ago, or an ISO date/time (local time when no zone): epoch seconds."""
    m = _AGO.match(value)
    if m:
        return (time.time() if now is None else now) - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        return datetime.fromisoformat(value.strip()).timestamp()
    except ValueError:
        raise UsageError(f"--since {value!r}: give an age such as 30m, 2h, 7d, 1w, or a date such as 2025-05-01") from None


def _row(r: CallRecord) -> list[str]:
    chat = Path(r.chat).name if r.chat else "-"
    stamp = datetime.fromtimestamp(r.time).strftime("%Y-%m-%d %H:%M:%S")
    tokens = f"{r.prompt_tokens}+{r.completion_tokens}" + ("" if r.tokens_reported else "~")
    outcome = r.outcome if not r.detail else f"{r.outcome}: {r.detail[:60]}"
    return [stamp, r.task, chat, r.model, tokens, f"{r.seconds:.1f}", outcome]


@app.command("log")
@handled
def log(
    ctx: typer.Context,
    chat: Annotated[Optional[str], typer.Option("--chat", help="only calls for this chat (path or file name)")] = None,
    task: Annotated[Optional[str], typer.Option("--task", help="only this task: extract, conflict, recall, compress, synopsis, reflect, evolve, embed, doctor")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="only calls to this model")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="only calls since an age (30m, 2h, 7d) or a date")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="show at most this many calls, newest first")] = 50,
    fmt: FormatOpt = "table",
    path: Annotated[bool, typer.Option("--path", help="print where the log is kept and exit")] = False,
) -> None:
    """List recorded model calls with token and time totals (totals cover every match)."""
    from .. import render
    from ..providers.calllog import LOG_FILE, CallLog, default_data_dir, totals
    check_format(fmt, ("table", "json"))
    settings = runtime(ctx).load_settings()
    where = default_data_dir() / LOG_FILE
    if path:
        render.write_text(str(where))
        return
    calls = CallLog(where, with_text=settings.call_log_text)
    found = calls.query(chat=chat, task=task, model=model, since=parse_since(since) if since else None)
    shown = found[:limit]
    summary = totals(found)
    if fmt == "json":
        render.write_json({"log": str(where), "enabled": settings.call_log, "totals": summary,
                           "calls": [r.__dict__ for r in shown]})
        return
    table = render.rows_table("model calls", ["time", "task", "chat", "model", "tokens", "seconds", "outcome"],
                              [_row(r) for r in shown])
    outcomes = ", ".join(f"{n} {o}" for o, n in sorted(summary["outcomes"].items())) or "none"
    if shown:
        render.out().print(table)
    # A line of its own, not a caption, which Rich would wrap to the table's width.
    render.write_text(f"{summary['calls']} call(s) ({len(shown)} shown) · tokens {summary['prompt_tokens']}+"
                      f"{summary['completion_tokens']} ('~': estimated) · {summary['seconds']:.1f} s · {outcomes}"
                      + ("" if settings.call_log else " · recording is off (call_log = false)"))
