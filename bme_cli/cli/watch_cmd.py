"""`bme watch DIR`: ingest chats as SillyTavern saves them, one log line per ingest."""
from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from .common import SkipOpt, app, handled, runtime

if TYPE_CHECKING:
    from ..graph.schema import Schema
    from ..ingest_runner import ChatOutcome, IngestEvents, IngestOptions
    from ..providers.factory import Providers
    from ..settings import Settings
    from ..watcher import ChatWatcher


@app.command()
@handled
def watch(
    ctx: typer.Context,
    folders: Annotated[list[Path], typer.Argument(help="folders (searched recursively) or chat files to watch")],
    settle: Annotated[float, typer.Option("--settle", min=0, help="seconds a chat must stay unchanged before it is ingested")] = 3.0,
    interval: Annotated[float, typer.Option("--interval", min=0.1, help="seconds between two sweeps of the folders")] = 1.0,
    follow_edits: Annotated[bool, typer.Option("--follow-edits/--no-follow-edits", help="re-extract from an edited, deleted or swiped message instead of stopping at it")] = True,
    once: Annotated[bool, typer.Option("--once", help="ingest the chats that have settled and exit (for cron)")] = False,
    skip_bad_lines: SkipOpt = False,
) -> None:
    """Ingest chats as SillyTavern saves them: recursive, debounced, lock-aware; Ctrl-C stops."""
    from .. import render, workflow
    from ..ingest_runner import IngestEvents, IngestOptions
    from ..watcher import ChatWatcher
    from .ingest_cmd import _first_ctrl_c_stops
    missing = [str(f) for f in folders if not f.exists()]
    if missing:
        raise UsageError(f"{', '.join(missing)}: no such folder or file")
    rt = runtime(ctx)
    settings = rt.load_settings()
    schema = workflow.load_schema(settings.memory.node_type_schema)
    providers = rt.providers(settings)
    rt.finish()   # watch runs until stopped: say now what answers
    opts = IngestOptions(skip_bad_lines=skip_bad_lines, follow_edits=follow_edits)
    events = IngestEvents(warn=render.notice)
    watcher = ChatWatcher(folders, settle=settle)
    stop = threading.Event()
    render.notice(f"watching {len(watcher.seen)} chat(s) under {', '.join(map(str, folders))} (Ctrl-C stops)")
    with _first_ctrl_c_stops(stop):
        while not stop.is_set():
            for chat in watcher.due():
                if stop.is_set():
                    break
                _ingest(chat, watcher, settings, providers, schema, opts, events, stop)
            if once:
                break
            stop.wait(interval)
    render.notice("stopped watching")


def _ingest(chat: Path, watcher: ChatWatcher, settings: Settings, providers: Providers, schema: Schema,
            opts: IngestOptions, events: IngestEvents, stop: threading.Event) -> None:
    """One chat: skipped while another bme holds its lock, else ingested and logged."""
    from .. import render
    from ..errors import LockedError
    from ..graph.store import GraphLock, sidecar_path
    from ..ingest_runner import ingest_one
    signature = watcher.signature(chat)
    try:
        with GraphLock(sidecar_path(chat), wait=0):
            pass
    except LockedError:
        return  # another bme is at it: still due, tried again on the next sweep
    outcome = ingest_one(chat, settings, providers, schema, opts, events, stop)
    if signature is not None and not (outcome.report is not None and outcome.report.stopped):
        watcher.ingested(chat, signature)
    render.write_text(log_line(outcome))


def log_line(outcome: ChatOutcome) -> str:
    """`12:03:04 adventure.jsonl: 2 batch(es), 3 created, 1 updated, 0 archived (1.2 s)`."""
    stamp = datetime.now().strftime("%H:%M:%S")
    if outcome.error:
        return f"{stamp} {outcome.chat}: error: {outcome.error}"
    r = outcome.report
    if r is None or not r.batches_planned:
        return f"{stamp} {outcome.chat}: nothing new to extract"
    t = r.totals
    text = (f"{stamp} {outcome.chat}: {r.batches_done} batch(es), {t.created} created, {t.updated} updated, "
            f"{t.archived} archived ({outcome.seconds:.1f} s)")
    if outcome.rebuilt:
        text += f"; re-extracted after an edit ({outcome.rebuilt} node(s) rolled back)"
    if r.batches_failed:
        text += f"; {r.batches_failed} batch(es) failed (bme ingest --retry-failed)"
    return text + ("; stopped" if r.stopped else "")
