"""Offline compression: keep the most informative sentences of the children, merge the rest.

Sentences are weighed by salience.py (shared with the synopsis), name lists split by nlp.py
(shared by every heuristic), text cut by bme_cli/sentences.py (shared by every layer).
"""
from __future__ import annotations

from ...prompts.compress import CompressInput, CompressReply
from ...sentences import clip
from .nlp import split_names
from .salience import pick_sentences

SUMMARY_CHARS = {"en": 300, "zh": 150}
SECONDARY_CHARS = {"en": 160, "zh": 80}
MAX_NAMES = 8
_COLUMN_ROLE_LABELS = ("title", "name", "status", "scope")
_COLUMN_ROLE_NAMES = ("participants", "members", "characters")


def merge_names(values: list[str], limit: int = MAX_NAMES) -> str:
    """The union of several name lists, first appearance first, case-insensitively unique."""
    seen: dict[str, str] = {}
    for v in values:
        for name in split_names(v):
            seen.setdefault(name.casefold(), name)
    return ", ".join(list(seen.values())[:limit])


def _merge_labels(values: list[str], column: str) -> str:
    present = [v for v in values if v]
    if not present:
        return ""
    if column in ("status", "scope"):
        return present[-1]              # the latest state of the story wins
    distinct = list(dict.fromkeys(present))
    return " / ".join(distinct[:3])


def answer(inp: CompressInput) -> CompressReply:
    """Merge a chunk's children column by column (deterministic)."""
    lang = "zh" if inp.language == "zh" else "en"
    main = next((c.name for c in inp.columns if c.required and c.name not in _COLUMN_ROLE_LABELS),
                next((c.name for c in inp.columns if c.required), inp.columns[0].name))
    fields: dict[str, str] = {}
    for col in inp.columns:
        values = [n.fields.get(col.name, "") for n in inp.nodes]
        if col.name in _COLUMN_ROLE_NAMES:
            fields[col.name] = merge_names(values)
        elif col.name in _COLUMN_ROLE_LABELS:
            fields[col.name] = _merge_labels(values, col.name)
        else:
            budget = (SUMMARY_CHARS if col.name == main else SECONDARY_CHARS)[lang]
            fields[col.name] = pick_sentences(values, budget, lang)
    if not any(fields.values()):
        fields[main] = clip(" ".join(v for n in inp.nodes for v in n.fields.values()), SUMMARY_CHARS[lang]) \
            or inp.type_id
    return CompressReply(fields=fields)
