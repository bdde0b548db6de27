"""What `bme recall --format table` and `--explain` show: the block's rows, and every candidate."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .fit import Fitted, least_width
from .tables import cell, new_table

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

_PARTS = ("graph", "vector", "lexical", "importance", "decay", "final")


def recall_table(result) -> Fitted:  # noqa: ANN001 - RecallResult
    """The injected nodes as a table (`bme recall --format table`)."""
    from ..sentences import clip   # here, not at the top: render loads in every command
    t = new_table(title=f"recall: {result.tokens}/{result.budget} tokens", title_justify="left")
    for col in ("section", "type", "messages", "score"):
        t.add_column(col, justify="right" if col == "score" else "left", no_wrap=True)
    t.add_column("memory", min_width=24)
    for i in result.nodes:
        rng = i.node.seq_range
        t.add_row(i.section, i.node.type, f"#{rng[0]}-#{rng[1]}", f"{i.score:.3f}", cell(clip(i.node.label(), 90)))
    for q in result.quotes:
        t.add_row("excerpts", "excerpt", f"#{q.unit.seq}", f"{q.score:.3f}", cell(clip(q.unit.label(), 90)))
    return Fitted(t, drop=("section", "messages"))


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


class Explained:
    """Every candidate: a table where it fits whole, else one short paragraph per candidate."""

    def __init__(self, result) -> None:  # noqa: ANN001 - RecallResult
        self.result = result

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = _explain_grid(self.result)
        if least_width(table) <= options.max_width:
            yield table
            return
        yield from _explain_list(self.result)


def explain_table(result) -> Explained:  # noqa: ANN001 - RecallResult
    """Every candidate with its score parts and why it was taken or dropped (`--explain`)."""
    return Explained(result)


def _title(result) -> str:  # noqa: ANN001 - RecallResult
    return f"candidates for: {cell(result.query.user_message[:80])}"


def _explain_grid(result):  # noqa: ANN001, ANN202 - RecallResult -> Table
    from ..sentences import clip
    t = new_table(title=_title(result), title_justify="left")
    t.add_column("type", no_wrap=True)
    t.add_column("memory", min_width=24)
    for col in _PARTS:
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column("taken", no_wrap=True)
    t.add_column("why", min_width=16)
    for c in result.candidates:
        t.add_row(cell(c.node.type), cell(clip(c.node.label(), 48)),
                  *(f"{c.scores.get(p, 0.0):.3f}" for p in _PARTS), "yes" if c.taken else "no", cell(c.reason))
    return t


def _explain_list(result):  # noqa: ANN001, ANN202 - RecallResult -> Iterator[renderable]
    """Narrow terminals: per candidate its verdict, then its text, scores and reason indented."""
    from rich.padding import Padding
    from rich.text import Text

    from ..sentences import clip
    yield Text.from_markup(_title(result))
    for n, c in enumerate(result.candidates, 1):
        verdict = "taken" if c.taken else "dropped"
        yield Text.from_markup(f"{n}. [bold]{verdict}[/bold] · {cell(c.node.type)} · final {c.scores.get('final', 0.0):.3f}")
        scores = " · ".join(f"{p} {c.scores.get(p, 0.0):.3f}" for p in _PARTS[:-1])
        body = f"{cell(clip(c.node.label(), 160))}\n{scores}\nwhy: {cell(c.reason)}"
        yield Padding(Text.from_markup(body), (0, 0, 0, 3))
