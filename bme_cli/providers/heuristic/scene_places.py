"""Places written as common nouns, for the offline extractor: "the chapel", "the west wing",
"Harlan's workshop", "cabin nine", "Platform 9".

A story's scenes happen in rooms, wings and cars as often as in named towns, and English
writes those in lower case. A phrase is a place when a place noun heads it (PLACE_HEADS, a
list of English words for rooms, buildings, vehicles' parts and landscape: language, not
any chat's data) and the text gives evidence that it is a setting:

* after a place preposition ("into", "to", "in", "at", "from", "across", ...) with a definite
  article or a possessive ("the boiler room", "the steward's cabin", "Harlan's workshop");
  a bare head ("the chapel") must be mentioned twice in the batch and its context (a single
  "onto the beach" is mostly scenery), or be the head of a named place ("the keep" of
  Dunmarrow Keep);
* a place noun with a number ("cabin nine", "Room 12"): a numbered room is a specific one.

Not: an indefinite one ("a cave"), a head that names a place only with a modifier ("the
room", "the car", "the ring"), or descriptive words before the head ("the dark west wing"
is the west wing). The name is stored without its article, as a reader would list it.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from .names import COMMON_CAPS, TITLES
from .nlp import EN_STOPWORDS

PLACE_HEADS = frozenset("""
library cellar wing study courtyard kitchen kitchens chapel mill harbour harbor tavern inn station
platform office bay ford market square bridge gate tower cave caves undercroft crypt vault ward
garden gardens stable stables barn forge church temple shrine alley street dock docks pier wharf
quay lighthouse cliffs beach shore camp clearing woods forest marsh cabin cottage attic basement
infirmary hospital clinic lab laboratory archive archives car train van compartment carriage room
hall bar pub cafe café shop store warehouse yard gallery ballroom parlour parlor bedroom chamber
lobby cell dungeon tomb graveyard cemetery churchyard monastery abbey palace castle keep fort
barracks mine quarry farm orchard meadow glade grove ruins tunnel washroom bank hold deck
corridor hallway cloister sanctuary workshop smithy bakery brewery jail prison dormitory greenhouse
observatory terrace balcony rooftop roof cockpit airlock hangar
ossuary scriptorium refectory sacristy nave shed lock road path trail route bothy hut lodge motel diner
saloon depot terminal canal spillway quarry
""".split())
# Heads that name a place only with a modifier: "the common room", "the dining car", "the cargo hold".
NEEDS_MODIFIER = frozenset("room car van hold wing deck roof bay hall road path trail route".split())
# Words that describe a place rather than name it: "the dark west wing" is the west wing.
DESCRIPTIVE = frozenset("""
dark old small big little narrow empty quiet cold warm damp dusty long great tiny crowded busy same
whole next last first nearest far open locked new tall low high wide vast huge dim bright silent
abandoned crumbling broken grey gray black white red green blue nearby entire cramped shabby
filthy muddy gloomy cosy cozy lonely strange familiar usual
""".split())
NUMBERS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
           "fifteen sixteen seventeen eighteen nineteen twenty").split()
_MOVE = r"(?:into|onto|towards?|(?:back|down|up|over|across|on) to|enter(?:s|ed|ing)?|reach(?:es|ed|ing)?|" \
        r"return(?:s|ed|ing)? to)"
_AT = r"(?:to|in|at|inside|from|across|through|beyond|out of|past|within)"
_OWNER = r"(?:(?:(?:" + "|".join(sorted(TITLES)) + r")\.? )?[A-Z][a-z]+(?:'s|’s|')|the [a-z]+(?:'s|’s))"
_PHRASE = re.compile(rf"\b(?P<prep>(?i:{_MOVE}|{_AT})) (?:the (?P<own1>[a-z]+(?:'s|’s) )?|(?P<own2>{_OWNER}) )"
                     rf"(?P<words>[a-z][a-z-]*(?: [a-z][a-z-]*){{0,3}})")
# Words that may follow a place and start something else: "the kitchen where ...", "the mill, ...".
_LINKS = frozenset("where beside behind below above beneath near across toward towards past door".split()) - {"door"}
_NUMBERED = re.compile(rf"\b(?P<head>[A-Za-z]+) (?P<num>\d{{1,4}}[A-Za-z]?|{'|'.join(NUMBERS)})\b(?![-:.,]?\d|-)")


def _phrase(words: list[str], after: str) -> tuple[list[str], str] | None:
    """Modifiers and head of a noun phrase's first place noun (two nouns: "market square");
    None when another noun follows it ("the cave mouth", "the station network": not the place)."""
    at = next((i for i, w in enumerate(words[:3]) if w in PLACE_HEADS), None)
    if at is None:
        return None
    end = at + 2 if at + 1 < len(words) and words[at + 1] in PLACE_HEADS else at + 1
    following = words[end] if end < len(words) else after
    if following and following not in EN_STOPWORDS and following not in _LINKS:
        return None
    mods = words[:at]
    while mods and (mods[0] in DESCRIPTIVE or mods[0].endswith("ly")):
        mods = mods[1:]
    if any(w in EN_STOPWORDS or w in DESCRIPTIVE for w in mods):
        return None
    return [*mods, *words[at:end - 1]], words[end - 1]


def _owner(m: re.Match[str]) -> str:
    raw = (m.group("own1") or m.group("own2") or "").strip()
    if m.group("own1"):
        return raw
    words = raw.split()
    while len(words) > 1 and (words[0].rstrip(".") in TITLES):
        words = words[1:]
    return "" if not words or words[0].replace("’", "'").split("'")[0] in COMMON_CAPS else " ".join(words)


def _phrases(text: str) -> list[tuple[int, str, bool]]:
    """(offset, name, bare) of each place phrase after a place preposition: "into the boiler
    room", "to Harlan's workshop", "in the chapel" (bare: no modifier, no owner)."""
    found: list[tuple[int, str, bool]] = []
    for m in _PHRASE.finditer(text):
        nxt = re.match(r"[ ]([a-z]+)\b", text[m.end():])
        parts = _phrase(m.group("words").split(), nxt.group(1) if nxt else "")
        if parts is None:
            continue
        mods, head = parts
        owner = _owner(m)
        if (m.group("own1") or m.group("own2")) and not owner:
            continue
        if not mods and not owner and head in NEEDS_MODIFIER:
            continue
        bare = not mods and not owner   # "the chapel" alone: mentioned twice, or the head of a named place
        found.append((m.start("words"), " ".join(filter(None, [owner, *mods, head])), bare))
    return found


def scene_places(text: str, context: str = "", named: Iterable[str] = ()) -> list[tuple[int, str]]:
    """(offset, name) of the common-noun places of `text`; `context` (earlier lines) only
    counts towards a bare head's second mention, and a bare head of a `named` place ("the
    keep" of Dunmarrow Keep) needs none."""
    found = _phrases(text)
    for m in _NUMBERED.finditer(text):
        # "the fish market two nights later": a count (a number in figures names a room: "Lock 14 before dawn")
        count = None if m.group("num")[0].isdigit() else re.match(r" [a-z]+", text[m.end():])
        if m.group("head").lower() in PLACE_HEADS and not (count and count.group(0)[1:] not in EN_STOPWORDS):
            found.append((m.start(), f"{m.group('head')} {m.group('num')}", False))
    seen = Counter(re.findall(r"\b[Tt]he ([a-z]+)\b", f"{context}\n{text}"))
    heads = {w for n in named if not n.islower() for w in n.casefold().split()}
    out = [(i, name) for i, name, bare in found if not bare or seen[name] >= 2 or name in heads]
    # Gone "down to the ossuary" in the context, and "the ossuary" again now: the scene is there.
    again = {n for n in re.findall(r"\b[Tt]he ([a-z]+)\b", text) if seen[n] >= 2} - {n for _, n in out}
    if context and again:
        for name in dict.fromkeys(n for _, n, bare in _phrases(context) if bare and n in again):
            at = re.search(rf"\b[Tt]he {name}\b", text)
            out.append((at.start() + 4 if at else 0, name))
    return out
