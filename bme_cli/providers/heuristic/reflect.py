"""Offline reflection: a contradiction if there is one, else who the recent events revolve around."""
from __future__ import annotations

from collections import Counter

from ...prompts.reflect import ReflectEvent, ReflectInput, ReflectReply
from ...sentences import clip
from .nlp import split_names

MIN_FOCUS_COUNT = 2
_OPEN = ("ongoing", "blocked", "open", "unresolved", "进行", "受阻", "未解决")
_T = {
    "en": {
        "contra": "Conflicting accounts: \u201c{a}\u201d versus \u201c{b}\u201d; which one holds is still open.",
        "contra_s": "Treat both versions with care until the story settles which is true.",
        "focus": "{name} is at the centre of recent events ({n} of the last {m}).",
        "open": " Still unresolved: {what}",
        "focus_s": "Keep {name}{state} in view when narrating what follows.",
        "state": " ({state})",
        "thread": " Follow the thread \u201c{title}\u201d.",
    },
    "zh": {
        "contra": "说法矛盾：\u201c{a}\u201d与\u201c{b}\u201d，孰真孰假尚无定论。",
        "contra_s": "在剧情澄清之前，两种说法都需谨慎对待。",
        "focus": "{name}是近期事件的中心（最近{m}件中有{n}件）。",
        "open": "尚未解决：{what}",
        "focus_s": "后续叙述请关注{name}{state}。",
        "state": "（{state}）",
        "thread": "继续跟进主线\u201c{title}\u201d。",
    },
}


def _focus(events: list[ReflectEvent]) -> tuple[str, int] | None:
    counts: Counter[str] = Counter()
    last_seen: dict[str, int] = {}
    names: dict[str, str] = {}
    for i, e in enumerate(events):
        for name in dict.fromkeys(split_names(e.participants)):
            key = name.casefold()
            counts[key] += 1
            last_seen[key] = i
            names.setdefault(key, name)
    if not counts:
        return None
    key = max(counts, key=lambda k: (counts[k], last_seen[k]))
    return (names[key], counts[key]) if counts[key] >= MIN_FOCUS_COUNT else None


def _involves(e: ReflectEvent, name: str) -> bool:
    return name.casefold() in (n.casefold() for n in split_names(e.participants))


def answer(inp: ReflectInput) -> ReflectReply:
    """One insight from the recent events (deterministic); empty when nothing stands out."""
    t = _T["zh" if inp.language == "zh" else "en"]
    if inp.contradictions:
        c = inp.contradictions[-1]
        return ReflectReply(insight=clip(t["contra"].format(a=clip(c.source, 120), b=clip(c.target, 120)), 590),
                            trigger=clip(f"{c.source} -> {c.target}", 390), suggestion=t["contra_s"], importance=7)
    found = _focus(inp.events)
    if found is None:
        return ReflectReply()
    name, n = found
    mine = [e for e in inp.events if _involves(e, name)]
    insight = t["focus"].format(name=name, n=n, m=len(inp.events))
    pending = [e for e in mine if any(x in e.status.lower() for x in _OPEN)]
    if pending:
        insight += t["open"].format(what=clip(pending[-1].summary, 160))
    state = next((c.state for c in inp.characters if c.label.casefold() == name.casefold() and c.state), "")
    suggestion = t["focus_s"].format(name=name, state=t["state"].format(state=clip(state, 80)) if state else "")
    open_threads = [th for th in inp.threads if not th.state or any(x in th.state.lower() for x in _OPEN + ("active",))]
    if open_threads:
        suggestion += t["thread"].format(title=clip(open_threads[-1].label, 80))
    return ReflectReply(insight=clip(insight, 590), trigger=clip(mine[-1].summary, 390),
                        suggestion=clip(suggestion, 390), importance=6)
