"""Offline precise recall: rank candidates by their fused score plus word overlap with the user message.

Deterministic, at most `max_nodes`. The overlap term is the share of the user message's
distinct words (CJK: characters) that a candidate's fields contain, weighted so a candidate
naming what the user just said outranks a slightly higher-scored one that does not.
"""
from __future__ import annotations

import re

from ...prompts.recall import RecallInput, RecallReply

OVERLAP_WEIGHT = 0.5
_TOKEN = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]")
_STOP = frozenset("""a an the and or but of to in on at by for with from into as is are was were be been it
its this that these those he she they them his her their him i you we our your not no so do does did what
when where who why how will would can could should about me my""".split())


def _words(text: str) -> set[str]:
    out: set[str] = set()
    for w in _TOKEN.findall(text.lower()):
        if _CJK.search(w):
            out.update(ch for ch in w if _CJK.match(ch))
        elif w not in _STOP and len(w) > 1:
            out.add(w)
    return out


def answer(inp: RecallInput) -> RecallReply:
    """Pick up to max_nodes candidate ids: score + OVERLAP_WEIGHT * overlap, ties in candidate order."""
    query = _words(inp.user_message or " ".join(inp.recent_messages[-1:]))
    ranked = []
    for pos, c in enumerate(inp.candidates):
        overlap = len(query & _words(" ".join(c.fields.values()))) / len(query) if query else 0.0
        ranked.append((-(c.score + OVERLAP_WEIGHT * overlap), pos, c.id))
    picked = [cid for _, _, cid in sorted(ranked)[: inp.max_nodes]]
    reason = (f"offline: top {len(picked)} by score and word overlap with the user message"
              if picked else "offline: no candidates")
    return RecallReply(selected_ids=picked, reason=reason)
