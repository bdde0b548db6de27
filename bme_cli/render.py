"""Everything bme shows a person: Rich tables, the plain Markdown block, JSON. The only
module besides cli.py that imports rich. Results go to stdout, diagnostics to stderr;
no colour or live display when the stream is not a terminal or NO_COLOR is set.
"""
from __future__ import annotations

import json
import os
import re
import sys
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # rich is imported where a table or console is made: plain output needs none of it
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from .memory.stats import GraphStats

BAR_WIDTH = 24


# Rich falls back to 80 columns when the stream is not a terminal, which cuts bme's wider
# tables (ingest summary, recall --explain) into wrapped, ellipsised cells in a pipe or a
# log file. There, use $COLUMNS when set, else this width: wide enough for every table's
# usual content on one line per row, while a very long cell still wraps.
PIPE_WIDTH = 200


def _is_terminal(stream) -> bool:  # noqa: ANN001 - a text stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _console(stream) -> Console:  # noqa: ANN001 - a text stream
    width = None
    if not _is_terminal(stream) and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    from rich.console import Console
    return Console(file=stream, no_color=bool(os.environ.get("NO_COLOR")), highlight=False,
                   soft_wrap=False, width=width)


def out() -> Console:
    """The stdout console (results)."""
    return _console(sys.stdout)


def err() -> Console:
    """The stderr console (progress, notices, errors)."""
    return _console(sys.stderr)


# C0 controls but tab and newline, DEL and C1: graph text (imported, or written by a model)
# must not be able to set the window title, clear the screen or recolour the terminal.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """Text with terminal control characters removed."""
    return _CONTROLS.sub("", text)


def _cell(value: Any) -> str:
    """A table cell: printable, with Rich markup escaped."""
    from rich.markup import escape
    return escape(printable("" if value is None else str(value)))


def write_text(text: str) -> None:
    """Print text to stdout with one final newline: never Rich markup, never terminal controls."""
    text = printable(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def write_json(data: Any, *, compact: bool = False) -> None:
    """JSON to stdout: pretty by default, one line when compact (JSON Lines)."""
    text = (json.dumps(data, ensure_ascii=False, separators=(",", ":")) if compact
            else json.dumps(data, ensure_ascii=False, indent=2))
    # json escapes C0 controls itself; DEL and C1 only appear inside strings, so escaping
    # them keeps the JSON valid and the data exact.
    sys.stdout.write(_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    sys.stdout.flush()


def notice(message: str) -> None:
    """A one-line diagnostic on stderr."""
    sys.stderr.write(f"bme: {message}\n")
    sys.stderr.flush()


def error_line(message: str) -> None:
    """The one line an error gets on stderr."""
    sys.stderr.write(f"bme: error: {message}\n")
    sys.stderr.flush()


def _table(**options: Any) -> Table:
    """A Rich table (rich is imported on first use)."""
    from rich.table import Table
    return Table(**options)


def _bar(value: int, top: int) -> str:
    if top <= 0 or value <= 0:
        return ""
    return "█" * max(1, round(BAR_WIDTH * value / top))


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def stats_tables(s: GraphStats, *, tree: bool = False) -> list[Table]:
    """The Rich tables `bme stats` prints for one chat."""
    head = _table(title=_cell(s.chat), show_header=False, title_justify="left")
    head.add_column("what", style="bold")
    head.add_column("value")
    head.add_row("messages", f"{s.messages} ({s.hidden_messages} hidden)")
    head.add_row("assistant turns", str(s.assistant_turns))
    head.add_row("last processed message", f"#{s.last_processed_seq}" if s.last_processed_seq >= 0 else "none yet")
    head.add_row("pending turns", str(s.pending_turns))
    _batch_rows(head, s)
    head.add_row("extractions", str(s.extraction_count))
    emb = f"{s.embedded_nodes}/{s.active_nodes} active nodes"
    if s.embedding_model:
        emb += f" · {s.embedding_model} ({s.embedding_dim}-d)"
    head.add_row("embeddings", emb)
    head.add_row("Core block", f"~{s.core_tokens} tokens (unbudgeted)")
    head.add_row("graph", _cell(s.graph_path) + ("" if s.graph_exists else " (none yet)"))
    head.add_row("file sizes", f"chat {_size(s.chat_bytes)} · graph {_size(s.graph_bytes)}")
    nodes = _table(title="nodes", title_justify="left")
    for col in ("type", "active", "", "archived"):
        nodes.add_column(col, justify="right" if col in ("active", "archived") else "left")
    top = max(s.active_by_type.values(), default=0)
    for t, n in s.active_by_type.items():
        nodes.add_row(_cell(t), str(n), _bar(n, top), str(s.archived_by_type.get(t, 0)))
    edges = _table(title="edges", title_justify="left")
    for col in ("relation", "valid", "invalidated"):
        edges.add_column(col, justify="left" if col == "relation" else "right")
    for rel in sorted(set(s.edges_valid) | set(s.edges_invalidated)):
        edges.add_row(_cell(rel), str(s.edges_valid.get(rel, 0)), str(s.edges_invalidated.get(rel, 0)))
    tables = [head, nodes, edges]
    if tree:
        lv = _table(title="compression levels (active nodes)", title_justify="left")
        lv.add_column("type")
        lv.add_column("level", justify="right")
        lv.add_column("nodes", justify="right")
        for t, levels in s.levels.items():
            for level, n in levels.items():
                lv.add_row(_cell(t), str(level), str(n))
        tables.append(lv)
    return tables


def _batch_rows(head: Table, s: GraphStats) -> None:
    """The failed batches (still pending) and those the offline extractor filled."""
    if s.failed_batches:
        head.add_row("failed batches", _batches(s.failed_batches) + " (bme ingest --retry-failed)")
    if s.filled_batches:
        head.add_row("filled offline", _batches(s.filled_batches))


def _batches(records: list[dict[str, Any]], shown: int = 6) -> str:
    """'2: #4-#6, #9-#9' for failed-batch records."""
    spans = ", ".join(f"#{r['startSeq']}-#{r['endSeq']}" for r in records[:shown])
    return f"{len(records)}: {spans}" + (" …" if len(records) > shown else "")


def stats_summary(all_stats: Iterable[GraphStats]) -> Table:
    """One row per chat, for `bme stats` over several chats."""
    t = _table(title="summary", title_justify="left")
    for col in ("chat", "messages", "processed", "pending", "active", "archived", "edges", "Core tok"):
        t.add_column(col, justify="left" if col == "chat" else "right")
    for s in all_stats:
        t.add_row(_cell(s.chat), str(s.messages), str(s.last_processed_seq), str(s.pending_turns),
                  str(s.active_nodes), str(s.archived_nodes), str(sum(s.edges_valid.values())),
                  str(s.core_tokens))
    return t


def key_value_table(title: str, rows: Iterable[tuple[str, Any]]) -> Table:
    """A two-column table of labelled values."""
    t = _table(title=title, show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    for k, v in rows:
        t.add_row(_cell(k), _cell(v))
    return t


def rows_table(title: str, columns: list[str], rows: Iterable[Iterable[Any]]) -> Table:
    """A plain table with a header row."""
    t = _table(title=title, title_justify="left")
    for c in columns:
        t.add_column(c)
    for r in rows:
        t.add_row(*(_cell(v) for v in r))
    return t


def progress(quiet: bool) -> Progress | None:
    """A live progress display on stderr when it is a terminal, else None (log lines instead)."""
    if quiet or not sys.stderr.isatty() or os.environ.get("NO_COLOR"):
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=err(),
                    transient=False)


def ingest_summary(outcomes: list, usage, *, offline: bool = False) -> Table:  # noqa: ANN001 - ChatOutcome list, Usage
    """The table `bme ingest` ends with: one row per chat, then the model use."""
    t = _table(title="ingest", title_justify="left")
    for col in ("chat", "batches", "created", "updated", "archived", "edges", "skipped", "seconds", "status"):
        t.add_column(col, justify="left" if col in ("chat", "status") else "right")
    for o in outcomes:
        r = o.report
        tot = r.totals if r else None
        status = _ingest_status(o)
        t.add_row(_cell(o.chat.name), f"{r.batches_done}/{r.batches_planned}" if r else "-",
                  str(tot.created) if tot else "-", str(tot.updated) if tot else "-",
                  str(tot.archived) if tot else "-", str(tot.edges_created) if tot else "-",
                  str(sum(tot.skipped.values())) if tot else "-", f"{o.seconds:.1f}", status)
    u = usage.as_dict()
    cost = f" · cost ${u['cost']:.4f}" if u.get("cost") is not None else ""
    if offline:  # the heuristics answered: no model was called, no token spent
        t.caption = f"offline: no model called · texts embedded {u['embedded_texts']}"
    else:
        t.caption = (f"model calls {u['requests']} · tokens {u['prompt_tokens']}+{u['completion_tokens']}"
                     f" · cache hits {u['cache_hits']} · texts embedded {u['embedded_texts']}{cost}")
    return t


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


def dry_run_table(rows: list) -> Table:  # noqa: ANN001 - (chat, Batch, tokens) rows
    """What an ingest would send: each batch and its prompt token estimate."""
    t = _table(title="ingest --dry-run (no model called)", title_justify="left")
    for col in ("chat", "batch", "messages", "turns", "prompt tokens"):
        t.add_column(col, justify="left" if col == "chat" else "right")
    for i, (chat, batch, tokens) in enumerate(rows, 1):
        if DRY_RUN_ROWS // 2 < i <= len(rows) - DRY_RUN_ROWS // 2 and len(rows) > DRY_RUN_ROWS:
            if i == DRY_RUN_ROWS // 2 + 1:  # a long backlog: its first and last batches, the rest counted
                t.add_row("…", f"{len(rows) - DRY_RUN_ROWS:,} more", "", "", "")
            continue
        t.add_row(_cell(chat), str(i), f"#{batch.start_seq}-#{batch.end_seq}", str(len(batch.turns)), str(tokens))
    return t


# Batches a dry-run table lists (half from the start, half from the end); the total counts all.
DRY_RUN_ROWS = 40


def dry_run_total(rows: list, chat_endpoint, history=None) -> str:  # noqa: ANN001 - rows, ChatEndpoint, TokenHistory
    """The line under the dry-run table: batches, prompt tokens and, with prices set, the cost.

    With a call history (the call log's past extract calls with this model) the estimate is
    calibrated by what the server counted then, and completion tokens are their average.
    A separate line rather than a table caption, which Rich would wrap to the table's width.
    """
    total = sum(tokens for _, _, tokens in rows)
    per_batch = COMPLETION_TOKENS_PER_BATCH
    line = f"{len(rows)} batch(es), ~{total} prompt tokens"
    if history is not None:
        total, per_batch = round(total * history.prompt_ratio), round(history.completion_mean)
        line = (f"{len(rows)} batch(es), ~{total} prompt tokens, ~{per_batch * len(rows)} completion tokens "
                f"(calibrated on the last {history.calls} extract call(s) with {chat_endpoint.model} in bme log)")
    if chat_endpoint.price_prompt_per_m is not None:
        completion = per_batch * len(rows)
        cost = total * chat_endpoint.price_prompt_per_m / 1e6 + completion * (chat_endpoint.price_completion_per_m or 0) / 1e6
        return line + ("" if history is not None else f", ~{completion} completion tokens") + \
            f", estimated cost ${cost:.4f}"
    return line + " (set chat prices per million tokens in the config for a cost estimate)"


# A typical extraction reply's size, for cost estimates before anything was sent.
COMPLETION_TOKENS_PER_BATCH = 400


def recall_table(result) -> Table:  # noqa: ANN001 - RecallResult
    """The injected nodes as a table (`bme recall --format table`)."""
    t = _table(title=f"recall: {result.tokens}/{result.budget} tokens", title_justify="left")
    for col in ("section", "type", "messages", "score", "memory"):
        t.add_column(col, justify="right" if col == "score" else "left")
    for i in result.nodes:
        rng = i.node.seq_range
        t.add_row(i.section, i.node.type, f"#{rng[0]}-#{rng[1]}", f"{i.score:.3f}", _cell(i.node.label()[:90]))
    for q in result.quotes:
        t.add_row("excerpts", "excerpt", f"#{q.unit.seq}", f"{q.score:.3f}", _cell(q.unit.label()[:90]))
    return t


def explain_notes(result) -> list[str]:  # noqa: ANN001 - RecallResult
    """The lines `--explain` adds under its table: the graph's gaps and what the reranker did."""
    lines = [gaps_line(result.gaps)] if result.gaps else []
    if result.rerank is not None and not result.rerank.error:  # a failure is among the warnings
        lines.append(result.rerank.line())
    return lines


def gaps_line(spans: list[tuple[int, int]], shown: int = 6) -> str:
    """The --explain note that the graph knows nothing of some messages (failed batches)."""
    listed = ", ".join(f"#{a}-#{b}" for a, b in spans[:shown]) + (" …" if len(spans) > shown else "")
    return (f"the graph has gaps: {len(spans)} failed batch(es) ({listed}) were never extracted, so "
            "nothing from them can be recalled (bme ingest --retry-failed)")


def explain_table(result) -> Table:  # noqa: ANN001 - RecallResult
    """Every candidate with its score parts and why it was taken or dropped (`--explain`)."""
    t = _table(title=f"candidates for: {_cell(result.query.user_message[:80])}", title_justify="left")
    parts = ("graph", "vector", "lexical", "importance", "decay", "final")
    for col in ("type", "memory", *parts, "taken", "why"):
        t.add_column(col, justify="right" if col in parts else "left")
    for c in result.candidates:
        t.add_row(_cell(c.node.type), _cell(c.node.label()[:48]),
                  *(f"{c.scores.get(p, 0.0):.3f}" for p in parts), "yes" if c.taken else "no", _cell(c.reason))
    return t


def messages_table(title: str, views: list) -> Table:  # noqa: ANN001 - workflow.MessageView list
    """`bme show CHAT`: every message with its length in the file and as story text."""
    # The preview takes the width the other columns leave (expand + ratio), one line a message.
    t = _table(title=_cell(title), title_justify="left", expand=True)
    for col, justify in (("#", "right"), ("role", "left"), ("speaker", "left"), ("raw", "right"),
                         ("story", "right")):
        t.add_column(col, justify=justify, no_wrap=True, max_width=12 if col == "speaker" else None,
                     overflow="ellipsis")
    t.add_column("story text", no_wrap=True, overflow="ellipsis", ratio=1)
    for v in views:
        m = v.message
        role = "hidden" if m.is_system else m.role
        preview = " ".join(m.text[:400].split())[:120]
        t.add_row(str(m.seq), role, _cell(m.name or "-"), str(len(m.raw)), str(len(m.text)),
                  _cell(preview))
    return t


def message_text(view, *, raw: bool = False) -> str:  # noqa: ANN001 - workflow.MessageView
    """`bme show CHAT --message N`: a header line, what was dropped, the story text."""
    m = view.message
    speaker = m.name or "(no speaker)"
    if m.raw_name and m.raw_name != m.name:
        speaker += f" (the file says {m.raw_name!r})"
    head = (f"#{m.seq} · {'hidden ' if m.is_system else ''}{m.role} · {speaker} · line {m.line_no}"
            f" · {len(m.raw)} -> {len(m.text)} chars")
    lines = [head, "dropped: " + (", ".join(view.dropped) or "nothing")]
    if raw:
        lines += ["", "--- raw mes ---", m.raw, "", "--- story text ---"]
    lines += [m.text if m.text else "(no story text)"]
    return "\n".join(lines)
