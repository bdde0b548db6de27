"""Offline evolution: conservative. Link only on strong shared names; never rewrite old text."""
from __future__ import annotations

import re

from ...prompts.evolve import EvolveInput, EvolveNodeView, EvolveReply
from .nlp import split_names

_PROPER = re.compile(r"\b[A-Z][a-z'’]+(?:\s+[A-Z][a-z'’]+)*")
_NOT_NAMES = frozenset("""the a an he she they it we i you his her their this that then when after
before in on at but and so if as with from for of to by while later meanwhile""".split())
_OWN_NAME_KEYS = ("name", "title")
_LIST_KEYS = ("participants",)


def own_names(view: EvolveNodeView) -> set[str]:
    """The node's own name or title (an entity's identity), case-folded."""
    return {view.fields[k].strip().casefold() for k in _OWN_NAME_KEYS if view.fields.get(k, "").strip()}


def mentioned_names(view: EvolveNodeView) -> set[str]:
    """Names the node mentions: participants and capitalised names in its text, case-folded."""
    names = {n.casefold() for k in _LIST_KEYS for n in split_names(view.fields.get(k, ""))}
    for k, v in view.fields.items():
        if k not in _LIST_KEYS:
            names |= {m.casefold() for m in _PROPER.findall(v) if m.casefold() not in _NOT_NAMES}
    return names


def _text(view: EvolveNodeView) -> str:
    return " ".join(view.fields.values()).casefold()


def _mentions(text: str, name: str) -> bool:
    if re.search(r"[\u4e00-\u9fff]", name):
        return name in text          # CJK has no word boundaries
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def strong_shared(new: EvolveNodeView, old: EvolveNodeView) -> list[str]:
    """Names tying two nodes strongly: one node's own name (an entity) mentioned by the other.

    Events that merely share participants are not linked: in a role-play nearly every
    event shares them, and the extractor already links events to their characters.
    """
    shared = [n for n in own_names(old) if n in mentioned_names(new) or _mentions(_text(new), n)]
    shared += [n for n in own_names(new) if (n in mentioned_names(old) or _mentions(_text(old), n))
               and n not in shared]
    return sorted(shared)


def answer(inp: EvolveInput) -> EvolveReply:
    """Suggest links to neighbours that share strong names; no text revisions (deterministic)."""
    links: list[str] = []
    why: list[str] = []
    for old in inp.neighbours:
        shared = strong_shared(inp.new, old)
        if shared:
            links.append(old.ref)
            why += [n for n in shared if n not in why]
    if not links:
        return EvolveReply(should_evolve=False, reason="no strong shared names")
    return EvolveReply(should_evolve=True, reason=("shares names: " + ", ".join(why))[:500],
                       suggested_connections=links)
