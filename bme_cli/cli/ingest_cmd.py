"""`bme ingest`: chats in, memory graphs out — incremental, concurrent, resumable."""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Iterator, Optional

import typer

from ..errors import Interrupted, UsageError
from .common import GraphOpt, Runtime, SkipOpt, WaitOpt, app, handled, memory_flags, one_graph, runtime

if TYPE_CHECKING:
    from ..graph.schema import Schema
    from ..ingest_runner import ChatOutcome, IngestEvents, IngestOptions, IngestRun
    from ..providers.factory import Providers
    from ..settings import Settings
    from ..sillytavern.lore import Lore


@contextmanager
def _first_ctrl_c_stops(stop: threading.Event) -> Iterator[None]:
    """First Ctrl-C: finish and save the batch in flight, then stop. Second: abort at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):  # noqa: ANN001
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        from .. import render
        render.notice("stopping after the batch in flight is saved (Ctrl-C again to abort)")

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# Without --verbose, plain log lines report a chat's progress at most this often, so a
# long chat does not print one line per batch.
LOG_EVERY_SECONDS = 10.0


def _log_events(quiet: bool, verbose: bool) -> IngestEvents:
    """Plain log lines on stderr (used when stderr is not a terminal).

    Failures are not logged here: the command lists them once at the end.
    """
    from .. import render
    from ..ingest_runner import IngestEvents
    say = (lambda m: None) if quiet else render.notice
    last: dict[Path, float] = {}

    def start(chat: Path, total: int) -> None:
        last[chat] = time.monotonic()
        say(f"{chat}: {total} batch(es) pending" if total else f"{chat}: up to date")

    def batch(chat: Path, p) -> None:  # noqa: ANN001 - BatchProgress
        now = time.monotonic()
        if p.error is not None or (not verbose and p.done < p.total
                                   and now - last.get(chat, 0.0) < LOG_EVERY_SECONDS):
            return
        last[chat] = now
        say(f"{chat}: batch {p.done}/{p.total} (#{p.start_seq}-#{p.end_seq}) +{p.created} nodes, {p.updated} updated")

    return IngestEvents(on_start=start, on_batch=batch, warn=render.notice, note=say)


@app.command()
@handled
def ingest(
    ctx: typer.Context,
    paths: Annotated[list[str], typer.Argument(help="chat files, folders or globs")],
    graph: GraphOpt = None,
    until: Annotated[Optional[int], typer.Option("--until", help="stop after the batch that reaches this seq")] = None,
    include_greeting: Annotated[Optional[bool], typer.Option("--include-greeting/--skip-greeting", help="extract the greeting (seq 0; the default) or skip it, as ST-BME does")] = None,
    extract_every: Annotated[Optional[int], typer.Option("--extract-every", min=1, max=50, help="assistant turns per batch")] = None,
    memory_lang: Annotated[Optional[str], typer.Option("--memory-lang", help="language of memories: auto, zh or en")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, max=64, help="chats processed at once")] = 1,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="show batches, token estimates and cost; call no model")] = False,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="archive everything and extract the whole chat again")] = False,
    rebuild_from: Annotated[Optional[int], typer.Option("--rebuild-from", min=0, help="archive what came from this seq on and extract again")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="first try again the batches recorded as failed")] = False,
    on_fail: Annotated[str, typer.Option("--on-fail", help="a batch the model cannot answer: 'record' it as failed and go on, or fill it with the offline 'heuristic'")] = "record",
    seed: Annotated[Optional[int], typer.Option("--seed", help="seed for reproducible randomness")] = None,
    wait: WaitOpt = 0.0,
    skip_bad_lines: SkipOpt = False,
    lorebook: Annotated[Optional[list[Path]], typer.Option("--lorebook", metavar="FILE", help="a SillyTavern World Info file whose names and constant rules seed the graph (repeatable)")] = None,
    card: Annotated[Optional[list[Path]], typer.Option("--card", metavar="FILE", help="a character card (.png or .json) whose character and lorebook seed the graph (repeatable)")] = None,
    parent: Annotated[Optional[Path], typer.Option("--from", metavar="PARENT", help="the chat this one branched from: start from its graph, rolled back to where they part")] = None,
) -> None:
    """Turn chats into memory graphs, continuing where the last run stopped."""
    from .. import render, workflow
    from ..ingest_runner import IngestOptions
    _check_flags(rebuild, rebuild_from, memory_lang, on_fail)
    chats = workflow.find_chats(paths, warn=render.notice)
    one_graph(chats, graph)
    if parent is not None and len(chats) > 1:
        raise UsageError("--from names the parent of one chat, so it takes exactly one chat")
    rt = runtime(ctx)
    settings = rt.load_settings(memory_flags(extract_every=extract_every, memory_lang=memory_lang,
                                             include_greeting=include_greeting))
    schema = workflow.load_schema(settings.memory.node_type_schema)
    rebuild_from = 0 if rebuild else rebuild_from
    if dry_run:
        _dry_run(chats, graph, settings, schema, skip_bad_lines, until, retry_failed, rebuild_from)
        return
    lore = _lore(settings, lorebook, card)
    providers = rt.providers(settings, quiet=rt.quiet)
    opts = IngestOptions(graph_override=graph, until=until, rebuild_from=rebuild_from,
                         lock_wait=wait, skip_bad_lines=skip_bad_lines, seed=seed,
                         retry_failed=retry_failed, on_fail=on_fail, lore=lore, parent=parent,
                         branches=settings.sillytavern.detect_branches)
    run = _run(rt, chats, settings, providers, schema, opts, jobs)
    _report(rt, run, providers)


def _check_flags(rebuild: bool, rebuild_from: int | None, memory_lang: str | None, on_fail: str) -> None:
    """Usage errors Typer cannot see: options that exclude each other, values out of a set."""
    if rebuild and rebuild_from is not None:
        raise UsageError("--rebuild and --rebuild-from exclude each other")
    if memory_lang is not None and memory_lang not in ("auto", "zh", "en"):
        raise UsageError("--memory-lang must be auto, zh or en")
    if on_fail not in ("record", "heuristic"):
        raise UsageError("--on-fail must be record or heuristic")


def _lore(settings: Settings, lorebooks: list[Path] | None, cards: list[Path] | None) -> Lore:
    """The lorebooks and cards of the settings, then those of the command line."""
    from ..sillytavern.lore import read_lore
    return read_lore([*map(Path, settings.sillytavern.lorebooks), *(lorebooks or [])],
                     [*map(Path, settings.sillytavern.cards), *(cards or [])])


def _run(rt: Runtime, chats: list[Path], settings: Settings, providers: Providers, schema: Schema,
         opts: IngestOptions, jobs: int) -> IngestRun:
    """Every chat through ingest_runner, with a progress display (or log lines) and Ctrl-C handling."""
    from .. import ingest_runner, render
    stop = threading.Event()
    progress = render.progress(rt.quiet)
    events = _log_events(rt.quiet, rt.verbose) if progress is None else _progress_events(progress)
    with _first_ctrl_c_stops(stop), (progress if progress is not None else nullcontext()):
        return ingest_runner.ingest_many(chats, settings, providers, schema, opts, events, jobs, stop)


def _report(rt: Runtime, run: IngestRun, providers: Providers) -> None:
    """The summary table and its notes on stderr, one line per failed chat, then the exit code."""
    from .. import render
    # A chat that failed before its first batch (unreadable, locked, edited) has nothing to
    # tabulate: its error line below says it all.
    if not rt.quiet and any(o.report is not None for o in run.outcomes):
        offline = getattr(providers.chat, "offline", False)
        render.err().print(render.ingest_summary(run.outcomes, providers.usage, offline=offline))
        if offline and providers.embedder.offline:
            rt.told()   # the table's caption says it
        for line in render.ingest_notes(run.outcomes):
            render.notice(line)
    for line in run.error_lines():
        render.error_line(line)
    if run.stopped:
        raise Interrupted("interrupted; every finished batch was saved", "run the same command again to continue")
    code = run.failure_exit_code()
    if code is not None:
        raise typer.Exit(code)


def _progress_events(progress) -> IngestEvents:  # noqa: ANN001
    """Rich progress: one bar per chat (batches done of total, nodes, tokens)."""
    from .. import render
    from ..ingest_runner import IngestEvents
    tasks: dict[Path, int] = {}
    lock = threading.Lock()

    def start(chat: Path, total: int) -> None:
        with lock:
            tasks[chat] = progress.add_task(chat.name, total=max(total, 1), info="")

    def batch(chat: Path, p) -> None:  # noqa: ANN001
        progress.update(tasks[chat], completed=p.done, total=max(p.total, 1),
                        info=f"{p.nodes_total} nodes · {p.tokens} tok")

    def done(o: ChatOutcome) -> None:
        if o.chat in tasks:
            progress.update(tasks[o.chat], info="failed" if o.error else "done")

    return IngestEvents(on_start=start, on_batch=batch, on_done=done, warn=render.notice, note=render.notice)


def _dry_run(chats: list[Path], graph: Path | None, settings, schema, skip_bad_lines: bool,  # noqa: ANN001
             until: int | None, retry_failed: bool, rebuild_from: int | None) -> None:
    """Show the batches each chat would send, their token estimates and an estimated cost."""
    from .. import ingest_runner, render, workflow
    from ..graph.model import now_ms
    rows, now = render.DryRunRows(), now_ms()
    for chat_path in chats:
        with workflow.open_chat_graph(chat_path, graph_override=graph, skip_bad_lines=skip_bad_lines,
                                      warn=render.notice, settings=settings, streamed=True) as cg:
            language = workflow.chat_language(cg.chat, settings.memory.memory_lang)
            for row in ingest_runner.dry_run(cg.chat, cg.graph, settings, schema, language, until, retry_failed,
                                             rebuild_from, now=now):
                rows.add(*row)
    render.out().print(render.dry_run_table(rows))
    from ..providers.calllog import history
    from ..providers.factory import call_log
    calls = call_log(settings)
    past = history(calls, "extract", settings.chat.model) if calls is not None and settings.chat.base_url else None
    render.write_text(render.dry_run_total(rows, settings.chat, past))
