"""Tables that fit the width they are printed at, down to 60 columns and below.

A table says which columns it can do without (least useful first). When it is printed, those
are dropped until every header and every cell that must stay on one line (numbers, statuses)
fits whole; what is left wraps (text) or folds (file names: broken anywhere, never cut with an
ellipsis). Where the output is not a terminal, a table is as wide as its content needs.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult
    from rich.table import Column, Table

# The narrowest a wrapping text column may get before it is easier to drop another column:
# below this a memory or a reason turns into a tower of one-word lines.
TEXT_MIN = 16


class Fitted:
    """A Rich table that drops its optional columns to fit the console when printed."""

    def __init__(self, table: Table, drop: Iterable[str] = ()) -> None:
        self.table = table
        self.drop = list(drop)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = fit(self.table, self.drop, options.max_width)
        if table.expand and not options.is_terminal:
            # Off a terminal a table is as wide as its content, unless that is too wide: then
            # expanding is what lets a flexible column take exactly the width that is left.
            from rich.measure import Measurement
            table.expand = False
            natural = Measurement.get(console, options.update_width(10_000), table).maximum
            table.expand = natural > options.max_width
        yield table


def fit(table: Table, drop: list[str], width: int) -> Table:
    """The table with columns named in drop removed, in order, until it fits in width."""
    pending = list(drop)
    # An optional column goes before a name has to fold; a name folds only when none is left.
    while pending and least_width(table, whole_names=True) > width:
        name = pending.pop(0)
        table.columns[:] = [c for c in table.columns if _header(c) != name]
    return table


def least_width(table: Table, *, whole_names: bool = False) -> int:
    """The narrowest the table can be with no header cut and no no-wrap cell cut (and, with
    whole_names, no name folded)."""
    left, right = _padding(table)
    n = len(table.columns)
    borders = (n + 1 if table.show_edge else n - 1) if table.box else 0
    fixed = [c for c in table.columns if not c.ratio]
    flexible = [c for c in table.columns if c.ratio]
    # Flexible columns share what the fixed ones leave (padding included) by their ratios,
    # so that share must give each of them its least width.
    least = {id(c): _column_least(c, table.show_header, whole_names) for c in table.columns}
    shares = sum(c.ratio for c in flexible)
    flex = max(((least[id(c)] + left + right) * shares / c.ratio for c in flexible), default=0)
    return borders + sum(least[id(c)] + left + right for c in fixed) + math.ceil(flex)


def _column_least(column: Column, show_header: bool, whole_names: bool) -> int:
    head = _cell_len(column.header) if show_header else 0
    if column.ratio:   # flexible: takes its share of what the others leave
        return max(head, column.min_width or 0)
    if column.no_wrap:
        widest = _longest_cell(column)
        return max(head, min(widest, column.max_width) if column.max_width else widest)
    if column.overflow == "fold":   # a name: folds to any width, but keep its header whole
        return max(head, column.min_width or 0, _longest_cell(column) if whole_names else 1)
    return max(head, column.min_width or 0, min(TEXT_MIN, _longest_cell(column)))


def _longest_cell(column: Column) -> int:
    return max((_cell_len(c) for c in column.cells), default=0)


def _padding(table: Table) -> tuple[int, int]:
    _, right, _, left = table.padding
    return left, right


def _header(column: Column) -> str:
    return str(column.header)


def _cell_len(cell: Any) -> int:
    from rich.text import Text
    if isinstance(cell, str):
        return Text.from_markup(cell).cell_len
    if isinstance(cell, Text):
        return cell.cell_len
    return len(str(cell))
