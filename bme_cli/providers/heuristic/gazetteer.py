"""Real-world places a reader knows without being told: countries, states and provinces, large
and famous cities, seas, rivers, mountains, old names and regions (data/places_en.txt,
data/places_zh.txt; each file says how its list was made and what it leaves out).

A chat names Boston, 上海 or 黄浦江 in passing ("late of Missouri", "上海的大老板") with no
preposition or suffix that says it is a place; the list says so. Names that are also everyday
words or given names (Nice, Florence, 大同, 朝阳) are not in the lists, and a name the chat
uses for a person is no place (extract.py gives people the word).
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files

from .names import COMMON_CAPS, LEADING_PREPOSITIONS, ONLY_A_PERSON, TITLES
from .zh import segment
from .zh_names import SPEECH, ZH_BODY

_MAX_TOKENS = 3         # 鄂尔多斯 may be cut in two or three by the segmenter
# 让江南把日志拉出来, 江南说, 江南的眼睛: the name is a person's here (not 看西湖, 向上海).
_ZH_PERSON_BEFORE = frozenset("让叫请给找问把被跟")
_ZH_PERSON_AFTER = re.compile(f"(?:{SPEECH}|的(?:{ZH_BODY})|把|提供|发来|回复)")
# What makes a place's name an adjective: its people, speech, flag, style, food, make, army.
_ZH_OF_PLACE = frozenset("人话语旗籍式菜产制军货腔")
# Adverbs a two-character place name may start with (都灵, 也门), and what says it is the place.
_ADVERBS = frozenset("都也就还又才却")
_ZH_GO = re.compile(r"(?:在|到|去|往|从|来自|飞|回|离开|前往|抵达)$")
# A capitalised run as places.py reads one, with the joining words some real names have.
_RUN = re.compile(r"\b(?:St\.? |Ste\.? )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’-]+"
                  r"(?: (?:of the |of |de |del |da |do |and |upon |on |& )?(?:St\.? )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’-]+)*")
# The parts of a run joined by "and" or "&", where the whole is no listed name.
_PARTS = re.compile(r"(?:^|(?<= and )|(?<= & ))(?:(?! (?:and|&) ).)+")


@lru_cache(maxsize=2)
def _names(language: str) -> frozenset[str]:
    text = files(__package__).joinpath(f"data/places_{language}.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


def is_known_place(name: str) -> bool:
    """Whether a name is on either list (exactly as written, "the" aside)."""
    name = name.removeprefix("the ").removeprefix("The ")
    return name in _names("en") or name in _names("zh")


def latin_known_places(text: str) -> list[tuple[int, str]]:
    """(offset, name) of each listed English place that is a whole capitalised run, leading
    sentence words aside ("In Boston", "Missouri's"): inside a longer name it is that name's part
    ("Army of the Tennessee", "Johnson and Wales", "the San Francisco Peaks", "Western Pacific")."""
    names = _names("en")
    found = []
    for m in _RUN.finditer(text):
        run = m.group(0)
        # "Trinidad and Tobago" is one listed name, "New York and St. Louis" two
        parts = [(0, run)] if _listed(run, names) else \
            [(p.start(), p.group(0)) for p in _PARTS.finditer(run)]
        for at, part in parts:
            words = part.split(" ")
            skip = 0
            while skip < len(words) - 1 and (words[skip] in COMMON_CAPS or words[skip] in LEADING_PREPOSITIONS):
                skip += 1
            name = _listed(" ".join(words[skip:]), names)
            if name:
                found.append((m.start() + at + len(" ".join(words[:skip])) + (1 if skip else 0), name))
    return _not_people(found, lambda i, n: ONLY_A_PERSON.match(text, i + len(n)) is not None
                       or text[:i].rstrip().rsplit(" ", 1)[-1].rstrip(".") in TITLES)


def _listed(name: str, names: frozenset[str]) -> str | None:
    name = re.sub(r"['’]s$", "", name)   # "Missouri's"
    return name if name in names else None


def zh_known_places(text: str) -> list[tuple[int, str]]:
    """(offset, name) of each listed Chinese place made of whole words of the text (上海 in
    上海分公司, not 海 in 上海), unless it is an adjective there (中国人, 巴拿马旗) or only a
    bad cut makes it (前天山门外)."""
    names = _names("zh")
    seg = segment(text)
    tokens = seg.tokens
    found = []
    i = 0
    while i < len(tokens):
        for n in range(min(_MAX_TOKENS, len(tokens) - i), 0, -1):
            start, end = tokens[i].start, tokens[i + n - 1].end
            cand = text[start:end]
            if cand in names:
                # 中国人, 巴拿马旗: a people or a flag, not the place; 前天|山门: 天山 only by a bad cut;
                # 比谁都灵: 都 is "all" and 灵 "sharp" (都灵, Turin, only after a verb of going or being)
                if text[end:end + 1] not in _ZH_OF_PLACE and not (
                        start > 0 and seg.in_dictionary(start - 1, start + 1) and seg.in_dictionary(end - 1, end + 1)) \
                        and not (len(cand) == 2 and cand[0] in _ADVERBS and not _ZH_GO.search(text, 0, start)):
                    found.append((start, cand))
                i += n
                break
        else:
            i += 1
    return _not_people(found, lambda i, n: (i > 0 and text[i - 1] in _ZH_PERSON_BEFORE)
                       or _ZH_PERSON_AFTER.match(text, i + len(n)) is not None)


def _not_people(found: list[tuple[int, str]], as_person) -> list[tuple[int, str]]:
    """The hits of names the text never uses for a person ("Sydney says", 江南说)."""
    people = {n for i, n in found if as_person(i, n)}
    return [(i, n) for i, n in found if n not in people]
