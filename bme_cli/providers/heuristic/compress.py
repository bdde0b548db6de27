"""Offline compression: keep the most informative sentences of the children, merge the rest.

Also home of the small text helpers the other upkeep heuristics share (sentences,
informativeness, name lists, clipping), so they all judge text the same way.
"""
from __future__ import annotations

import re

from ...prompts.compress import CompressInput, CompressReply
from ...sentences import balance_quotes

SUMMARY_CHARS = {"en": 300, "zh": 150}
SECONDARY_CHARS = {"en": 160, "zh": 80}
MAX_NAMES = 8
MIN_SHARE_OF_BEST = 0.3

_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+|[\u4e00-\u9fff]")
_NAME = re.compile(r"\b[A-Z][a-z’']+(?:\s+[A-Z][a-z’']+)*")
_NAME_SPLIT = re.compile(r"[,，、;；/]|\band\b|和|与")
_STOP = frozenset("""a an the and or but of to in on at by for with from into onto as is are was were be
been being it its this that these those he she they them his her their him i you we our your not no so
then than there here very just also still again has have had do does did will would can could should
""".split())
# Words that mark causes, irreversible outcomes and foreshadowing: spec §6.1's "keep" list.
_WEIGHTY = frozenset("""because so therefore after before until died dies dead killed kills death lost
revealed reveals secret betrayed betrays promised promise swore vowed never first last finally destroyed
escaped captured married born found discovered learned decided agreed refused left arrived stole war
""".split())
_WEIGHTY_ZH = ("因为", "所以", "于是", "死", "杀", "发现", "秘密", "背叛", "承诺", "发誓", "终于", "决定",
               "离开", "到达", "失去", "真相", "原来", "拒绝", "逃", "抓")
_COLUMN_ROLE_LABELS = ("title", "name", "status", "scope")
_COLUMN_ROLE_NAMES = ("participants", "members", "characters")


def split_sentences(text: str) -> list[str]:
    """Sentences of a text (Latin and CJK end marks); blank pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s and s.strip()]


def content_words(text: str) -> set[str]:
    """Lower-cased content words (CJK characters count one by one)."""
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def informativeness(sentence: str) -> float:
    """How much a sentence carries: content words, names, numbers, causal/outcome words."""
    words = content_words(sentence)
    score = min(len(words), 25) * 0.2
    score += 0.6 * len(_NAME.findall(sentence))
    score += 0.3 * len(re.findall(r"\d+", sentence))
    score += 1.0 * len(words & _WEIGHTY) + 1.0 * sum(k in sentence for k in _WEIGHTY_ZH)
    return score


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of two texts' content words (0 when either is empty)."""
    wa, wb = content_words(a), content_words(b)
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def clip(text: str, limit: int) -> str:
    """Text cut to at most `limit` characters, at a word boundary when there is one, with '…'."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:，、") + "…"


def pick_sentences(texts: list[str], budget: int, language: str = "en") -> str:
    """The most informative, non-repeating sentences of `texts` within `budget` chars, in order."""
    pool = [(i, s) for i, s in enumerate(s for t in texts for s in split_sentences(t))]
    if not pool:
        return ""
    scores = {i: informativeness(s) for i, s in pool}
    floor = MIN_SHARE_OF_BEST * max(scores.values())
    ranked = sorted(pool, key=lambda p: (-scores[p[0]], p[0]))
    chosen: list[tuple[int, str]] = []
    used = 0
    sep = 0 if language == "zh" else 1
    for i, s in ranked:
        if chosen and scores[i] < floor:
            break           # filler ("It rained.") is dropped even when it would fit
        if any(overlap(s, c) >= 0.6 for _, c in chosen):
            continue        # a near-repeat of a sentence already kept
        if chosen and used + sep + len(s) > budget:
            continue
        chosen.append((i, s))
        used += len(s) + sep
    joiner = "" if language == "zh" else " "
    return clip(balance_quotes(joiner.join(s for _, s in sorted(chosen))), budget)


def split_names(text: str) -> list[str]:
    """Names from a list-like field ('A, B and C', 'A、B')."""
    return [p.strip() for p in _NAME_SPLIT.split(text or "") if p and p.strip()]


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
