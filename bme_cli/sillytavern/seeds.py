"""What a lorebook entry or a card becomes in the graph: a character, a place, a rule, or nothing.

* An entry bme wrote itself (comment `<type>: <label>`) comes back as that node, its
  `column: value` lines as columns, so export -> ingest -> export gives the same lorebook.
* A constant entry is always in SillyTavern's prompt, so it becomes a rule (always in
  ST-BME's Core): title from the comment or first key, the content as its constraint.
* Any other entry names a character when its first key looks like a person's name and the
  text reads like a person (pronouns, age, personality, or a comment saying so), a place
  when the key or comment carries a place word; its other keys become aliases. Entries
  that are neither (items, factions, concepts) are counted and left out: they would be
  guesses.
* A card's character is a character with its name, personality and description.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from ..memory.seed import Seed
from ..providers.heuristic.place_words import PLACE_NOUNS
from ..providers.heuristic.zh_places import ZH_SUFFIX
from ..story import is_person_name
from .card import Card
from .worldinfo import COMMENT_SEP, EXPORTED_TYPES, LoreEntry

MAX_NOTE = 400        # characters of free text kept in a seeded column
MAX_TITLE = 80
_PERSON_CUES = re.compile(
    r"\b(?:he|she|him|her|his|hers|they|years? old|personality|appearance|age)\b|[他她]|岁|性格|外貌|身份|年龄|"
    r"^\s*(?:character|person|npc|人物|角色)\b", re.IGNORECASE | re.MULTILINE)
_KIND_WORD = re.compile(r"^\s*(character|person|npc|人物|角色|location|place|地点|地名|场景)\b", re.IGNORECASE)
_PLACE_WORDS = frozenset(w.casefold() for w in PLACE_NOUNS)
_ZH_PLACE_END = re.compile(ZH_SUFFIX + r"$")
_LATIN_NAME = re.compile(r"^[A-Z][\w'’.-]*(?: [A-Z][\w'’.-]*){0,3}$")
_CJK_NAME = re.compile(r"^[\u4e00-\u9fff·]{2,6}$")


@dataclass
class SeedPlan:
    """The seeds of all lore sources, and how many entries became nothing."""

    seeds: list[Seed] = field(default_factory=list)
    skipped: int = 0


def plan_seeds(entries: list[LoreEntry], cards: list[Card], *, user: str | None,
               members: Sequence[str] = ()) -> SeedPlan:
    """Seeds for a chat from a group's members, cards and lorebook entries ({{user}}: the chat's user)."""
    plan = SeedPlan([Seed("character", {"name": name}, 5.0, "group") for name in members])
    for card in cards:
        plan.seeds.append(_card_seed(card, user))
        entries = [*entries, *card.entries]
    for entry in entries:
        seed = entry_seed(entry, user=user)
        if seed is None:
            plan.skipped += 1
        else:
            plan.seeds.append(seed)
    return plan


def _macros(text: str, user: str | None, char: str | None) -> str:
    text = re.sub(r"\{\{\s*user\s*\}\}|<USER>", user or "the user", text, flags=re.IGNORECASE)
    return re.sub(r"\{\{\s*char\s*\}\}|<BOT>", char, text, flags=re.IGNORECASE) if char else text


def _clip(text: str, limit: int = MAX_NOTE) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("。"), cut.rfind("! "), cut.rfind("? "))
    return cut[:end + 1] if end > limit // 2 else cut.rstrip() + "…"


def _card_seed(card: Card, user: str | None) -> Seed:
    fields = {"name": card.name, "traits": _clip(_macros(card.personality, user, card.name)),
              "core_note": _clip(_macros(card.description, user, card.name))}
    return Seed("character", {k: v for k, v in fields.items() if v}, 7.0, "card")


def entry_seed(entry: LoreEntry, *, user: str | None = None) -> Seed | None:
    """The seed of one lorebook entry, or None when it is none of character, place or rule."""
    if entry.disabled or not (entry.keys or entry.comment):
        return None
    own = _own_entry(entry)
    if own is not None:
        return own
    content = _macros(entry.content, user, None)
    if entry.constant:
        title = _clip(entry.comment or (entry.keys[0] if entry.keys else ""), MAX_TITLE)
        return Seed("rule", {"title": title, "constraint": _clip(content) or title, "status": "active"},
                    6.0, "lorebook") if title else None
    kind = _kind(entry, content)
    if kind is None:
        return None
    name, *others = entry.keys or (entry.comment,)
    fields = {"name": name, "aliases": ", ".join(others), ("features" if kind == "location" else "core_note"):
              _clip(content)}
    return Seed(kind, {k: v for k, v in fields.items() if v}, 5.0, "lorebook")


def _own_entry(entry: LoreEntry) -> Seed | None:
    """An entry `bme export --format lorebook` wrote: its type, label, columns and importance back."""
    kind, sep, label = entry.comment.partition(COMMENT_SEP)
    lines = entry.content.split("\n")
    if not sep or kind not in EXPORTED_TYPES or not lines or lines[0].strip() != label.strip():
        return None
    key = "title" if kind in ("rule", "thread") else "name"
    fields = {key: label.strip()}
    for line in lines[1:]:
        col, sep, value = line.partition(": ")
        if sep and col.strip() and col.strip() not in fields:
            fields[col.strip()] = value.strip()
    if len(entry.keys) > 1:
        fields["aliases"] = ", ".join(entry.keys[1:])
    return Seed(kind, fields, max(0.0, min(10.0, entry.order / 10)), "lorebook")


def _kind(entry: LoreEntry, content: str) -> str | None:
    """"character", "location" or None, from the first key, the comment and the text."""
    said = _KIND_WORD.match(entry.comment)
    if said:
        word = said.group(1).casefold()
        return "character" if word in ("character", "person", "npc", "人物", "角色") else "location"
    key = entry.keys[0] if entry.keys else entry.comment
    words = {w.casefold() for w in re.findall(r"\w+", f"{key} {entry.comment}")}
    if words & _PLACE_WORDS or _ZH_PLACE_END.search(key):
        return "location"
    looks_named = bool(_LATIN_NAME.match(key) or _CJK_NAME.match(key)) and is_person_name(key)
    return "character" if looks_named and _PERSON_CUES.search(content) else None
