"""Offline synopsis: the top events (importance, compression level, recency) and current states."""
from __future__ import annotations

from ...prompts.synopsis import SynopsisEvent, SynopsisInput, SynopsisReply
from .compress import clip, pick_sentences

TOP_EVENTS = 5
EVENT_CHARS = {"en": 420, "zh": 140}
STATE_CHARS = {"en": 260, "zh": 90}
TOTAL_CHARS = {"en": 900, "zh": 300}
MAX_CHARACTERS = 4
_CLOSED = ("completed", "complete", "resolved", "abandoned", "done", "closed", "完成", "结束", "放弃")
_WORDS = {
    "en": {"story": "So far: ", "now": "Now: ", "threads": "Open threads: ", "sep": "; ", "dash": " - "},
    "zh": {"story": "前情：", "now": "现状：", "threads": "未决主线：", "sep": "；", "dash": "："},
}


def _score(e: SynopsisEvent, rank: int, total: int) -> float:
    # Compressed events stand for several; the latest events matter for "where we are".
    return e.importance + 1.5 * e.level + 2.0 * (rank + 1) / max(1, total)


def top_events(events: list[SynopsisEvent], k: int = TOP_EVENTS) -> list[SynopsisEvent]:
    """The k best-scoring events, back in story order."""
    ordered = sorted(events, key=lambda e: e.seq)
    ranked = sorted(range(len(ordered)), key=lambda i: (-_score(ordered[i], i, len(ordered)), -i))
    return [ordered[i] for i in sorted(ranked[:k])]


def answer(inp: SynopsisInput) -> SynopsisReply:
    """A short synopsis from the input alone (deterministic)."""
    lang = "zh" if inp.language == "zh" else "en"
    w = _WORDS[lang]
    story = pick_sentences([e.summary for e in top_events(inp.events)], EVENT_CHARS[lang], lang)
    parts = [w["story"] + story] if story else []
    states = [f"{c.name}{w['dash']}{c.state}" for c in inp.characters[-MAX_CHARACTERS:] if c.state]
    if states:
        parts.append(w["now"] + clip(w["sep"].join(states), STATE_CHARS[lang]))
    open_threads = [t.title for t in inp.threads if not any(x in t.status.lower() for x in _CLOSED)]
    if open_threads:
        parts.append(w["threads"] + clip(w["sep"].join(open_threads[-3:]), STATE_CHARS[lang] // 2))
    joiner = "" if lang == "zh" else " "
    text = joiner.join(p if p.endswith((".", "。", "…", "!", "?")) or lang == "zh" else p + "." for p in parts)
    return SynopsisReply(summary=clip(text, TOTAL_CHARS[lang]))
