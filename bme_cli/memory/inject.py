"""The injection block (spec §5): ST-BME's Markdown tables, plus bme's token budget (§10.16).

`format_block` reproduces ST-BME's `formatInjection` exactly: `[Memory - Core]`, one table per
type in first-appearance order of the recall-sorted list; then `[Memory - Recalled]` with the
buckets in their fixed order under `## <heading>`; only columns some row fills; cells
escaped (`|` -> `\\|`, newline -> space) then cut at 200 characters; a shared `appended` set so
no node prints twice. Headings are ST-BME's Chinese ones for "zh" memories and English
glosses of them otherwise (see HEADINGS). The result is trimmed, as ST-BME's caller does.

`fit_to_budget` adds nodes in priority order while the block's token estimate (§5.4) stays
within the budget. It prices each addition exactly from cached per-table costs (a row, or a
table re-priced when the row brings a new column), so it never formats the block per node;
the final block is formatted once and checked with the real estimate.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ..graph.model import Node
from ..graph.schema import Schema
from ..text import estimate_tokens
from .lexical import tokenize

CELL_LIMIT = 200
REDUNDANCY = 0.8  # share of a row's words already in one taken row that makes it a near-duplicate
CORE_TITLE = "[Memory - Core]"
RECALLED_TITLE = "[Memory - Recalled]"
BUCKET_ORDER = ("state", "episodic", "reflective", "rule", "other")
HEADINGS = {
    "zh": {"state": "当前状态记忆", "episodic": "情景事件记忆", "reflective": "反思与长期锚点",
           "rule": "规则与约束", "other": "其他关联记忆"},
    "en": {"state": "Current state memory", "episodic": "Episodic event memory",
           "reflective": "Reflections and long-term anchors", "rule": "Rules and constraints",
           "other": "Other related memories"},
}
GROUP_OF_TYPE = {"character": "state", "location": "state", "event": "episodic", "thread": "episodic",
                 "reflection": "reflective", "synopsis": "reflective", "rule": "rule"}
_CJK = re.compile(r"[\u4e00-\u9fff]")


def bucket_of(type_id: str) -> str:
    """The Recalled bucket of a node type (spec §4.4 groups)."""
    return GROUP_OF_TYPE.get(type_id, "other")


def headings(language: str) -> dict[str, str]:
    """Bucket headings for a memory language ("zh": ST-BME's own; anything else: English)."""
    return HEADINGS["zh" if language == "zh" else "en"]


def _js_string(value: Any) -> str:
    # JavaScript's String(value), which ST-BME applies to every cell.
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return ",".join(_js_string(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)  # JS would print "[object Object]"
    return str(value)


def escape_cell(value: Any) -> str:
    """One table cell: `|` -> `\\|`, newline -> space, then cut at 200 characters."""
    return _js_string(value).replace("|", "\\|").replace("\n", " ")[:CELL_LIMIT]


def has_value(value: Any) -> bool:
    """ST-BME's column test: the value is neither null nor the empty string."""
    return value is not None and value != ""


def recall_order(nodes: Iterable[Node]) -> list[Node]:
    """compareNodeRecallOrder: seqRange end (else seq) descending, then importance descending."""
    return sorted(nodes, key=lambda n: (-n.seq_end, -(n.importance if n.importance is not None else 0)))


def _table(nodes: Sequence[Node], type_id: str, schema: Schema, appended: set[str]) -> list[str]:
    rows = [n for n in nodes if n.id not in appended]
    cols = [c for c in schema.columns(type_id) if any(has_value(n.fields.get(c)) for n in rows)]
    if not rows or not cols:
        return []
    appended.update(n.id for n in rows)
    lines = [f"{schema.get(type_id)['tableName']}:", "| " + " | ".join(cols) + " |",
             "| " + " | ".join("---" for _ in cols) + " |"]
    lines.extend("| " + " | ".join(escape_cell(n.fields.get(c)) for c in cols) + " |" for n in rows)
    return lines


def _tables_by_type(nodes: Sequence[Node], schema: Schema, appended: set[str]) -> list[str]:
    lines: list[str] = []
    for type_id in dict.fromkeys(n.type for n in nodes):
        if type_id in schema:
            lines.extend(_table([n for n in nodes if n.type == type_id], type_id, schema, appended))
    return lines


def format_block(core_nodes: Sequence[Node], recalled_nodes: Sequence[Node], schema: Schema,
                 language: str = "en") -> str:
    """The injection text for these Core and Recalled nodes (spec §5), trimmed; "" when both are empty."""
    appended: set[str] = set()
    parts: list[str] = []
    core = recall_order(core_nodes)
    if core:
        parts.append(CORE_TITLE)
        parts.extend(_tables_by_type(core, schema, appended))
    recalled = recall_order(recalled_nodes)
    if recalled:
        parts.extend(["", RECALLED_TITLE])
        titles = headings(language)
        for bucket in BUCKET_ORDER:
            members = [n for n in recalled if bucket_of(n.type) == bucket]
            if members:
                parts.append(f"## {titles[bucket]}")
                parts.extend(_tables_by_type(members, schema, appended))
    return "\n".join(parts).strip()


# -- budget ------------------------------------------------------------------------------


def units(text: str) -> int:
    """Quarter-tokens of text: len + CJK count, so tokens = ceil(units / 4) (spec §5.4)."""
    return len(text) + len(_CJK.findall(text))


@dataclass
class _Table:
    """Cost bookkeeping of one table: its schema columns in use and each row's cell costs."""

    name_units: int
    col_units: dict[str, int]
    cols: set[str] = field(default_factory=set)
    rows: list[dict[str, int]] = field(default_factory=list)
    cost: int = 0  # units of all its lines plus the newlines between them

    def price(self, cells: dict[str, int]) -> tuple[int, set[str]]:
        """(cost of the table with this row added, the column set it would have)."""
        cols = self.cols | cells.keys()
        k = len(cols)
        row = 4 + sum(cells.values()) + 3 * (k - 1)
        if cols == self.cols and self.rows:
            return self.cost + 1 + row, cols
        header = 4 + sum(self.col_units[c] for c in cols) + 3 * (k - 1)
        sep = 4 + 3 * k + 3 * (k - 1)
        body = sum(4 + sum(r.get(c, 0) for c in cols) + 3 * (k - 1) for r in self.rows) + row
        lines = 3 + len(self.rows) + 1
        return self.name_units + header + sep + body + (lines - 1), cols


@dataclass
class FitResult:
    """What fit_to_budget took (in priority order), what it had to leave out, and the block."""

    core: list[Node]
    recalled: list[Node]
    rejected: list[Node]
    empty: list[Node]
    text: str
    tokens: int
    deferred: list[Node] = field(default_factory=list)  # near-duplicates (taken only if room was left)


class BlockCost:
    """Exact running cost of the block as nodes are added (no formatting per node, O(1) per try)."""

    def __init__(self, schema: Schema, language: str, cache: dict[str, Any] | None = None):
        self.schema = schema
        self.titles = headings(language)
        self.tables: dict[tuple[str, str, str], _Table] = {}
        self.buckets: set[str] = set()
        self.cache = cache if cache is not None else {}  # node id -> (cell units, shown words)
        self.sum = {"core": 0, "recalled": 0}  # tables' units + one newline each, per section

    def _profile(self, node: Node) -> tuple[dict[str, int], frozenset[str]]:
        got = self.cache.get(node.id)
        if got is None:
            shown = {c: escape_cell(node.fields.get(c)) for c in self.schema.columns(node.type)
                     if has_value(node.fields.get(c))}
            got = ({c: units(v) for c, v in shown.items()}, frozenset(tokenize(" ".join(shown.values()))))
            self.cache[node.id] = got
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

    def total(self, core: int | None = None, recalled: int | None = None, buckets: set[str] | None = None) -> int:
        """Units of the trimmed block, optionally with other section sums or bucket set."""
        core = self.sum["core"] if core is None else core
        rec = self.sum["recalled"] if recalled is None else recalled
        buckets = self.buckets if buckets is None else buckets
        out = -1  # n lines joined by n-1 newlines; each part below counts its own newline
        if core:
            out += units(CORE_TITLE) + 1 + core
        if rec:
            out += units(RECALLED_TITLE) + (2 if core else 1) + rec
            out += sum(units(f"## {self.titles[b]}") + 1 for b in buckets)
        return max(0, out)

    def try_add(self, node: Node, section: str, limit_units: int, commit: bool = True) -> bool:
        """Add the node if the block stays within limit_units; False (and no change) otherwise.

        With commit=False only answer whether it would fit.
        """
        cells = self.cells(node)
        key = self._key(node, section)
        table = self.tables.get(key) or self._new_table(node.type)
        cost, cols = table.price(cells)
        delta = cost - table.cost + (0 if table.rows else 1)  # a new table adds its own newline
        sums = dict(self.sum)
        sums[section] += delta
        buckets = self.buckets | {key[1]} if section == "recalled" else self.buckets
        if self.total(sums["core"], sums["recalled"], buckets) > limit_units:
            return False
        if commit:
            table.cols, table.cost = cols, cost
            table.rows.append(cells)
            self.tables[key] = table
            self.sum, self.buckets = sums, buckets
        return True


def fit_to_budget(candidates: Iterable[tuple[Node, str]], schema: Schema, language: str, budget: int, *,
                  max_misses: int = 64, cell_cache: dict[str, Any] | None = None,
                  redundancy: float | None = REDUNDANCY, known: Iterable[str] = ()) -> FitResult:
    """Take (node, "core"|"recalled") pairs in priority order while the block fits `budget` tokens.

    A node that does not fit is skipped and later, smaller ones are still tried, until
    `max_misses` in a row have failed. Nodes of types missing from the schema or without any
    filled schema column are left out (they would print nothing). Never exceeds the budget.
    A near-duplicate (at least `redundancy` of its words already in one taken row) is
    deferred: tried only after everything else, so it never displaces new information but
    still prints when the budget has room for all. So is a row that says nothing new at all:
    every word of it already in the block or in `known` (the query's words: a row that only
    repeats a name the user just typed). `cell_cache` (node id -> cell costs) may be shared
    between calls on unchanged nodes.
    """
    cost = BlockCost(schema, language, cell_cache)
    state = _Fill(cost, 4 * max(0, budget), max_misses, redundancy, frozenset(known))
    for node, section in candidates:
        if not state.offer(node, section):
            break
    state.misses = 0
    for node, section in state.deferred:
        if not state.offer(node, section, final=True):
            break
    fit = _finish(list(state.taken.values()), state.rejected, state.empty, schema, language, budget)
    fit.deferred = [n for n, _ in state.deferred]
    return fit


class _Fill:
    """The running state of fit_to_budget."""

    def __init__(self, cost: BlockCost, limit: int, max_misses: int, redundancy: float | None,
                 known: frozenset[str] = frozenset()):
        self.cost, self.limit, self.max_misses, self.redundancy = cost, limit, max_misses, redundancy
        self.taken: dict[str, tuple[Node, str]] = {}
        self.words: list[frozenset[str]] = []
        self.seen: set[str] = set(known)  # every word the reader already has
        self.rejected: list[Node] = []
        self.empty: list[Node] = []
        self.deferred: list[tuple[Node, str]] = []
        self.misses = 0

    def _redundant(self, words: frozenset[str]) -> bool:
        if self.redundancy is None:
            return False
        if words <= self.seen:
            return True  # nothing new at all (also: a name-only row for a name the query holds)
        need = self.redundancy * len(words)
        return bool(need) and any(len(words & w) >= need for w in self.words)

    def offer(self, node: Node, section: str, final: bool = False) -> bool:
        """Consider one node; False once `max_misses` nodes in a row did not fit."""
        if node.id in self.taken:
            return True
        if node.type not in self.cost.schema or not self.cost.cells(node):
            self.empty.append(node)
            return True
        words = self.cost.words(node)
        # A row that does not fit now never will (the block only grows), so the (costlier)
        # near-duplicate test runs only for rows that fit.
        if self.cost.try_add(node, section, self.limit, commit=False):
            if not final and self._redundant(words):
                self.deferred.append((node, section))
                return True
            self.cost.try_add(node, section, self.limit)
            self.taken[node.id] = (node, section)
            self.words.append(words)
            self.seen |= words
            self.misses = 0
            return True
        self.rejected.append(node)
        self.misses += 1
        return self.misses < self.max_misses


def _finish(taken: list[tuple[Node, str]], rejected: list[Node], empty: list[Node], schema: Schema,
            language: str, budget: int) -> FitResult:
    while True:
        core = [n for n, s in taken if s == "core"]
        recalled = [n for n, s in taken if s == "recalled"]
        text = format_block(core, recalled, schema, language)
        tokens = estimate_tokens(text)
        if tokens <= budget or not taken:
            return FitResult(core, recalled, rejected, empty, text, tokens)
        # Safety net only: the running cost is exact, so this should never run.
        rejected.append(taken.pop()[0])

