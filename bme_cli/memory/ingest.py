"""Ingesting a chat into its graph: plan the batches, extract each, save after each, run upkeep.

Never lose work: the graph is handed to `save` after every batch (lastProcessedSeq, the
extraction counter and the fingerprints included), *before* upkeep runs; upkeep failures
are reported and never undo the batch. A batch the model could not answer stops the chat
with lastProcessedSeq where it was, so the next run retries it (later batches cannot run
first: lastProcessedSeq would jump over the failed one).

Edited chats: a fingerprint of every message a batch read (its context window included,
hidden messages too) is kept in `graph.meta.fingerprints`; `check_edits` compares them
with the chat, and `rebuild_from` rolls the graph back to before a message (see there).
Fingerprints are bme's own (memory/ does not import bme_cli.chat): a short hash of
(name, is_user, is_system, raw text), plus "/<swipe_id>" when the message has one, so a
swipe is told apart from an edit. Name and text are the file's (`raw_name`, `raw`), not what
memory reads of them: a change to the story-text settings is not an edit.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Sequence

from ..errors import BmeError
from ..graph.model import Graph, Node
from ..graph.ops import archive_node, invalidate_edge
from ..graph.schema import Schema
from ..settings import MemorySettings
from ..text import detect_language, estimate_tokens
from .apply import DELETED_KEY, EDGE_SEQ_KEY, HISTORY_KEY, ApplyReport
from .context import MemoryContext
from .extract import extract_batch, extract_task
from .trigger import Batch, ChatLike, MessageLike, plan_batches

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

    @property
    def ok(self) -> bool:
        """True when no batch failed (upkeep failures are reported but do not lose work)."""
        return self.batches_failed == 0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {"language": self.language, "batches_planned": self.batches_planned,
                "batches_done": self.batches_done, "batches_failed": self.batches_failed,
                "stopped": self.stopped, "last_processed_seq": self.last_processed_seq,
                "totals": self.totals.as_dict(), "failures": [f.message for f in self.failures],
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


def record_fingerprints(graph: Graph, chat: ChatLike, first_seq: int, last_seq: int) -> None:
    """Remember the fingerprint of every message first_seq..last_seq not seen yet (hidden ones too)."""
    msgs = chat.messages
    for s in range(max(0, first_seq), last_seq + 1):
        m = msgs[s] if s < len(msgs) and msgs[s].seq == s else None  # seq is the list position
        if m is None:  # not positional after all: look it up
            m = next((x for x in msgs if x.seq == s), None)
        if m is not None:  # never overwrite: an edit before this batch must stay detectable
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
    greeting = settings.include_greeting if include_greeting is None else include_greeting
    return plan_batches(chat, graph.last_processed_seq, settings, include_greeting=greeting,
                        until=until, flush_tail=flush_tail)


def ingest_chat(chat: ChatLike, graph: Graph, ctx: MemoryContext, *, save: Callable[[Graph], None],
                upkeep: Upkeep | None = None, until: int | None = None,
                include_greeting: bool | None = None,
                on_batch: Callable[[BatchProgress], None] | None = None,
                should_stop: Callable[[], bool] | None = None,
                flush_tail: bool = True) -> IngestReport:
    """Extract every pending batch of a chat into its graph, saving after each (see module doc)."""
    ctx = replace(ctx, language=chat_language(chat, ctx.settings.memory_lang))
    batches = plan_for(chat, graph, ctx.settings, until=until, include_greeting=include_greeting,
                       flush_tail=flush_tail)
    report = IngestReport(language=ctx.language, batches_planned=len(batches))
    before = _usage(ctx)
    if upkeep is not None and UPKEEP_DUE in graph.meta.extra:  # a run killed before its upkeep ended
        _run_upkeep(graph, ctx, graph.last_processed_seq, save, upkeep, report)
    for index, batch in enumerate(batches, 1):
        if should_stop is not None and should_stop():
            report.stopped = True
            break
        done = _ingest_batch(chat, graph, ctx, batch, save, upkeep, report)
        if on_batch is not None:
            failure = None if done else report.failures[-1].error
            on_batch(BatchProgress(index, len(batches), batch, done or None, failure,
                                   len(graph.active_nodes()), _usage(ctx)))
        if not done:
            break
    report.last_processed_seq = graph.last_processed_seq
    report.usage = _delta(before, _usage(ctx))
    return report


def _ingest_batch(chat: ChatLike, graph: Graph, ctx: MemoryContext, batch: Batch,
                  save: Callable[[Graph], None], upkeep: Upkeep | None,
                  report: IngestReport) -> ApplyReport | None:
    try:
        result = extract_batch(graph, batch, ctx, user_name=chat.user_name,
                               character_name=chat.character_name)
    except BmeError as exc:
        report.batches_failed += 1
        report.failures.append(IngestFailure("extract", batch.start_seq, batch.end_seq, exc))
        return None
    record_fingerprints(graph, chat, batch.context_start, batch.end_seq)
    graph.meta.extraction_count += 1
    if upkeep is not None:  # saved with the batch, so a kill before upkeep ends is redone next run
        graph.meta.extra[UPKEEP_DUE] = {"seq": batch.end_seq, "newNodeIds": list(result.new_node_ids)}
    save(graph)  # the batch is safe before any upkeep runs
    report.batches_done += 1
    report.totals.merge(result)
    if upkeep is not None:
        _run_upkeep(graph, ctx, batch.start_seq, save, upkeep, report)
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


# -- rebuild --------------------------------------------------------------------------------
def rebuild_from(graph: Graph, seq: int, now: int, *, assistant_turns: Sequence[int] | None = None) -> int:
    """Forget what came from messages >= seq so they can be extracted again; returns nodes changed.

    The chat's assistant_turns tell where lastProcessedSeq goes back to.

    * Nodes made from messages >= seq (seqRange starts at or after seq) are archived and
      their edges invalidated; so are upkeep nodes (synopsis, reflection) reaching seq.
    * A node that existed before seq but was updated from seq on (a character whose state
      changed) is rolled back to its state before seq from the snapshots apply.py keeps
      (last 8 updates); when the snapshot is gone it is archived, so no later state survives.
    * A compressed node reaching seq is archived and its children from before seq are
      brought back; nodes a delete from seq on archived are restored.
    * Edges made from seq on are invalidated; edges those updates invalidated come back.
    * lastProcessedSeq goes back to the last assistant turn before seq (seq - 1 without
      assistant_turns); fingerprints from seq on are dropped; seq <= 0 also resets the
      extraction counter. `--rebuild` is rebuild_from(graph, 0, now).
    """
    revive: set[str] = set()  # edges to bring back once every node is settled
    changed = _undo_deletes(graph, seq, revive) + _forget_nodes(graph, seq, now, revive)
    _settle_edges(graph, seq, now, revive)
    before = [t for t in (assistant_turns or []) if t < seq]
    target = max(before) if before else (seq - 1 if assistant_turns is None else -1)
    graph.last_processed_seq = min(graph.last_processed_seq, max(-1, target))
    graph.meta.fingerprints = {s: fp for s, fp in graph.meta.fingerprints.items() if int(s) < seq}
    if seq <= 0:
        graph.meta.extraction_count = 0
    return changed


def _forget_nodes(graph: Graph, seq: int, now: int, revive: set[str]) -> int:
    """Archive or roll back every active node reaching seq; returns how many."""
    changed = 0
    work = [n for n in graph.nodes if not n.archived and n.seq_end >= seq]
    while work:
        node = work.pop()
        changed += 1
        if node.level > 0 and node.child_ids:
            archive_node(graph, node, now)
            for child in filter(None, (graph.get(c) for c in node.child_ids)):
                if child.archived and child.parent_id == node.id:
                    child.archived, child.parent_id = False, None
                    if child.seq_end >= seq:
                        work.append(child)
        elif not (node.seq_range[0] < seq and _roll_back(node, seq, revive)):
            archive_node(graph, node, now)
    return changed


def _settle_edges(graph: Graph, seq: int, now: int, revive: set[str]) -> None:
    """Invalidate edges made from seq on; bring back the ones rolled-back updates invalidated."""
    for e in graph.edges:
        mark = e.extra.get(EDGE_SEQ_KEY)
        if isinstance(mark, int) and mark >= seq:
            invalidate_edge(e, now)
            revive.discard(e.id)
    for e in graph.edges:  # only between nodes that are still active
        a, b = graph.get(e.from_id), graph.get(e.to_id)
        if e.id in revive and a is not None and b is not None and not a.archived and not b.archived:
            e.invalid_at = None


def _undo_deletes(graph: Graph, seq: int, revive: set[str]) -> int:
    count = 0
    for node in graph.nodes:
        mark = node.extra.get(DELETED_KEY)
        if node.archived and isinstance(mark, dict) and int(mark.get("seq", -1)) >= seq:
            node.archived = False
            revive.update(mark.get("edges") or [])
            del node.extra[DELETED_KEY]
            count += 1
    return count


def _roll_back(node: Node, seq: int, revive: set[str]) -> bool:
    """Restore the node's state before seq from its update snapshots; False when impossible."""
    hist = node.extra.get(HISTORY_KEY)
    if not isinstance(hist, dict) or int(hist.get("lost", -1)) >= seq:
        return False
    entries = hist.get("entries") or []
    idx = next((i for i, e in enumerate(entries) if int(e.get("seq", -1)) >= seq), None)
    if idx is None:
        return False
    snap = entries[idx]
    rng = snap.get("seqRange") or [snap.get("nodeSeq", 0)] * 2
    if int(rng[-1]) >= seq:
        return False  # changed from seq on by something that kept no snapshot
    node.fields = dict(snap.get("fields") or {})
    node.seq = int(snap.get("nodeSeq", rng[-1]))
    node.seq_range = [int(rng[0]), int(rng[-1])]
    node.importance = float(snap.get("importance", node.importance))
    node.embedding = None
    for later in entries[idx:]:
        revive.update(later.get("invalidated") or [])
    hist["entries"] = entries[:idx]
    return True


# -- dry run --------------------------------------------------------------------------------
class _NoModel:
    """Stands in for the chat model in a dry run, which never calls one."""

    name, offline = "dry-run", True

    def complete_json(self, task: Any) -> Any:
        raise AssertionError("a dry run never calls a model")


def dry_run_plan(chat: ChatLike, graph: Graph, settings: MemorySettings, *,
                 schema: Schema | None = None, until: int | None = None,
                 include_greeting: bool | None = None, language: str | None = None) -> list[tuple[Batch, int]]:
    """Each pending batch with the token estimate of its prompt (graph overview as it is now)."""
    lang = language or chat_language(chat, settings.memory_lang)
    ctx = MemoryContext(chat=_NoModel(), embedder=None, schema=schema or Schema.default(),  # type: ignore[arg-type]
                        settings=settings, language=lang)
    out = []
    for batch in plan_for(chat, graph, settings, until=until, include_greeting=include_greeting):
        task = extract_task(graph, batch, ctx, user_name=chat.user_name,
                            character_name=chat.character_name)
        out.append((batch, estimate_tokens(task.system) + estimate_tokens(task.user)))
    return out
