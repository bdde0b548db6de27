"""The tables of ingest, stats and the upkeep commands, each fitted to the console's width."""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Iterable

from . import printable
from .fit import Fitted

if TYPE_CHECKING:
    from rich.table import Table

    from ..memory.stats import GraphStats

BAR_WIDTH = 24

# A typical extraction reply's size, for cost estimates before anything was sent.
COMPLETION_TOKENS_PER_BATCH = 400


def cell(value: Any) -> str:
    """A table cell: printable, with Rich markup escaped."""
    from rich.markup import escape
    return escape(printable("" if value is None else str(value)))


def new_table(**options: Any) -> Table:
    """A Rich table (rich is imported on first use)."""
    from rich.table import Table
    return Table(**options)


def add_columns(t: Table, columns: Iterable[str], *, names: Iterable[str] = (), text: Iterable[str] = ()) -> None:
    """Columns by header: names fold (never cut), text wraps, the rest are right-aligned numbers."""
    names, text = set(names), set(text)
    for col in columns:
        if col in names:
            t.add_column(col, overflow="fold")
        elif col in text:
            t.add_column(col)
        else:
            t.add_column(col, justify="right", no_wrap=True)


def _bar(value: int, top: int) -> str:
    if top <= 0 or value <= 0:
        return ""
    return "█" * max(1, round(BAR_WIDTH * value / top))


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _seq(seq: int) -> str:
    return f"#{seq}" if seq >= 0 else "none yet"


def stats_tables(s: GraphStats, *, tree: bool = False) -> list[Fitted]:
    """The tables `bme stats` prints for one chat."""
    head = key_value_table(s.chat, [
        ("messages", f"{s.messages} ({s.hidden_messages} hidden)"),
        ("assistant turns", s.assistant_turns),
        ("last processed message", _seq(s.last_processed_seq)),
        ("pending turns", s.pending_turns),
        *_batch_rows(s),
        ("extractions", s.extraction_count),
        ("embeddings", f"{s.embedded_nodes}/{s.active_nodes} active nodes"
         + (f" · {s.embedding_model} ({s.embedding_dim}-d)" if s.embedding_model else "")),
        ("Core block", f"~{s.core_tokens} tokens (unbudgeted)"),
        ("graph", str(s.graph_path) + ("" if s.graph_exists else " (none yet)")),
        ("file sizes", f"chat {_size(s.chat_bytes)} · graph {_size(s.graph_bytes)}"),
    ])
    nodes = new_table(title="nodes", title_justify="left")
    add_columns(nodes, ("type", "active", "", "archived"), text=("type", ""))
    top = max(s.active_by_type.values(), default=0)
    for t, n in s.active_by_type.items():
        nodes.add_row(cell(t), str(n), _bar(n, top), str(s.archived_by_type.get(t, 0)))
    edges = new_table(title="edges", title_justify="left")
    add_columns(edges, ("relation", "valid", "invalidated"), text=("relation",))
    for rel in sorted(set(s.edges_valid) | set(s.edges_invalidated)):
        edges.add_row(cell(rel), str(s.edges_valid.get(rel, 0)), str(s.edges_invalidated.get(rel, 0)))
    tables = [head, Fitted(nodes, drop=("",)), Fitted(edges)]
    if tree:
        lv = new_table(title="compression levels (active nodes)", title_justify="left")
        add_columns(lv, ("type", "level", "nodes"), text=("type",))
        for t, levels in s.levels.items():
            for level, n in levels.items():
                lv.add_row(cell(t), str(level), str(n))
        tables.append(Fitted(lv))
    return tables


def _batch_rows(s: GraphStats) -> list[tuple[str, str]]:
    """The failed batches (still pending) and those the offline extractor filled."""
    rows = []
    if s.failed_batches:
        rows.append(("failed batches", _batches(s.failed_batches) + " (bme ingest --retry-failed)"))
    if s.filled_batches:
        rows.append(("filled offline", _batches(s.filled_batches)))
    return rows


def _batches(records: list[dict[str, Any]], shown: int = 6) -> str:
    """'2: #4-#6, #9-#9' for failed-batch records."""
    spans = ", ".join(f"#{r['startSeq']}-#{r['endSeq']}" for r in records[:shown])
    return f"{len(records)}: {spans}" + (" …" if len(records) > shown else "")


def stats_summary(all_stats: Iterable[GraphStats]) -> Fitted:
    """One row per chat, for `bme stats` over several chats."""
    t = new_table(title="summary", title_justify="left")
    add_columns(t, ("chat", "messages", "processed", "pending", "active", "archived", "edges", "Core tok"),
                names=("chat",))
    for s in all_stats:
        t.add_row(cell(s.chat), str(s.messages), _seq(s.last_processed_seq), str(s.pending_turns),
                  str(s.active_nodes), str(s.archived_nodes), str(sum(s.edges_valid.values())),
                  str(s.core_tokens))
    return Fitted(t, drop=("Core tok", "archived", "edges", "pending", "messages"))


def key_value_table(title: str, rows: Iterable[tuple[str, Any]]) -> Fitted:
    """A two-column table of labelled values (a long value, a path say, folds)."""
    t = new_table(title=cell(title), show_header=False, title_justify="left")
    t.add_column("what", style="bold", no_wrap=True)
    t.add_column("value", overflow="fold")
    for k, v in rows:
        t.add_row(cell(k), cell(v))
    return Fitted(t)


def rows_table(title: str, columns: list[str], rows: Iterable[Iterable[Any]], *,
               drop: Iterable[str] = ()) -> Fitted:
    """A plain table with a header row; the columns in drop go first when it is too wide."""
    t = new_table(title=cell(title), title_justify="left")
    for c in columns:
        t.add_column(c, min_width=len(c))
    for r in rows:
        t.add_row(*(cell(v) for v in r))
    return Fitted(t, drop=drop)


def compress_table(report, *, dry_run: bool) -> Fitted:  # noqa: ANN001 - CompressReport
    """`bme compress`: each chunk merged (or that would be), and the node it became."""
    rows = [(c.type_id, c.level, len(c.child_ids), f"#{c.seq_range[0]}-#{c.seq_range[1]}",
             c.new_id or ("(dry run)" if dry_run else "skipped")) for c in report.chunks]
    return rows_table("compression" + (" (dry run)" if dry_run else ""),
                      ["type", "level", "children", "messages", "new node"], rows, drop=("level",))


def compress_notes(report, *, dry_run: bool) -> list[str]:  # noqa: ANN001 - CompressReport
    """The lines `bme compress` ends with on stderr: what was (or would be) done, and what was skipped."""
    if not (report.chunks or report.rejected or report.errors):
        return ["nothing to compress yet: no type has enough old nodes (--force compresses down to fanIn)"]
    if dry_run:
        lines = [f"{len(report.chunks)} chunk(s) would be compressed; nothing was written"]
    else:
        lines = [f"{len(report.created)} node(s) created, {report.archived} archived, "
                 f"{report.edges_reattached} edge(s) re-attached, {report.skipped} chunk(s) skipped, "
                 f"{report.rejected} reply(ies) rejected"]
    return lines + [f"skipped: {e}" for e in report.errors]


def sleep_table(report, *, dry_run: bool) -> Fitted:  # noqa: ANN001 - SleepReport
    """`bme sleep`: the nodes below the threshold, every one forgotten (or that would be)."""
    from ..sentences import clip
    rows = [(n.id[:8], n.type, clip(n.label(), 60), f"{r:.3f}") for n, r in report.items]
    title = (f"{'would be forgotten (dry run)' if dry_run else 'forgotten'}: retention below "
             f"{report.threshold}, {report.age} time")
    return rows_table(title, ["id", "type", "memory", "retention"], rows, drop=("id",))


def sleep_note(report, *, dry_run: bool) -> str:  # noqa: ANN001 - SleepReport
    """The line `bme sleep` ends with on stderr: how many nodes were evaluated and forgotten."""
    if dry_run:
        return f"{report.evaluated} evaluated, {len(report.items)} would be forgotten; nothing was written"
    return f"{report.evaluated} evaluated, {report.archived} forgotten (bme sleep --restore brings them back)"


def forgotten_list(nodes: Iterable) -> str:  # noqa: ANN001 - Node iterable
    """`bme sleep --restore --dry-run`: one tab-separated line (id, type, label) per forgotten node."""
    return "\n".join(f"{n.id}\t{n.type}\t{n.label()}" for n in nodes)


def ingest_summary(outcomes: list, usage, *, offline: bool = False) -> Fitted:  # noqa: ANN001 - ChatOutcome list, Usage
    """The table `bme ingest` ends with: one row per chat, then the model use."""
    t = new_table(title="ingest", title_justify="left")
    add_columns(t, ("chat", "batches", "created", "updated", "archived", "edges", "skipped", "seconds", "status"),
                names=("chat",))
    t.columns[-1].justify = "left"
    for o in outcomes:
        r = o.report
        tot = r.totals if r else None
        t.add_row(cell(o.chat.name), f"{r.batches_done}/{r.batches_planned}" if r else "-",
                  str(tot.created) if tot else "-", str(tot.updated) if tot else "-",
                  str(tot.archived) if tot else "-", str(tot.edges_created) if tot else "-",
                  str(sum(tot.skipped.values())) if tot else "-", f"{o.seconds:.1f}", _ingest_status(o))
    u = usage.as_dict()
    cost = f" · cost ${u['cost']:.4f}" if u.get("cost") is not None else ""
    if offline:  # the heuristics answered: no model was called, no token spent
        t.caption = f"offline: no model called · texts embedded {u['embedded_texts']}"
    else:
        t.caption = (f"model calls {u['requests']} · tokens {u['prompt_tokens']}+{u['completion_tokens']}"
                     f" · cache hits {u['cache_hits']} · texts embedded {u['embedded_texts']}{cost}")
    return Fitted(t, drop=("seconds", "archived", "skipped", "edges", "updated"))


def ingest_notes(outcomes: list) -> list[str]:  # noqa: ANN001 - ChatOutcome list
    """Lines under the ingest table: batches filled offline, upkeep replies rejected."""
    lines = []
    for o in outcomes:
        r = o.report
        if r is None:
            continue
        if r.filled:
            spans = ", ".join(f.span for f in r.filled)
            lines.append(f"{o.chat.name}: {len(r.filled)} batch(es) the model could not answer were "
                         f"filled by the offline heuristic: {spans}")
        if r.upkeep_rejected:
            lines.append(f"{o.chat.name}: upkeep rejected {r.upkeep_rejected} model reply(ies) "
                         "(empty, a date, a loop, a prompt copy or off-topic); the old memories were kept")
    return lines


def _ingest_status(o) -> str:  # noqa: ANN001 - ChatOutcome
    """ok, stopped, failed (the provider), or 'gaps' (failed batches recorded in the graph)."""
    r = o.report
    hard = r is None or any(f.stage == "extract" and f.start_seq not in {x.start_seq for x in r.recorded}
                            for f in r.failures)
    if o.error and (hard or not r.outstanding):
        return "failed"
    if r.outstanding:
        return "gaps"
    return "stopped" if r.stopped else "ok"


def dry_run_table(rows: "DryRunRows") -> Fitted:
    """What an ingest would send: each chat's batches, numbered from 1, with prompt tokens."""
    t = new_table(title="ingest --dry-run (no model called)", title_justify="left")
    add_columns(t, ("chat", "batch", "messages", "turns", "prompt tokens"), names=("chat",))
    for number, (chat, n, batch, tokens) in enumerate([*rows.head, *rows.tail], 1):
        if number == len(rows.head) + 1 and rows.count > len(rows.head) + len(rows.tail):
            t.add_row("…", f"{rows.count - DRY_RUN_ROWS:,} more", "", "", "")  # a long backlog: the rest counted
        t.add_row(cell(chat), str(n), f"#{batch.start_seq}-#{batch.end_seq}", str(len(batch.turns)), str(tokens))
    return Fitted(t, drop=("turns",))


# Batches a dry-run table lists (half from the start, half from the end); the total counts all.
DRY_RUN_ROWS = 40


class DryRunRows:
    """The rows a dry-run table lists (its first and last DRY_RUN_ROWS // 2 batches, each numbered
    within its chat) and the count and tokens of all: a backlog of any length in bounded memory."""

    def __init__(self) -> None:
        self.head: list[tuple[str, int, Any, int]] = []   # (chat, number in chat, Batch, tokens)
        self.tail: deque[tuple[str, int, Any, int]] = deque(maxlen=DRY_RUN_ROWS // 2)
        self.count = self.tokens = 0
        self._numbers: dict[str, int] = {}

    def add(self, chat: str, batch: Any, tokens: int) -> None:  # noqa: ANN401 - a memory.trigger.Batch
        """One more batch of `chat`, after all added so far."""
        number = self._numbers[chat] = self._numbers.get(chat, 0) + 1
        row = (chat, number, batch, tokens)
        (self.head.append if len(self.head) < DRY_RUN_ROWS // 2 else self.tail.append)(row)
        self.count += 1
        self.tokens += tokens


def dry_run_total(rows: DryRunRows, chat_endpoint, history=None) -> str:  # noqa: ANN001 - ChatEndpoint, TokenHistory
    """The line under the dry-run table: batches, prompt tokens and, with prices set, the cost.

    With a call history (the call log's past extract calls with this model) the estimate is
    calibrated by what the server counted then, and completion tokens are their average.
    A separate line rather than a table caption, which Rich would wrap to the table's width.
    """
    total, count = rows.tokens, rows.count
    per_batch = COMPLETION_TOKENS_PER_BATCH
    line = f"{count} batch(es), ~{total} prompt tokens"
    if history is not None:
        total, per_batch = round(total * history.prompt_ratio), round(history.completion_mean)
        line = (f"{count} batch(es), ~{total} prompt tokens, ~{per_batch * count} completion tokens "
                f"(calibrated on the last {history.calls} extract call(s) with {chat_endpoint.model} in bme log)")
    if chat_endpoint.price_prompt_per_m is not None:
        completion = per_batch * count
        cost = total * chat_endpoint.price_prompt_per_m / 1e6 + completion * (chat_endpoint.price_completion_per_m or 0) / 1e6
        return line + ("" if history is not None else f", ~{completion} completion tokens") + \
            f", estimated cost ${cost:.4f}"
    return line + " (set chat prices per million tokens in the config for a cost estimate)"
