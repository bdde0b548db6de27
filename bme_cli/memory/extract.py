"""One extraction batch end to end (spec §3.3-3.7): prompt -> model -> conflict check ->
operations -> embeddings -> lastProcessedSeq.

The graph is only changed after the model answered: a batch the model could not answer
raises `BatchFailed` and leaves the graph and `lastProcessedSeq` as they were (ingest then
records it as failed and moves on, see memory/gaps.py). Embedding
failures after the operations ran are not fatal: the nodes stay without vectors (the
next batch embeds them) and the report carries a warning.
"""
from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Any, Callable

from ..errors import InvalidReplyError, ProviderError
from ..graph.model import Graph, Node
from ..prompts.extract import (OVERVIEW_PER_TYPE, CreateOp, DialogueMessage, ExtractInput, ExtractReply,
                               OverviewGroup, OverviewNode, UpdateOp, build_extract_task, schema_types)
from ..reltime import dated, render_date, send_day  # noqa: F401  (render_date: also imported from here)
from ..story.cast import panel_people
from ..story.scene import panel_locations
from ..task import JsonTask
from .apply import ApplyReport, apply_operations, is_update_event
from . import guard
from .conflict import make_conflict_checker
from .context import MemoryContext
from .embed import check_embedding_model, embed_missing
from .excerpt_vectors import embed_units
from .excerpts import chat_units
from .extract_guard import Screened, problems, screen
from .trigger import Batch

MESSAGE_CHARS = 8000   # one message's text in the prompt; longer ones are clipped
LABEL_CHARS = 120
DETAIL_CHARS = 160
# New dialogue this long always holds something worth a memory (at least the batch's event),
# so a reply with no operations at all is implausible: asked again, then the batch fails.
# Chosen on the sample chats and LoCoMo (see docs/security.md, "Abnormal replies").
LONG_BATCH_CHARS = 2000


class BatchFailed(InvalidReplyError):
    """The model gave no usable reply for a batch; the graph and lastProcessedSeq are unchanged."""

    def __init__(self, batch: Batch, cause: BaseException):
        super().__init__(f"messages #{batch.start_seq}-#{batch.end_seq}: the model gave no usable "
                         f"extraction ({cause})",
                         "`bme ingest --retry-failed` tries it again, `--on-fail heuristic` fills it offline")
        self.batch = batch


def dialogue(batch: Batch, language: str) -> list[DialogueMessage]:
    """The batch's context window as dialogue lines; `new` from the user turn before the batch."""
    before = [m.seq for m in batch.context if m.role == "assistant" and m.seq < batch.start_seq]
    first_new = max(before) + 1 if before else batch.context_start
    return [dialogue_message(m, language, new=m.seq >= first_new) for m in batch.context]


def dialogue_message(m: Any, language: str, *, new: bool = True) -> DialogueMessage:
    """One chat message (MessageLike) as a line of the extraction prompt's dialogue."""
    places, people = _panels(getattr(m, "raw", "") or "")
    return DialogueMessage(seq=m.seq, role="user" if m.role == "user" else "assistant",
                           name=m.name or "", text=(m.text or "")[:MESSAGE_CHARS],
                           date=render_date(send_day(m), language), new=new,
                           panel_places=list(places), panel_people=list(people))


_PANELS: dict[str, tuple[list[tuple[str, ...]], list[str]]] = {}
PANELS_CACHE = 4096   # messages: each is in the context window of several batches


def _panels(raw: str) -> tuple[list[tuple[str, ...]], list[str]]:
    """`panel_locations(raw)` and `panel_people(raw)`, kept per raw text (a function of that
    text alone): every batch shows its whole context window again, and the searches run over
    each message's raw text."""
    hit = _PANELS.get(raw)
    if hit is None:
        if len(_PANELS) >= PANELS_CACHE:
            _PANELS.clear()
        hit = _PANELS[raw] = (panel_locations(raw), panel_people(raw))
    return hit


def _label_key(node: Node) -> str | None:
    for key in ("name", "title", "summary", "insight"):
        v = node.fields.get(key)
        if isinstance(v, str) and v.strip():
            return key
    return None


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def overview(graph: Graph, ctx: MemoryContext) -> list[OverviewGroup]:
    """Per schema type: the active count and the last 10 nodes (change events left out)."""
    return _overview(_active_by_type(graph), ctx)


def _active_by_type(graph: Graph) -> dict[str, list[Node]]:
    by_type: dict[str, list[Node]] = {}
    for n in graph.nodes:  # one pass: this runs once per batch on graphs of any size
        if not n.archived and not is_update_event(n):
            by_type.setdefault(n.type, []).append(n)
    return by_type


def _overview(by_type: dict[str, list[Node]], ctx: MemoryContext) -> list[OverviewGroup]:
    groups = []
    for t in ctx.schema.types:
        nodes = by_type.get(t["id"], [])
        # the last OVERVIEW_PER_TYPE by seq, graph order among equal seqs (a stable sort's tail)
        last = heapq.nlargest(OVERVIEW_PER_TYPE, range(len(nodes)), key=lambda i: (nodes[i].seq, i))
        shown = []
        for n in (nodes[i] for i in reversed(last)):
            key = _label_key(n)
            label = _clip(str(n.fields[key]), LABEL_CHARS) if key else "(none)"
            rest = "; ".join(f"{k}: {v}" for k, v in n.fields.items()
                             if k != key and v not in (None, "") and k != "visibility")
            shown.append(OverviewNode(id=n.id, label=label, detail=_clip(rest, DETAIL_CHARS)))
        groups.append(OverviewGroup(type=t["id"], label=t["label"], count=len(nodes), nodes=shown))
    return groups


NAMED_TYPES = ("character", "location")


def _names(by_type: dict[str, list[Node]]) -> dict[str, list[str]]:
    """Every active character's and place's name, in graph order (the overview shows ten)."""
    return {t: [n.fields["name"].strip() for n in by_type.get(t, [])
                if isinstance(n.fields.get("name"), str) and n.fields["name"].strip()] for t in NAMED_TYPES}


def build_extract_input(graph: Graph, batch: Batch, ctx: MemoryContext, *,
                        user_name: str | None = None, character_name: str | None = None) -> ExtractInput:
    """The typed input of a batch's extraction prompt (one pass over the graph's nodes)."""
    by_type = _active_by_type(graph)
    return ExtractInput(messages=dialogue(batch, ctx.language), start_seq=batch.start_seq,
                        end_seq=batch.end_seq, overview=_overview(by_type, ctx),
                        types=schema_types(ctx.schema), language="zh" if ctx.language == "zh" else "en",
                        user_name=user_name, character_name=character_name, names=_names(by_type))


def extract_task(graph: Graph, batch: Batch, ctx: MemoryContext, **names: str | None) -> JsonTask[ExtractReply]:
    """The JsonTask a batch would send (also used for dry-run token estimates)."""
    inp = build_extract_input(graph, batch, ctx, **names)
    task = build_extract_task(inp, ctx.schema, ctx.settings.extract_prompt or None)
    new_chars = sum(len(m.text.strip()) for m in inp.messages if m.new)
    return replace(task, plausible=_not_empty(new_chars)) if new_chars >= LONG_BATCH_CHARS else task


def _not_empty(new_chars: int) -> Callable[[ExtractReply], str | None]:
    """The check that a long batch's reply has at least one operation (valid, invalid or excess)."""
    def plausible(reply: ExtractReply) -> str | None:
        if reply.operations or reply.invalid_ops or reply.excess_ops:
            return None
        return (f"it had no operations although the new dialogue is {new_chars:,} characters long; "
                "record at least the batch's main event")
    return plausible


def _date_events(reply: ExtractReply, graph: Graph, batch: Batch, first_new: int, language: str) -> None:
    """Every event's summary carries absolute dates, whichever extractor wrote it (reltime.dated):
    resolved against the send date of the batch's first new message."""
    when = next((d for d in (send_day(m) for m in batch.context if m.seq >= first_new) if d is not None), None)
    if when is None:
        return
    for op in reply.operations:
        node = graph.get(op.node_id) if isinstance(op, UpdateOp) else None
        target = op.type if isinstance(op, CreateOp) else node.type if node is not None else None
        summary = op.fields.get("summary") if target == "event" else None
        if isinstance(summary, str):
            op.fields["summary"] = dated(summary, when, language == "zh")


def _node_type(graph: Graph, schema_types: set[str], op: Any) -> str | None:
    """The schema type an operation writes, None for an unknown type or node."""
    if isinstance(op, CreateOp):
        return op.type if op.type in schema_types else None
    node = graph.get(op.node_id) if isinstance(op, UpdateOp) else None
    return node.type if node is not None else None


def _screen(reply: ExtractReply, task: JsonTask[ExtractReply], graph: Graph, batch: Batch,
            ctx: MemoryContext) -> Screened:
    """Drop operations copied from the prompt or made up (extract_guard); a reply with nothing
    else is rejected like an invalid one, so the batch is recorded as failed, not left empty."""
    before = len(reply.operations)
    types = {t["id"] for t in ctx.schema.types}
    reply.operations, screened = screen(task, reply.operations, lambda op: _node_type(graph, types, op))
    if before and not reply.operations and screened.junk:  # (only repeats: the batch is covered)
        why = f"every operation was copied from the prompt or made up: {problems(screened.dropped_ops)}"
        raise BatchFailed(batch, guard.RejectedReply(f"the extract reply was rejected ({why})",
                                                     "a stronger model extracts better"))
    return screened


def _report_screened(report: ApplyReport, screened: Screened, batch: Batch) -> None:
    report.skip("junk_op", len(screened.dropped_ops))
    junk = screened.dropped_ops + screened.dropped_fields
    if junk:
        report.warnings.append(f"messages #{batch.start_seq}-#{batch.end_seq}: dropped what the model copied "
                               f"from the prompt or made up: {problems(junk)}")


def extract_batch(graph: Graph, batch: Batch, ctx: MemoryContext, *, user_name: str | None = None,
                  character_name: str | None = None) -> ApplyReport:
    """Extract one batch into the graph; raises BatchFailed when the model gave no usable reply."""
    if ctx.embedder is not None:
        check_embedding_model(graph, ctx.embedder)  # before anything changes
    task = extract_task(graph, batch, ctx, user_name=user_name, character_name=character_name)
    new = [m for m in task.data.messages if m.new]
    if not any(m.text.strip() for m in new):
        graph.last_processed_seq = max(graph.last_processed_seq, batch.end_seq)
        return ApplyReport()  # only blank messages (failed generations): nothing to ask
    try:
        reply = ctx.chat.complete_json(task)
    except InvalidReplyError as exc:
        raise BatchFailed(batch, exc) from exc
    screened = _screen(reply, task, graph, batch, ctx)
    _date_events(reply, graph, batch, min(m.seq for m in new), ctx.language)
    checker = make_conflict_checker(graph, ctx)
    if checker is not None:
        checker.prepare(reply.operations)
    report = apply_operations(graph, reply.operations, ctx, start_seq=min(m.seq for m in new),
                              end_seq=batch.end_seq, checker=checker)
    report.skip("invalid_op", reply.invalid_ops)
    _report_screened(report, screened, batch)
    report.skip("too_many_ops", reply.excess_ops)
    if reply.cut_off:
        report.skip("cut_off", 1)  # at least the unfinished operation
        report.warnings.append(
            f"messages #{batch.start_seq}-#{batch.end_seq}: the model's reply was cut off at the token limit; "
            f"its {len(reply.operations)} complete operation(s) were kept, the unfinished rest was dropped "
            "(raise chat.max_tokens or use a stronger model)")
    if checker is not None:
        report.conflict_checks += checker.asked
        report.warnings.extend(checker.warnings)
    try:
        embed_missing(graph, ctx.schema, ctx.embedder)
        if ctx.settings.excerpts:
            embed_units(graph, chat_units(batch.context), ctx.embedder)
    except ProviderError as exc:
        report.warnings.append(f"embedding failed, nodes stay without vectors until the next batch ({exc})")
    graph.last_processed_seq = max(graph.last_processed_seq, batch.end_seq)
    return report
