"""Running `bme ingest` (and `bme watch`, and api.ingest) over chats: each chat opened with its
graph under its lock (workflow.open_chat_graph), put through the pure pipeline step
(memory/ingest.py) and saved; many chats at once, one thread per chat up to --jobs, every
model call sharing the providers' concurrency limit. A failure in one chat is recorded and
the others complete; `IngestRun` says which failed and with what exit code.

Saving: memory/ingest.py asks for a save at every consistent point (after a batch, after its
upkeep). Each save writes the whole sidecar (encoded, fsynced), which can cost more than an
offline batch, so `CoalescedSave` skips a save while the work since the last write is short
next to what that write took or under a second, and always writes at the end. Every write is
still one of those consistent points, so a kill loses only the few batches since, which the
next run redoes; with a model behind a network a batch outlasts both and every one is written.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from .errors import BmeError, ChatChangedError, ExitCode, ProviderError, UsageError
from .graph.model import Graph
from .graph.schema import Schema
from .memory import ingest, upkeep
from .memory.excerpt_vectors import embed_units
from .memory.gaps import FailedBatch
from .memory.rebuild import drop_forgotten
from .memory.witness import mark_witnesses
from .providers.factory import Providers, heuristic_chat
from .settings import Settings
from .workflow import ChatGraph, make_context, open_chat_graph, processed_units

if TYPE_CHECKING:
    from .sillytavern.lore import Lore


@dataclass
class IngestOptions:
    """What `bme ingest` was asked to do, beyond the settings."""

    graph_override: Path | None = None
    until: int | None = None
    rebuild_from: int | None = None
    lock_wait: float = 0.0
    skip_bad_lines: bool = False
    seed: int | None = None
    retry_failed: bool = False          # run the recorded failed batches again first
    on_fail: str = "record"             # "record" a batch the model cannot answer, or fill it "heuristic"ally
    follow_edits: bool = False          # an edited/swiped/deleted message: rebuild from it (bme watch)
    lore: "Lore | None" = None          # lorebooks and cards that seed each graph (sillytavern/lore.py)
    parent: Path | None = None          # --from: the chat this one branched from (sillytavern/branch.py)
    branches: bool = True               # look for a parent beside a chat that has no graph yet


@dataclass
class ChatOutcome:
    """How one chat's ingest ended."""

    chat: Path
    report: "ingest.IngestReport | None" = None
    error: str | None = None
    exit_code: int = 1
    seconds: float = 0.0
    rebuilt: int = 0


@dataclass
class IngestEvents:
    """Callbacks the CLI uses to show progress (all optional, called from worker threads)."""

    on_start: Callable[[Path, int], None] = lambda chat, batches: None
    on_batch: Callable[[Path, "ingest.BatchProgress"], None] = lambda chat, progress: None
    on_done: Callable[[ChatOutcome], None] = lambda outcome: None
    warn: Callable[[str], None] = lambda message: None
    note: Callable[[str], None] = lambda message: None     # progress-like news (silent with --quiet)


@dataclass
class IngestRun:
    """All chats of one `bme ingest`: outcomes in input order, and whether Ctrl-C stopped it."""

    outcomes: list[ChatOutcome] = field(default_factory=list)
    stopped: bool = False

    @property
    def failed(self) -> list[ChatOutcome]:
        """The chats that ended with an error, in input order."""
        return [o for o in self.outcomes if o.error]

    def error_lines(self) -> list[str]:
        """One line per failed chat, each naming its chat (once: some errors name it already)."""
        return [o.error if o.error.startswith(str(o.chat)) else f"{o.chat}: {o.error}"
                for o in self.failed if o.error]

    def failure_exit_code(self) -> int | None:
        """None when no chat failed; else the failures' one exit code when every chat failed
        the same way, and 1 (a general error) for a mix or a partial failure."""
        failed = self.failed
        if not failed:
            return None
        codes = {o.exit_code for o in failed}
        all_failed = len(failed) == len(self.outcomes)
        return codes.pop() if all_failed and len(codes) == 1 else int(ExitCode.ERROR)


SAVE_SHARE = 0.2
SAVE_GAP = 1.0   # seconds: offline, a kill loses at most about this much work


class CoalescedSave:
    """A `save` that writes only when the work since the last write took at least
    (1 - SAVE_SHARE) / SAVE_SHARE times as long as that write did, so writing takes at most
    about SAVE_SHARE of the run, and at least SAVE_GAP seconds, so a fast offline run does not
    write a growing graph a few times a second; `flush` writes the graph of the last request
    (call it only when the graph is at such a point)."""

    def __init__(self, write: Callable[[Graph], None], share: float | None = None,
                 clock: Callable[[], float] = time.perf_counter, gap: float | None = None):
        self._write, self._clock = write, clock
        share = SAVE_SHARE if share is None else share   # read here: a test may set 1.0, every save written
        self._ratio = (1.0 - share) / share
        self._gap = SAVE_GAP if gap is None else gap
        self._written_at, self._took = clock(), 0.0
        self._pending: Graph | None = None
        self._first = True

    def __call__(self, graph: Graph) -> None:
        self._pending = graph
        since = self._clock() - self._written_at
        if self._first or since >= max(self._ratio * self._took, self._gap):
            self._first = False
            self.flush()

    def flush(self) -> None:
        """Write the graph of the last save request, if it was not written yet."""
        if self._pending is not None:
            graph, self._pending = self._pending, None
            start = self._clock()
            self._write(graph)
            self._written_at = self._clock()
            self._took = self._written_at - start


def ingest_one(chat_path: Path, settings: Settings, providers: Providers, schema: Schema,
               opts: IngestOptions, events: IngestEvents, stop: threading.Event) -> ChatOutcome:
    """Ingest one chat; a BmeError becomes the outcome's error instead of stopping the run."""
    outcome = ChatOutcome(chat_path)
    t0 = time.perf_counter()
    try:
        with open_chat_graph(chat_path, graph_override=opts.graph_override, write=True,
                             lock_wait=opts.lock_wait, skip_bad_lines=opts.skip_bad_lines,
                             warn=events.warn, settings=settings,
                             start_over=opts.rebuild_from == 0) as cg:
            ctx = make_context(settings, providers, schema, cg.chat, seed=opts.seed)
            _expect_dimension(cg, providers)
            if opts.rebuild_from is not None:
                outcome.rebuilt = _rebuild(cg, opts.rebuild_from, ctx.now())
            _follow_edits(cg, opts, ctx, outcome)
            prepared = _prepare(cg, opts, ctx, events)
            plan = ingest.plan_for(cg.chat, cg.graph, settings.memory, until=opts.until)
            events.on_start(chat_path, len(plan))
            save = CoalescedSave(cg.save)
            outcome.report = ingest.ingest_chat(
                cg.chat, cg.graph, ctx, save=save, upkeep=upkeep.run_cadence, until=opts.until,
                on_batch=lambda p: events.on_batch(chat_path, p),
                should_stop=lambda: stop.is_set() or _gave_up(providers) is not None,
                retry_failed=opts.retry_failed,
                fallback=heuristic_chat() if opts.on_fail == "heuristic" else None)
            witnessed = mark_witnesses(cg.graph, cg.chat)   # group chats: who saw what (memory/witness.py)
            if (prepared and not plan) or witnessed:   # with a plan, its first saved batch saved them
                save(cg.graph)
            save.flush()  # ingest_chat returned: the graph is at a consistent point
            _embed_excerpts(cg, settings, providers, events)
            _report_failures(outcome, events)
            _fill_vectors(cg, schema, providers, outcome)
    except BmeError as e:
        outcome.error, outcome.exit_code = str(e), int(e.exit_code)
    outcome.seconds = time.perf_counter() - t0
    events.on_done(outcome)
    return outcome


def _follow_edits(cg: ChatGraph, opts: IngestOptions, ctx, outcome: ChatOutcome) -> None:  # noqa: ANN001
    """Messages already turned into memories that changed since: with follow_edits (bme watch)
    the graph is rebuilt from the first and saved; otherwise, or if edits remain, ChatChangedError."""
    edits = ingest.check_edits(cg.chat, cg.graph)
    if edits and opts.follow_edits:
        outcome.rebuilt = ingest.rebuild_from(cg.graph, min(e.seq for e in edits), ctx.now(),
                                              assistant_turns=cg.chat.assistant_turns)
        cg.save(cg.graph)
        edits = ingest.check_edits(cg.chat, cg.graph)
    if edits:
        raise ChatChangedError(_edits_message(edits), f"pass --rebuild-from {min(e.seq for e in edits)}"
                               " to extract again from there, or --rebuild for everything")


def _prepare(cg: ChatGraph, opts: IngestOptions, ctx, events: IngestEvents) -> bool:  # noqa: ANN001
    """Before extraction: a branch takes its parent's graph, lore and a group's members are seeded.

    Nothing is saved here: the first batch saves it all, so a chat whose model is down is
    left without a sidecar, as before; returns whether the graph changed."""
    changed = False
    if opts.parent is not None or (opts.branches and not cg.existed and opts.rebuild_from is None):
        changed = _start_from_parent(cg, opts.parent, ctx, events)
    if opts.lore or cg.chat.is_group:
        changed = _seed(cg, opts.lore, ctx, events) or changed
    if changed:  # witnesses for what came from the parent, before anything is saved
        mark_witnesses(cg.graph, cg.chat)
    return changed


def _start_from_parent(cg: ChatGraph, parent: Path | None, ctx, events: IngestEvents) -> bool:  # noqa: ANN001
    """A branch starts from its parent's graph rolled back to where they part; True if it did."""
    from .sillytavern.branch import adopt, find_branch
    if parent is not None and cg.graph.active_nodes():
        raise UsageError(f"{cg.graph_path} already holds {len(cg.graph.active_nodes())} memories; --from starts a new graph",
                         "pass --rebuild with --from, or leave --from out")
    branch = find_branch(cg.chat, parent, ctx.now())
    if branch is None:
        return False
    cg.graph = adopt(branch, cg.chat, ctx.now())
    events.note(f"{cg.chat.path}: a branch of {branch.parent.name}: starting from its graph as it was before "
                f"message #{branch.point} ({len(cg.graph.active_nodes())} memories), extracting from there")
    return True


def _seed(cg: ChatGraph, lore: "Lore | None", ctx, events: IngestEvents) -> bool:  # noqa: ANN001 - MemoryContext
    """Seed the graph from the user's lorebooks and cards, and a group's members; True if it changed."""
    from .sillytavern.lore import Lore, seed_chat, seed_summary
    report, skipped = seed_chat(cg.graph, lore or Lore(), ctx, cg.chat)
    if report.changed:  # said once, when the lore first changes the graph
        events.note(seed_summary(cg.chat.path, report, skipped))
    return report.changed


def _embed_excerpts(cg: ChatGraph, settings: Settings, providers: Providers, events: IngestEvents) -> None:
    """Give every processed message's excerpt units a vector (graphs made before excerpts, or a
    batch whose embedding failed), dropping those of text no longer in the chat; saves if changed."""
    if not settings.memory.excerpts or providers.embedder is None:
        return
    try:
        changed = embed_units(cg.graph, processed_units(cg.chat, cg.graph), providers.embedder, keep_others=False)
    except ProviderError as e:
        events.warn(f"{cg.chat.path}: excerpt embedding failed, quotes match by words only until the next "
                    f"ingest ({e})")
        changed = 1
    if changed:
        cg.save(cg.graph)


def _rebuild(cg: ChatGraph, seq: int, now: int) -> int:
    """`--rebuild` / `--rebuild-from`: forget what came from seq on, for good, with the graph as
    it was kept as `<sidecar>.bak`; returns the nodes changed."""
    from .graph import store
    changed = ingest.rebuild_from(cg.graph, seq, now, assistant_turns=cg.chat.assistant_turns)
    drop_forgotten(cg.graph, seq)
    if cg.existed:
        store.keep_backup(cg.graph_path, store.backup_path(cg.graph_path))
    cg.save(cg.graph)
    return changed


def _expect_dimension(cg: ChatGraph, providers: Providers) -> None:
    """Tell the embedder the size of this graph's vectors of its model, so a server that
    suddenly answers with another size is refused instead of stored."""
    meta, expect = cg.graph.meta, getattr(providers.embedder, "expect_dimension", None)
    if expect is not None and meta.embedding_dim and meta.embedding_model == providers.embedder.model_id:
        expect(int(meta.embedding_dim))


def _gave_up(providers: Providers) -> str | None:
    """Why the embedder's circuit breaker stopped this run asking it, or None."""
    return getattr(providers.embedder, "gave_up", None)


def _fill_vectors(cg: ChatGraph, schema: Schema, providers: Providers, outcome: ChatOutcome) -> None:
    """Embed every active memory still without a vector (a failed batch's, an earlier run's), save,
    and fail the chat with exit 4 naming how many are left when the endpoint will not answer."""
    from .memory.embed import embed_missing
    if providers.embedder is None:
        return
    why = _gave_up(providers)
    if why is None:
        try:
            if embed_missing(cg.graph, schema, providers.embedder):
                cg.save(cg.graph)
        except ProviderError as e:
            why = e.message
    missing = sum(1 for n in cg.graph.nodes if not n.archived and n.embedding is None)
    if not missing or why is None:
        return
    total = sum(1 for n in cg.graph.nodes if not n.archived)
    line = (f"{missing} of {total} memories have no vector: {why}; the memories are saved, and the next "
            "`bme ingest` embeds them")
    outcome.error = f"{outcome.error}; {line}" if outcome.error else line
    outcome.exit_code = outcome.exit_code if outcome.error != line else int(ProviderError.exit_code)


def _report_failures(outcome: ChatOutcome, events: IngestEvents) -> None:
    """Provider failures fail the chat with their exit code; failed batches recorded in the graph
    (this run's or earlier ones) fail it with exit 1 in one line naming them; upkeep failures are
    warnings (the memories were saved)."""
    report = outcome.report
    if report is None:
        return
    recorded = {(r.start_seq, r.end_seq) for r in report.recorded}
    hard = [f for f in report.failures if f.stage == "extract" and (f.start_seq, f.end_seq) not in recorded]
    for f in report.failures:
        if f.stage != "extract":
            events.warn(f"{outcome.chat}: {f.message}")
    parts = [f.message for f in hard]
    if report.outstanding:
        parts.append(failed_batches_line(report.outstanding, recorded))
    if parts:
        outcome.error = "; ".join(parts)
        outcome.exit_code = int(hard[0].error.exit_code) if hard else 1


SHOWN_FAILED = 6
REASON_SHOWN = 160


def failed_batches_line(records: list[FailedBatch], new: set[tuple[int, int]]) -> str:
    """'2 batches the model could not answer are recorded as failed: #4-#6, #9-#9 (why); ...'

    Batches failing for the same reason share it; one from an earlier run says so."""
    by_reason: dict[str, list[str]] = {}
    for r in records[:SHOWN_FAILED]:
        earlier = "" if (r.start_seq, r.end_seq) in new else " (earlier run)"
        by_reason.setdefault(r.reason, []).append(r.span + earlier)
    def why(text: str) -> str:
        return text if len(text) <= REASON_SHOWN else text[:REASON_SHOWN - 1] + "…"
    shown = "; ".join(f"{', '.join(spans)} ({why(reason)})" for reason, spans in by_reason.items())
    more = f" and {len(records) - SHOWN_FAILED} more" if len(records) > SHOWN_FAILED else ""
    n = len(records)
    return (f"{n} batch{'es' if n > 1 else ''} the model could not answer {'are' if n > 1 else 'is'} "
            f"recorded as failed: {shown}{more}; {'their' if n > 1 else 'its'} messages stay pending "
            "(`bme ingest --retry-failed` tries again, `--on-fail heuristic` fills offline)")


def dry_run(chat, graph, settings: Settings, schema: Schema, language: str,  # noqa: ANN001 - Chat or StreamedChat
            until: int | None = None, retry_failed: bool = False,
            rebuild_from: int | None = None, *, now: int) -> Iterator[tuple[str, "ingest.Batch", int]]:
    """(chat name, batch, prompt token estimate) for every batch an ingest would send, in order;
    a StreamedChat's messages are read as the batches need them.

    With rebuild_from the graph (a copy the caller never saves) is rolled back first, as the
    real run would."""
    from .chat_stream import StreamedChat
    if rebuild_from is not None:
        ingest.rebuild_from(graph, rebuild_from, now, assistant_turns=chat.assistant_turns)
    read = chat.stream if isinstance(chat, StreamedChat) else lambda: chat.messages
    for batch, tokens in ingest.dry_run_stream(read, chat, graph, settings.memory, schema=schema, until=until,
                                               language=language, retry_failed=retry_failed):
        yield chat.path.name, batch, tokens


def _edits_message(edits: list) -> str:
    shown = ", ".join(f"#{e.seq} {e.kind}" for e in edits[:8])
    more = f" and {len(edits) - 8} more" if len(edits) > 8 else ""
    return f"messages already turned into memories have changed since: {shown}{more}"


def ingest_many(chats: list[Path], settings: Settings, providers: Providers, schema: Schema,
                opts: IngestOptions, events: IngestEvents, jobs: int, stop: threading.Event) -> IngestRun:
    """Ingest every chat with up to `jobs` in parallel; outcomes keep the input order.

    SillyTavern branches (a header naming main_chat) go after every other chat, so the
    parent's graph is there to start from."""
    from .sillytavern.branch import names_parent
    run = IngestRun()
    later = {c for c in chats if opts.branches and names_parent(c)} if len(chats) > 1 else set()
    done: dict[Path, ChatOutcome] = {}
    for phase in ([c for c in chats if c not in later], [c for c in chats if c in later]):
        with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="bme-ingest") as pool:
            futures = {c: pool.submit(ingest_one, c, settings, providers, schema, opts, events, stop)
                       for c in phase}
            done.update((c, f.result()) for c, f in futures.items())
    run.outcomes = [done[c] for c in chats]
    run.stopped = stop.is_set()
    return run
