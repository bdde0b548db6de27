"""The injection block (spec §5): ST-BME's Markdown tables, plus bme's token budget (§10.16).

`format_block` reproduces ST-BME's `formatInjection` exactly: `[Memory - Core]`, one table per
type in first-appearance order of the recall-sorted list; then `[Memory - Recalled]` with the
buckets in their fixed order under `## <heading>`; only columns some row fills; cells
escaped (`|` -> `\\|`, newline -> space) then cut at 200 UTF-16 units; a shared `appended` set so
no node prints twice. Headings are ST-BME's Chinese ones for "zh" memories and English
glosses of them otherwise (see HEADINGS). The result is trimmed, as ST-BME's caller does.

`fit_to_budget` adds nodes in priority order while the block's token estimate (§5.4) stays
within the budget. It prices each addition exactly from cached per-table costs (a row, or a
table re-priced when the row brings a new column), so it never formats the block per node;
the final block is formatted once and checked with the real estimate.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Sequence

from ..graph.model import Node
from ..graph.schema import Schema
from ..sentences import clip, is_cjk, split_sentences
from ..text import estimate_tokens, utf16_len, utf16_prefix
from ..text import token_units as units
from .excerpts import Unit
from .lexical import search_terms, tokenize
from .quote_block import GAP, QuoteSection

CellStyle = Literal["st-bme", "query"]

CELL_LIMIT = 200  # UTF-16 units, as JavaScript's slice counts them (an emoji is two)
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
    """One table cell: `|` -> `\\|`, newline -> space, then cut at 200 UTF-16 units (never half an emoji)."""
    return utf16_prefix(_js_string(value).replace("|", "\\|").replace("\n", " "), CELL_LIMIT)


def query_cell(value: Any, terms: frozenset[str] = frozenset()) -> str:
    """bme's cell: escaped as ST-BME does, but a text over 200 UTF-16 units keeps the sentences
    that hold most of the query's terms (in their order, gaps marked " … "), else its first
    sentences, and is never cut inside a word or a CJK phrase."""
    text = _js_string(value).replace("|", "\\|").replace("\n", " ")
    if utf16_len(text) <= CELL_LIMIT:
        return text
    sentences = split_sentences(text) or [text]
    hits = [len(terms.intersection(search_terms(x))) for x in sentences]
    order = sorted(range(len(sentences)), key=lambda i: (-hits[i], i)) if any(hits) else range(len(sentences))
    glue = "" if is_cjk(text) else " "
    chosen: list[int] = []
    for i in order:
        trial = sorted([*chosen, i])
        if utf16_len(_joined(sentences, trial, glue)) <= CELL_LIMIT:
            chosen = trial
        elif not chosen:
            return _clip_units(sentences[i], CELL_LIMIT)
    return _joined(sentences, chosen, glue)


def _clip_units(text: str, limit: int) -> str:
    """clip() with its limit in UTF-16 units: as many characters as the first `limit` units hold."""
    return clip(text, len(utf16_prefix(" ".join(text.split()), limit)))


def _joined(sentences: Sequence[str], picks: Sequence[int], glue: str) -> str:
    out: list[str] = []
    for k, i in enumerate(picks):
        if k:
            out.append(glue if i == picks[k - 1] + 1 else GAP.strip() if not glue else GAP)
        out.append(sentences[i])
    return "".join(out)


def make_cell(style: CellStyle, terms: frozenset[str]) -> Callable[[Any], str]:
    """The cell function of a block style: ST-BME's exact cut, or bme's query-aware cell."""
    return escape_cell if style == "st-bme" else (lambda value: query_cell(value, terms))


def has_value(value: Any) -> bool:
    """ST-BME's column test: the value is neither null nor the empty string."""
    return value is not None and value != ""


def recall_order(nodes: Iterable[Node]) -> list[Node]:
    """compareNodeRecallOrder: seqRange end (else seq) descending, then importance descending."""
    return sorted(nodes, key=lambda n: (-n.seq_end, -(n.importance if n.importance is not None else 0)))


def _table(nodes: Sequence[Node], type_id: str, schema: Schema, appended: set[str],
           cell: Callable[[Any], str]) -> list[str]:
    rows = [n for n in nodes if n.id not in appended]
    cols = [c for c in schema.columns(type_id) if any(has_value(n.fields.get(c)) for n in rows)]
    if not rows or not cols:
        return []
    appended.update(n.id for n in rows)
    lines = [f"{schema.get(type_id)['tableName']}:", "| " + " | ".join(cols) + " |",
             "| " + " | ".join("---" for _ in cols) + " |"]
    lines.extend("| " + " | ".join(cell(n.fields.get(c)) for c in cols) + " |" for n in rows)
    return lines


def _tables_by_type(nodes: Sequence[Node], schema: Schema, appended: set[str],
                    cell: Callable[[Any], str]) -> list[str]:
    lines: list[str] = []
    for type_id in dict.fromkeys(n.type for n in nodes):
        if type_id in schema:
            lines.extend(_table([n for n in nodes if n.type == type_id], type_id, schema, appended, cell))
    return lines


def format_block(core_nodes: Sequence[Node], recalled_nodes: Sequence[Node], schema: Schema,
                 language: str = "en", *, quotes: QuoteSection | None = None,
                 style: CellStyle = "st-bme", terms: frozenset[str] = frozenset()) -> str:
    """The injection text for these Core and Recalled nodes (spec §5) and quoted excerpts,
    trimmed; "" when all are empty. With the defaults, exactly ST-BME's block."""
    appended: set[str] = set()
    cell = make_cell(style, terms)
    parts: list[str] = []
    core = recall_order(core_nodes)
    if core:
        parts.append(CORE_TITLE)
        parts.extend(_tables_by_type(core, schema, appended, cell))
    recalled = recall_order(recalled_nodes)
    quoted = quotes.render() if quotes is not None else []
    if recalled or quoted:
        parts.extend(["", RECALLED_TITLE])
        titles = headings(language)
        for bucket in BUCKET_ORDER:
            members = [n for n in recalled if bucket_of(n.type) == bucket]
            if members:
                parts.append(f"## {titles[bucket]}")
                parts.extend(_tables_by_type(members, schema, appended, cell))
        parts.extend(quoted)
    return "\n".join(parts).strip()
