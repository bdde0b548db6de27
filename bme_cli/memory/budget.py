"""Filling the block within a token budget (§10.16): nodes and quoted excerpts share one fill.

`fit_to_budget` takes candidates in priority order, (node, "core"|"recalled") or
(unit, "excerpts"), and adds each while the block's token estimate (§5.4) stays within the
budget. `BlockCost` prices every addition exactly from per-table and per-line costs (a row,
a table re-priced when the row brings a new column, a quoted line), so the block is never
formatted to price a candidate; the final block is formatted once and checked with the
real estimate.

What each candidate adds decides whether it goes in at once or waits ("deferred": tried only
after everything else, so it never displaces new information but still prints when there is
room): a row or a quote with every word already in the block or in the query, or with
REDUNDANCY of its words in one taken row, waits. An event whose source messages are all
quoted whole is never printed beside them, and is taken out again when the last of its
messages gets quoted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence, Union

from ..graph.model import Node
from ..graph.schema import Schema
from ..text import estimate_tokens
from ..text import token_units as units
from .excerpts import Unit
from .inject import (CORE_TITLE, RECALLED_TITLE, CellStyle, bucket_of, format_block, has_value, headings,
                     make_cell)
from .lexical import tokenize
from .quote_block import QuoteSection

REDUNDANCY = 0.8  # share of a row's words already in one taken row that makes it a near-duplicate
Item = Union[Node, Unit]
Sources = Callable[[Node], Sequence[int]]


@dataclass
class _Table:
    """Cost bookkeeping of one table: its schema columns in use and each row's cell costs."""

    name_units: int
    col_units: dict[str, int]
    cols: set[str] = field(default_factory=set)
    rows: dict[str, dict[str, int]] = field(default_factory=dict)  # node id -> cell costs
    cost: int = 0  # units of all its lines plus the newlines between them

    def price(self, cells: dict[str, int], without: str | None = None) -> tuple[int, set[str]]:
        """(cost of the table with this row added, or with row `without` removed; the column set)."""
        rows = [r for nid, r in self.rows.items() if nid != without]
        if without is None:
            if self.rows and cells.keys() <= self.cols:
                k = len(self.cols)
                return self.cost + 1 + 4 + sum(cells.values()) + 3 * (k - 1), self.cols
            rows.append(cells)
        if not rows:
            return 0, set()
        cols = set().union(*(r.keys() for r in rows))
        k = len(cols)
        header = 4 + sum(self.col_units[c] for c in cols) + 3 * (k - 1)
        sep = 4 + 3 * k + 3 * (k - 1)
        body = sum(4 + sum(r.get(c, 0) for c in cols) + 3 * (k - 1) for r in rows)
        return self.name_units + header + sep + body + (3 + len(rows) - 1), cols


@dataclass
class FitResult:
    """What fit_to_budget took (in priority order), what it had to leave out, and the block."""

    core: list[Node]
    recalled: list[Node]
    rejected: list[Item]
    empty: list[Node]
    text: str
    tokens: int
    deferred: list[Item] = field(default_factory=list)  # near-duplicates (taken only if room was left)
    quoted: list[Unit] = field(default_factory=list)    # excerpt units in the block
    replaced: list[Node] = field(default_factory=list)  # events left out: their messages are quoted whole
    repeats: list[Unit] = field(default_factory=list)   # quotes left out: a taken row already says it


class BlockCost:
    """Exact running cost of the block as nodes and quotes are added (O(1) per try, no formatting)."""

    def __init__(self, schema: Schema, language: str, cache: dict[str, Any] | None = None, *,
                 style: CellStyle = "st-bme", terms: frozenset[str] = frozenset()):
        self.schema = schema
        self.titles = headings(language)
        self.tables: dict[tuple[str, str, str], _Table] = {}
        self.buckets: dict[str, int] = {}  # bucket -> Recalled tables in it
        self.style, self.terms = style, terms
        self.cell = make_cell(style, terms)
        # node id -> (cell units, shown words); shared between queries only for query-independent cells
        self.cache = cache if cache is not None else {}
        self.local: dict[str, tuple[dict[str, int], frozenset[str]]] = {}
        self.sum = {"core": 0, "recalled": 0}  # tables' units + one newline each, per section
        self.quotes = QuoteSection(language)
        self.version = 0  # bumped by every change: a dry run's price holds while it is unchanged
        self.priced: tuple[tuple, tuple] | None = None  # try_add's last dry run and its price

    def _profile(self, node: Node) -> tuple[dict[str, int], frozenset[str]]:
        got = self.cache.get(node.id) or self.local.get(node.id)
        if got is None:
            values = {c: node.fields.get(c) for c in self.schema.columns(node.type)
                      if has_value(node.fields.get(c))}
            shown = {c: self.cell(v) for c, v in values.items()}
            got = ({c: units(v) for c, v in shown.items()}, frozenset(tokenize(" ".join(shown.values()))))
            fixed = self.style == "st-bme" or all(len(str(v)) <= 150 for v in values.values())
            (self.cache if fixed else self.local)[node.id] = got
        return got

    def cells(self, node: Node) -> dict[str, int]:
        """Units of the node's non-empty schema cells ({} when it has none)."""
        return self._profile(node)[0]

    def words(self, node: Node) -> frozenset[str]:
        """The search tokens of what the node's row shows."""
        return self._profile(node)[1]

    def _key(self, node: Node, section: str) -> tuple[str, str, str]:
        return (section, bucket_of(node.type) if section == "recalled" else "", node.type)

    def _new_table(self, type_id: str) -> _Table:
        t = self.schema.get(type_id) or {}
        cols = self.schema.columns(type_id)
        return _Table(units(f"{t.get('tableName', '')}:"), {c: units(c) for c in cols})

    def total(self, core: int | None = None, recalled: int | None = None,
              buckets: Iterable[str] | None = None, quotes: int | None = None) -> int:
        """Units of the trimmed block, optionally with other section sums, buckets or quote cost."""
        core = self.sum["core"] if core is None else core
        rec = self.sum["recalled"] if recalled is None else recalled
        buckets = self.buckets if buckets is None else buckets
        quotes = self.quotes.cost if quotes is None else quotes
        out = -1  # n lines joined by n-1 newlines; each part below counts its own newline
        if core:
            out += units(CORE_TITLE) + 1 + core
        if rec or quotes:
            out += units(RECALLED_TITLE) + (2 if core else 1) + rec
            out += sum(units(f"## {self.titles[b]}") + 1 for b in buckets)
        if quotes:
            out += quotes + 1
        return max(0, out)

    def try_add(self, node: Node, section: str, limit_units: int, commit: bool = True) -> bool:
        """Add the node if the block stays within limit_units; False (and no change) otherwise.

        With commit=False only answer whether it would fit.
        """
        asked = (node.id, section, limit_units, self.version)
        if self.priced is not None and self.priced[0] == asked:  # the dry run just before: its answer
            key, table, cells, cost, cols, sums, buckets = self.priced[1]
        else:
            cells = self.cells(node)
            key = self._key(node, section)
            table = self.tables.get(key) or self._new_table(node.type)
            cost, cols = table.price(cells)
            delta = cost - table.cost + (0 if table.rows else 1)  # a new table adds its own newline
            sums = dict(self.sum)
            sums[section] += delta
            buckets = dict(self.buckets)
            if section == "recalled" and not table.rows:
                buckets[key[1]] = buckets.get(key[1], 0) + 1
            if self.total(sums["core"], sums["recalled"], buckets) > limit_units:
                return False
        if not commit:
            self.priced = (asked, (key, table, cells, cost, cols, sums, buckets))
            return True
        table.cols, table.cost = cols, cost
        table.rows[node.id] = cells
        self.tables[key] = table
        self.sum, self.buckets = sums, buckets
        self.version += 1
        self.priced = None
        return True

    def remove(self, node: Node, section: str) -> None:
        """Take a node's row out again (its table, and its bucket heading, go with the last row)."""
        self.version += 1
        key = self._key(node, section)
        table = self.tables[key]
        cost, cols = table.price({}, without=node.id)
        del table.rows[node.id]
        self.sum[section] += cost - table.cost - (0 if table.rows else 1)
        table.cost, table.cols = cost, cols
        if not table.rows:
            del self.tables[key]
            if section == "recalled":
                self.buckets[key[1]] -= 1
                if not self.buckets[key[1]]:
                    del self.buckets[key[1]]

    def try_quote(self, unit: Unit, limit_units: int, commit: bool = True) -> bool:
        """Quote a unit if the block stays within limit_units; False (and no change) otherwise."""
        if self.total(quotes=self.quotes.price(unit)) > limit_units:
            return False
        if commit:
            self.quotes.add(unit)
            self.version += 1
        return True


def fit_to_budget(candidates: Iterable[tuple[Item, str]], schema: Schema, language: str, budget: int, *,
                  max_misses: int = 64, cell_cache: dict[str, Any] | None = None,
                  redundancy: float | None = REDUNDANCY, known: Iterable[str] = (),
                  style: CellStyle = "st-bme", terms: frozenset[str] = frozenset(),
                  sources: Sources | None = None) -> FitResult:
    """Take (node, "core"|"recalled") and (unit, "excerpts") pairs in priority order while the
    block fits `budget` tokens.

    A candidate that does not fit is skipped and later, smaller ones are still tried, until
    `max_misses` in a row have failed. Nodes of types missing from the schema or without any
    filled schema column are left out (they would print nothing). Never exceeds the budget.
    Near-duplicates and rows that say nothing new (every word already in the block or in
    `known`, the query's words) are deferred (see the module doc). `sources(node)` gives the
    messages an event was made from that have quotable units; with it, an event is never
    printed beside quotes of all of them. `cell_cache` (node id -> cell costs) may be shared
    between calls on unchanged nodes.
    """
    cost = BlockCost(schema, language, cell_cache, style=style, terms=terms)
    state = _Fill(cost, 4 * max(0, budget), max_misses, redundancy, frozenset(known), sources)
    for item, section in candidates:
        if not state.offer(item, section):
            break
    state.misses = 0
    for item, section in state.deferred:
        if not state.offer(item, section, final=True):
            break
    fit = _finish(state, schema, language, budget)
    fit.deferred = [n for n, _ in state.deferred]
    return fit


def _id(item: Item) -> str:
    return item.id if isinstance(item, Node) else f"unit:{item.key}:{item.part}"


class _Fill:
    """The running state of fit_to_budget."""

    def __init__(self, cost: BlockCost, limit: int, max_misses: int, redundancy: float | None,
                 known: frozenset[str], sources: Sources | None):
        self.cost, self.limit, self.max_misses, self.redundancy = cost, limit, max_misses, redundancy
        self.sources = sources
        self.taken: dict[str, tuple[Item, str]] = {}
        self.words: list[frozenset[str]] = []
        self.seen: set[str] = set(known)  # every word the reader already has
        self.rejected: list[Item] = []
        self.empty: list[Node] = []
        self.deferred: list[tuple[Item, str]] = []
        self.replaced: list[Node] = []
        self.repeats: list[Unit] = []
        self.misses = 0

    def _redundant(self, words: frozenset[str]) -> bool:
        if self.redundancy is None:
            return False
        if words <= self.seen:
            return True  # nothing new at all (also: a name-only row for a name the query holds)
        need = self.redundancy * len(words)
        return bool(need) and any(len(words & w) >= need for w in self.words)

    def _repeats_a_row(self, words: frozenset[str]) -> bool:
        """Words of which one taken row already shows REDUNDANCY (a quote never printed then)."""
        if self.redundancy is None or not words:
            return False
        need = self.redundancy * len(words)
        return any(len(words & w) >= need for w in self.words)

    def _quoted_whole(self, node: Node) -> bool:
        if self.sources is None or node.type != "event":
            return False
        seqs = self.sources(node)
        return bool(seqs) and all(self.cost.quotes.whole(s) for s in seqs)

    def offer(self, item: Item, section: str, final: bool = False) -> bool:
        """Consider one candidate; False once `max_misses` in a row did not fit."""
        key = _id(item)
        if key in self.taken:
            return True
        if isinstance(item, Unit):
            words = frozenset(tokenize(item.text))
            fits = self.cost.try_quote(item, self.limit, commit=False)
        else:
            if item.type not in self.cost.schema or not self.cost.cells(item):
                self.empty.append(item)
                return True
            if self._quoted_whole(item):
                self.replaced.append(item)
                return True
            words = self.cost.words(item)
            # A row that does not fit now never will (the block only grows), so the (costlier)
            # near-duplicate test runs only for rows that fit.
            fits = self.cost.try_add(item, section, self.limit, commit=False)
        if not fits:
            self.rejected.append(item)
            self.misses += 1
            return self.misses < self.max_misses
        if isinstance(item, Unit) and self._repeats_a_row(words):
            self.repeats.append(item)  # a quote of what a taken row already says: never printed
            return True
        if not final and self._redundant(words):
            self.deferred.append((item, section))
            return True
        if isinstance(item, Unit):
            self.cost.try_quote(item, self.limit)
            self._drop_events_quoted_whole(item.seq)
        else:
            self.cost.try_add(item, section, self.limit)
        self.taken[key] = (item, section)
        self.words.append(words)
        self.seen |= words
        self.misses = 0
        return True

    def _drop_events_quoted_whole(self, seq: int) -> None:
        """Events taken earlier whose messages are now all quoted whole leave the block."""
        if not self.cost.quotes.whole(seq):
            return
        for key, (item, section) in list(self.taken.items()):
            if isinstance(item, Node) and item.seq_range[0] <= seq <= item.seq_end and self._quoted_whole(item):
                self.cost.remove(item, section)
                del self.taken[key]
                self.replaced.append(item)


def _finish(state: _Fill, schema: Schema, language: str, budget: int) -> FitResult:
    taken = list(state.taken.values())
    cost = state.cost
    while True:
        core = [n for n, s in taken if s == "core" and isinstance(n, Node)]
        recalled = [n for n, s in taken if s == "recalled" and isinstance(n, Node)]
        quoted = [u for u, s in taken if s == "excerpts" and isinstance(u, Unit)]
        text = format_block(core, recalled, schema, language, quotes=cost.quotes,
                            style=cost.style, terms=cost.terms)
        tokens = estimate_tokens(text)
        if tokens <= budget or not taken:
            return FitResult(core, recalled, state.rejected, state.empty, text, tokens,
                             quoted=quoted, replaced=state.replaced, repeats=state.repeats)
        # Safety net only: the running cost is exact, so this should never run.
        state.rejected.append(taken.pop()[0])
        if isinstance(state.rejected[-1], Unit):
            cost.quotes = _requote([u for u, s in taken if s == "excerpts"], language)


def _requote(units_: Iterable[Item], language: str) -> QuoteSection:
    section = QuoteSection(language)
    for u in units_:
        if isinstance(u, Unit):
            section.add(u)
    return section
