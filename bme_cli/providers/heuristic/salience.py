"""How much a sentence of a stored memory carries, for the upkeep heuristics (compress, synopsis).

Content words, names, numbers and the words of causes, irreversible outcomes and
foreshadowing (spec §6.1's "keep" list); near-repeats found by word overlap; the best
sentences of several texts within a character budget. Extraction weighs raw dialogue its
own way (nlp.informativeness): chat lines are not summaries.
"""
from __future__ import annotations

import re

from ...sentences import balance_quotes, clip

MIN_SHARE_OF_BEST = 0.3

_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+|[\u4e00-\u9fff]")
_NAME = re.compile(r"\b[A-Z][a-z’']+(?:\s+[A-Z][a-z’']+)*")
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


def _sentences(text: str) -> list[str]:
    """Sentences of a text (Latin and CJK end marks, semicolons too); blank pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s and s.strip()]


def content_words(text: str) -> set[str]:
    """Lower-cased content words (CJK characters count one by one)."""
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def salience(sentence: str) -> float:
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


def pick_sentences(texts: list[str], budget: int, language: str = "en") -> str:
    """The most informative, non-repeating sentences of `texts` within `budget` chars, in order."""
    pool = [(i, s) for i, s in enumerate(s for t in texts for s in _sentences(t))]
    if not pool:
        return ""
    scores = {i: salience(s) for i, s in pool}
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
