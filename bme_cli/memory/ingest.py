"""Ingesting a chat into its graph: plan the batches, extract each, save after each, run upkeep.

Never lose work: the graph is handed to `save` after every batch (lastProcessedSeq, the
extraction counter and the fingerprints included), *before* upkeep runs; upkeep failures
are reported and never undo the batch.

No batch blocks a chat: a batch the model answered but never usably (`BatchFailed`, after the
provider's retries) is recorded as failed in the sidecar (memory/gaps.py), lastProcessedSeq
moves past it, and the next batch runs. `retry_failed` runs the recorded batches again first
(same turns, same context window); with a `fallback` model (the offline heuristic) a batch
the model fails is filled by the fallback instead, and recorded as filled. Any other provider
error (network, auth) stops the chat with lastProcessedSeq where it was: the next run resumes.

Edited chats: a fingerprint of every message a batch read (its context window included,
hidden messages too; failed batches too) is kept in `graph.meta.fingerprints`; `check_edits`
compares them with the chat, and `rebuild_from` (memory/rebuild.py) rolls the graph back to
before a message. An edit or swipe inside a failed batch is no edit of memories (none came from it): it
is not reported, and the retry reads the new text. Fingerprints are bme's own (memory/ does
not import bme_cli.chat): a short hash of (name, is_user, is_system, raw text), plus
"/<swipe_id>" when the message has one, so a swipe is told apart from an edit. Name and text
are the file's (`raw_name`, `raw`), not what memory reads of them: a change to the
story-text settings is not an edit.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Literal, Protocol, Sequence

from ..errors import BmeError
from ..graph.model import Graph
from ..graph.schema import Schema
from ..providers.base import ChatModel
from ..settings import MemorySettings
from ..text import detect_language
from . import gaps
from .apply import ApplyReport
from .context import MemoryContext
from .extract import BatchFailed, extract_batch
from .gaps import FailedBatch
from .rebuild import rebuild_from  # noqa: F401 - part of ingest's interface (`--rebuild-from`)
from .trigger import Batch, ChatLike, MessageLike, plan_batches, plan_stream, story_character

Upkeep = Callable[..., Any]  # run_cadence(graph, ctx, *, current_seq, new_node_ids) -> UpkeepReport
LANGUAGE_SAMPLE_CHARS = 20_000
# Key in graph.meta.extra: the upkeep a saved batch still owes (kept across a kill).
UPKEEP_DUE = "upkeepDue"


# -- reports --------------------------------------------------------------------------------
@dataclass
class IngestFailure:
    """A batch (stage "extract") or its upkeep (stage "upkeep") that failed, with the error."""

    stage: Literal["extract", "upkeep"]
    start_seq: int
    end_seq: int
    error: BmeError

    @property
    def message(self) -> str:
        return f"{self.stage} of messages #{self.start_seq}-#{self.end_seq}: {self.error}"


@dataclass
class BatchProgress:
    """Handed to on_batch after each batch, done or failed."""

    index: int                   # 1-based
    total: int
    batch: Batch
    report: ApplyReport | None   # None when the batch failed
    error: BmeError | None
    nodes: int                   # active nodes in the graph now
    usage: dict[str, Any]        # the chat model's usage totals now

    # Shorthands for progress displays.
    @property
    def done(self) -> int:
        return self.index

    @property
    def start_seq(self) -> int:
        return self.batch.start_seq

    @property
    def end_seq(self) -> int:
        return self.batch.end_seq

    @property
    def created(self) -> int:
        return self.report.created if self.report else 0

    @property
    def updated(self) -> int:
        return self.report.updated if self.report else 0

    @property
    def nodes_total(self) -> int:
        return self.nodes

    @property
    def tokens(self) -> int:
        return int(self.usage.get("prompt_tokens") or 0) + int(self.usage.get("completion_tokens") or 0)


@dataclass
class IngestReport:
    """What one chat's ingest did."""

    language: str = "en"
    batches_planned: int = 0
    batches_done: int = 0
    batches_failed: int = 0
    stopped: bool = False        # should_stop() ended the run early (work so far is saved)
    last_processed_seq: int = -1
    totals: ApplyReport = field(default_factory=ApplyReport)
    failures: list[IngestFailure] = field(default_factory=list)
    upkeep_reports: list[Any] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)  # model use during this ingest
    recorded: list[FailedBatch] = field(default_factory=list)  # failed in this run, recorded, passed
    filled: list[FailedBatch] = field(default_factory=list)    # failed in this run, filled by the fallback
    retried: int = 0             # recorded batches tried again (retry_failed)
    outstanding: list[FailedBatch] = field(default_factory=list)  # every failed record after the run

    @property
    def ok(self) -> bool:
        """True when no batch failed (upkeep failures are reported but do not lose work)."""
        return self.batches_failed == 0

    @property
    def upkeep_rejected(self) -> int:
        """Upkeep replies the guard rejected (the old memories were kept)."""
        return sum(int(getattr(r, "rejected_replies", 0) or 0) for r in self.upkeep_reports)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {"language": self.language, "batches_planned": self.batches_planned,
                "batches_done": self.batches_done, "batches_failed": self.batches_failed,
                "stopped": self.stopped, "last_processed_seq": self.last_processed_seq,
                "totals": self.totals.as_dict(), "failures": [f.message for f in self.failures],
                "recorded": [r.to_json() for r in self.recorded], "filled": [r.to_json() for r in self.filled],
                "retried": self.retried, "failed_batches": [r.to_json() for r in self.outstanding],
                "upkeep": {"runs": len(self.upkeep_reports), "rejected_replies": self.upkeep_rejected},
                "usage": self.usage}


@dataclass(frozen=True)
class EditedMessage:
    """A processed message that changed since it was extracted."""

    seq: int
    kind: Literal["edited", "deleted", "swiped"]


# -- fingerprints ---------------------------------------------------------------------------
def fingerprint(message: MessageLike) -> str:
    """A short stable hash of a message's speaker, flags and raw text, plus its swipe id."""
    raw = getattr(message, "raw", None)
    raw = message.text if raw is None else raw
    name = getattr(message, "raw_name", None) or message.name  # the file's name, like raw
    key = f"{name}\x1f{int(message.is_user)}\x1f{int(message.is_system)}\x1f{raw}"
    digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
    swipe = getattr(message, "swipe_id", None)
    return digest if swipe is None else f"{digest}/{swipe}"


def _swipe(fp: str) -> str:
    return fp.partition("/")[2]


def record_fingerprints(graph: Graph, chat: ChatLike, first_seq: int, last_seq: int, *,
                        overwrite: bool = False) -> None:
    """Remember the fingerprint of every message first_seq..last_seq not seen yet (hidden ones too);
    overwrite=True refreshes them (a retried failed batch reads its messages as they are now)."""
    msgs = chat.messages
    for s in range(max(0, first_seq), last_seq + 1):
        m = msgs[s] if s < len(msgs) and msgs[s].seq == s else None  # seq is the list position
        if m is None:  # not positional after all: look it up
            m = next((x for x in msgs if x.seq == s), None)
        if m is None:
            continue
        if overwrite:
            graph.meta.fingerprints[s] = fingerprint(m)
        else:  # never overwrite: an edit before this batch must stay detectable
            graph.meta.fingerprints.setdefault(s, fingerprint(m))


def check_edits(chat: ChatLike, graph: Graph) -> list[EditedMessage]:
    """Processed messages (seq <= lastProcessedSeq) that were edited, deleted or swiped since."""
    stored = {int(s): fp for s, fp in graph.meta.fingerprints.items()
              if int(s) <= graph.last_processed_seq}
    current = {m.seq: fingerprint(m) for m in chat.messages}
    out: list[EditedMessage] = []
    shift = 0  # messages deleted so far: later ones moved up by this much
    for s in sorted(stored):
        now = current.get(s - shift)
        if now == stored[s]:
            continue
        if now is None or (stored.get(s + 1) is not None and now == stored[s + 1]):
            out.append(EditedMessage(s, "deleted"))
            shift += 1
            continue
        if not shift and gaps.in_gap(graph, s):
            continue  # nothing was extracted from it: the retry reads the new text
        out.append(EditedMessage(s, "swiped" if _swipe(now) != _swipe(stored[s]) else "edited"))
    return out


# -- ingest ---------------------------------------------------------------------------------
def chat_language(chat: ChatLike, setting: str = "auto") -> str:
    """The memory language: the setting when it is "zh"/"en", else detected from the chat."""
    if setting in ("zh", "en"):
        return setting
    sample, size = [], 0
    for m in chat.messages:
        if not m.is_system and m.text:
            sample.append(m.text)
            size += len(m.text)
            if size >= LANGUAGE_SAMPLE_CHARS:
                break
    return detect_language("\n".join(sample))


def _usage(ctx: MemoryContext) -> dict[str, Any]:
    usage = getattr(ctx.chat, "usage", None)
    return usage.as_dict() if usage is not None else {}


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """after - before for the numeric totals (cost may be None)."""
    out: dict[str, Any] = {}
    for k, v in after.items():
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        out[k] = v - (before.get(k) or 0) if numeric else v
    return out


def plan_for(chat: ChatLike, graph: Graph, settings: MemorySettings, *, until: int | None = None,
             include_greeting: bool | None = None, flush_tail: bool = True) -> list[Batch]:
    """The batches ingest_chat would run now (include_greeting None = the setting)."""
    return plan_batches(chat, graph.last_processed_seq, settings, include_greeting=include_greeting,
                        until=until, flush_tail=flush_tail)


def ingest_chat(chat: ChatLike, graph: Graph, ctx: MemoryContext, *, save: Callable[[Graph], None],
                upkeep: Upkeep | None = None, until: int | None = None,
                include_greeting: bool | None = None,
                on_batch: Callable[[BatchProgress], None] | None = None,
                should_stop: Callable[[], bool] | None = None,
                flush_tail: bool = True, retry_failed: bool = False,
                fallback: ChatModel | None = None) -> IngestReport:
    """Extract every pending batch of a chat into its graph, saving after each (see module doc).

    retry_failed: run the recorded failed batches again first. fallback: the model that fills
    a batch the chat model could not answer (recorded as filled) instead of recording it failed.
    """
    ctx = replace(ctx, language=chat_language(chat, ctx.settings.memory_lang))
    retries = _retries(chat, graph) if retry_failed else []
    batches = retries + plan_for(chat, graph, ctx.settings, until=until, include_greeting=include_greeting,
                                 flush_tail=flush_tail)
    report = IngestReport(language=ctx.language, batches_planned=len(batches), retried=len(retries))
    before = _usage(ctx)
    if upkeep is not None and UPKEEP_DUE in graph.meta.extra:  # a run killed before its upkeep ended
        _run_upkeep(graph, ctx, graph.last_processed_seq, save, upkeep, report)
    run = _BatchRun(chat, graph, ctx, save, upkeep, report, fallback)
    for index, batch in enumerate(batches, 1):
        if should_stop is not None and should_stop():
            report.stopped = True
            break
        done = run.batch(batch, retry=index <= len(retries))
        if on_batch is not None:
            failure = None if done else report.failures[-1].error
            on_batch(BatchProgress(index, len(batches), batch, done or None, failure,
                                   len(graph.active_nodes()), _usage(ctx)))
        if done is None and not run.passed:
            break  # not the model's answer but the provider failing: the next run resumes here
    report.last_processed_seq = graph.last_processed_seq
    report.outstanding = gaps.failed_batches(graph)
    report.usage = _delta(before, _usage(ctx))
    return report


def _retries(chat: ChatLike, graph: Graph) -> list[Batch]:
    """The recorded failed batches, rebuilt as they first ran."""
    return list(gaps.retry_batches(sorted(chat.messages, key=lambda m: m.seq), gaps.failed_batches(graph),
                                   chat.assistant_turns))


@dataclass
class _BatchRun:
    """One chat's batches: extract, or record the failure (or fill it with the fallback), save."""

    chat: ChatLike
    graph: Graph
    ctx: MemoryContext
    save: Callable[[Graph], None]
    upkeep: Upkeep | None
    report: IngestReport
    fallback: ChatModel | None
    passed: bool = False    # the last batch failed but was recorded (or filled): go on

    def batch(self, batch: Batch, *, retry: bool) -> ApplyReport | None:
        """Run one batch; None when it failed (recorded, or a provider error that stops the chat)."""
        self.passed = False
        graph = self.graph
        if retry:  # the messages as they are now: an edit inside a failed batch is allowed
            record_fingerprints(graph, self.chat, batch.start_seq, batch.end_seq, overwrite=True)
        try:
            result = self._extract(batch, self.ctx)
        except BatchFailed as exc:
            result = self._failed(batch, exc)
            if result is None:
                return None
        except BmeError as exc:
            self._fail(batch, exc)
            return None
        gaps.resolve(graph, batch)
        return self._done(batch, result)

    def _extract(self, batch: Batch, ctx: MemoryContext) -> ApplyReport:
        return extract_batch(self.graph, batch, ctx, user_name=self.chat.user_name,
                             character_name=story_character(self.chat))

    def _fail(self, batch: Batch, exc: BmeError) -> None:
        self.report.batches_failed += 1
        self.report.failures.append(IngestFailure("extract", batch.start_seq, batch.end_seq, exc))

    def _failed(self, batch: Batch, exc: BatchFailed) -> ApplyReport | None:
        """The model could not answer: fill with the fallback, or record the failure and pass it."""
        cause = exc.__cause__ or exc
        reason, graph = cause.message if isinstance(cause, BmeError) else str(cause), self.graph
        if self.fallback is not None:
            try:
                result = self._extract(batch, replace(self.ctx, chat=self.fallback))
            except BmeError as second:
                reason = f"{reason}; the fallback failed too ({second})"
            else:
                self.report.filled.append(gaps.record_filled(graph, batch, reason, self.ctx.now(), "heuristic"))
                return result
        self._fail(batch, exc)
        self.report.recorded.append(gaps.record_failure(graph, batch, reason, self.ctx.now()))
        record_fingerprints(graph, self.chat, batch.context_start, batch.end_seq)
        graph.last_processed_seq = max(graph.last_processed_seq, batch.end_seq)
        self.save(graph)  # the record and the watermark together: a kill now loses nothing
        self.passed = True
        return None

    def _done(self, batch: Batch, result: ApplyReport) -> ApplyReport:
        graph, upkeep = self.graph, self.upkeep
        record_fingerprints(graph, self.chat, batch.context_start, batch.end_seq)
        graph.meta.extraction_count += 1
        if upkeep is not None:  # saved with the batch, so a kill before upkeep ends is redone next run
            graph.meta.extra[UPKEEP_DUE] = {"seq": batch.end_seq, "newNodeIds": list(result.new_node_ids)}
        self.save(graph)  # the batch is safe before any upkeep runs
        self.report.batches_done += 1
        self.report.totals.merge(result)
        if upkeep is not None:
            _run_upkeep(graph, self.ctx, batch.start_seq, self.save, upkeep, self.report)
        return result


def _run_upkeep(graph: Graph, ctx: MemoryContext, start_seq: int, save: Callable[[Graph], None],
                upkeep: Upkeep, report: IngestReport) -> None:
    """Run the upkeep recorded as due, clear the mark and save (a failure is reported, not raised)."""
    due = graph.meta.extra.get(UPKEEP_DUE) or {}
    end_seq = int(due.get("seq", graph.last_processed_seq))
    try:
        outcome = upkeep(graph, ctx, current_seq=end_seq, new_node_ids=list(due.get("newNodeIds") or []))
    except BmeError as exc:
        report.failures.append(IngestFailure("upkeep", start_seq, end_seq, exc))
        outcome = None
    graph.meta.extra.pop(UPKEEP_DUE, None)
    save(graph)  # whatever upkeep finished (even before failing) is consistent graph state
    if outcome is None:
        return
    report.upkeep_reports.append(outcome)
    for failure in getattr(outcome, "failures", None) or []:
        error = getattr(failure, "error", failure)  # a StepFailure, or a bare message
        error = error if isinstance(error, BmeError) else BmeError(str(error))
        report.failures.append(IngestFailure("upkeep", start_seq, end_seq, error))


# -- dry run --------------------------------------------------------------------------------
class ChatNames(Protocol):
    """What a dry run reads of a chat beside its messages (a Chat, or a chat_stream.StreamedChat)."""

    user_name: str | None
    character_name: str | None

    @property
    def assistant_turns(self) -> Sequence[int]: ...


class _NoModel:
    """Stands in for the chat model in a dry run, which never calls one."""

    name, offline = "dry-run", True

    def complete_json(self, task: Any) -> Any:
        raise AssertionError("a dry run never calls a model")


def dry_run_plan(chat: ChatLike, graph: Graph, settings: MemorySettings, *,
                 schema: Schema | None = None, until: int | None = None,
                 include_greeting: bool | None = None, language: str | None = None,
                 retry_failed: bool = False) -> list[tuple[Batch, int]]:
    """Each pending batch (the recorded failed ones first with retry_failed) with the token
    estimate of its prompt (graph overview as it is now)."""
    messages = sorted(chat.messages, key=lambda m: m.seq)
    lang = language or chat_language(chat, settings.memory_lang)
    return list(dry_run_stream(lambda: messages, chat, graph, settings, schema=schema, until=until,
                               include_greeting=include_greeting, language=lang, retry_failed=retry_failed))


def dry_run_stream(read: Callable[[], Iterable[MessageLike]], chat: ChatNames, graph: Graph,
                   settings: MemorySettings, *, language: str, schema: Schema | None = None,
                   until: int | None = None, include_greeting: bool | None = None,
                   retry_failed: bool = False) -> Iterator[tuple[Batch, int]]:
    """dry_run_plan over the chat's messages as `read()` streams them in seq order (called once,
    twice with failed batches to retry), holding about one batch of them at a time."""
    ctx = MemoryContext(chat=_NoModel(), embedder=None, schema=schema or Schema.default(),  # type: ignore[arg-type]
                        settings=settings, language=language)
    from .prompt_size import PromptSizer
    sizer = PromptSizer(graph, ctx, user_name=chat.user_name, character_name=story_character(chat))
    records = gaps.failed_batches(graph) if retry_failed else []
    if records:
        for batch in gaps.retry_batches(read(), records, chat.assistant_turns):
            yield batch, sizer.tokens(batch)
    for batch in plan_stream(read(), chat.assistant_turns, graph.last_processed_seq, settings,
                             include_greeting=include_greeting, until=until):
        yield batch, sizer.tokens(batch)
