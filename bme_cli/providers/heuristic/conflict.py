"""The offline conflict-check heuristic: skip near-identical memories, merge same-name ones.

* skip when the new text and the best match share >= 90% of their tokens (Jaccard);
* update a shown match with the same name (or title) when the new memory adds or changes
  a field, merging the fields (the new values win);
* skip a same-name match when it adds nothing; otherwise add.
"""
from __future__ import annotations

import re

from ...prompts.conflict import ConflictInput, ConflictReply

SKIP_JACCARD = 0.9
_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


def tokens(text: str) -> set[str]:
    """Lowercase words and single CJK characters."""
    return set(_TOKEN.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    """Token-set overlap of two texts (0 when both are empty)."""
    ta, tb = tokens(a), tokens(b)
    return len(ta & tb) / len(ta | tb) if ta | tb else 0.0


def _key(fields: dict) -> str:
    for k in ("name", "title"):
        v = fields.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip().casefold()
    return ""


def answer(data: ConflictInput) -> ConflictReply:
    """add, update (same name, new information) or skip (near-identical text)."""
    if not data.matches:
        return ConflictReply(action="add")
    best = data.matches[0]
    if jaccard(data.text, best.text) >= SKIP_JACCARD:
        return ConflictReply(action="skip", target_id=best.id)
    key = _key(data.fields)
    for match in data.matches:
        if key and _key(match.fields) == key:
            new = {k: v for k, v in data.fields.items() if v not in (None, "") and match.fields.get(k) != v}
            if not new:
                return ConflictReply(action="skip", target_id=match.id)
            merged = {**{k: v for k, v in match.fields.items() if v not in (None, "")}, **new}
            return ConflictReply(action="update", target_id=match.id, merged_fields=merged)
    return ConflictReply(action="add")
