"""Place names for the offline extractor, English and Chinese, in order of first mention.

English: a capitalised run with a place noun ("the Silver Harbor", "Ruined Tower of Vael",
"the Gull and Anchor" when it follows at/in/to), or a capitalised name after a place
preposition ("in Paris", "to Vell"). Not: a run with an organisation noun ("the Vell
Courier", a newspaper), a person, a word of another language's sentence. Chinese names are
found in zh_places.py; what both share is here: scene headings, a panel's path of places, a
known place said short, the order of mention.
"""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from ...story.blocks import SCENE_HEADING, SCENE_PARTS
from .names import (COMMON_CAPS, LEADING_PREPOSITIONS, LEFT_FOR, OF_PLACE, LOOK_AT, ORG_NAMED, ORG_NOUNS, TITLES,
                    is_foreign, not_a_name, titled_names)
from .place_words import IN_REGION, NUMBER_WORDS, PLACE_NOUNS
from .gazetteer import is_known_place, latin_known_places, zh_known_places
from .nlp import is_cjk
from .scene_places import PLACE_HEADS, scene_places
from .zh import segment
from .zh_names import NAME_CHAR, TRANSLIT
from .zh_places import FLOOR, NOT_IN_PLACE, ZH_PREP, ZH_ROOMS, ZH_SUFFIX, zh_places, zh_rooms

PREPOSITIONS = (r"(?:in|at|from|into|near|towards?|inside|outside|reached|entered|visited|arrived at|went to|moved to|"
                r"over|across|beyond|through|past|along|behind|"
                r"(?:up|down|above|below|beneath)(?= the )|"   # "up the Wend", "above the Penobscot"
                r"travel(?:l?ed)? to|back to|out of|to|" + LEFT_FOR + ")")
# "St. Jude's Infirmary", "Mt. Vell": an abbreviated saint or mount starts a place's name.
_CAP_RUN = re.compile(r"\b(?:(?:St|Mt|Ft)\.? )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+(?:[ -](?:of |the |de |van |von |and |& )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+)*")
# "walk into Mulcahy's.", "Bev from Mulcahy's sent us": a shop or a bar called by its owner's
# name, where nothing follows the possessive that it could own ("at Mira's house" is Mira's house).
_AT_SHOP = re.compile(r"\b(?:at|to|into|from|inside|outside|behind|in|back to) ((?:[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+ )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+['’]s)"
                      r"(?=[.,;:!?)\"”—]|\s+(?:and|on|for|in|with|to|at|by|after|before|again|tonight|that|this|"
                      r"when|where|until|sent|is|was)\b)")
_SAINTED = re.compile(r"(?:St|Mt|Ft|Saint|Mount|Fort)\.? ")
# "into Harlan's workshop": the place is the workshop (scene_places.py), Harlan its owner; but
# "to the Albatross's hold" is in a ship.
# "over Dead Man's Shoal", "through the Widow's Teeth": a possessive inside a name, before its last word;
# never part of a hyphenated word ("to Hallvard Grey-Cloak" is not "Hallvard Grey", "to Helix-Dyne" no "Helix")
# nor of one with an apostrophe inside ("by the Kesh'val's lock" is no "Kesh")
_AFTER_PREP = re.compile(rf"\b{PREPOSITIONS} (?:(the )|(?![A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+['’]s\b))"
                         rf"((?:[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+ )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+['’]s [A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+|[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?: (?:and |of |& )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+){{0,2}})\b(?!-[A-Za-z]|['’][a-rt-z]| [A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+-[A-Za-z])")

# "Tucumcari NM", "Amarillo, TX": a US town and its state's postal code, the town.
_STATE_CODE = re.compile(r"(?<=[a-zß-öø-ÿ]),? (?:A[LKZR]|C[AOT]|DE|FL|GA|HI|I[DLNA]|K[SY]|LA|M[EDAINSOT]|N[EVHJMYCD]|"
                         r"O[HKR]|PA|RI|S[CD]|T[NX]|UT|V[TA]|W[AVIY])$")
# "Route 9 westbound": the road, whichever way one drives it.
_BOUND = re.compile(r"(?<=\w) (?:north|south|east|west)bound$", re.I)
# The number or code of one of several rooms or docks: "Airlock 9-East", "Cabin B-22", "Hangar 4".
_CODE = re.compile(r" (?:\d{1,4}[A-Za-z]?(?:-[A-Z][a-z]+)?|[A-Z]-?\d{1,4})\b(?![-:.,]?\d)")

# "in Paris 2 days a week": a number that counts something is no part of a name before it
_COUNTED = re.compile(r" \d+ (?:[a-z]+s|of|a|an|more)\b")
_ZH_SOME = re.compile(r"[一两几某][家间座个处栋条片所]")
_FEAST = re.compile(r"(?:Christ|Michael|Candle|Lam|Martin|Hallow|Childer)mas$")
_TIME_NOUNS = frozenset("Month Months Year Years Season Week Weeks Day Days Night Nights Age Era Hour Moon Festival "
                        "Feast Solstice Equinox Eve Morning Evening Winter Summer Spring Autumn Dawn Dusk".split())


_COMPASS = frozenset("North South East West".split())


def _strip_leading(words: list[str], prepositions: bool = True) -> list[str]:
    """A run without the first words that are no part of a place's name: common capitals (and
    prepositions), but not the compass word that starts "North Main Road" or "the East Wing"."""
    if len(words) > 1 and words[0] in _COMPASS and words[-1] in PLACE_NOUNS:
        return words
    while words and (words[0] in COMMON_CAPS or prepositions and words[0] in LEADING_PREPOSITIONS):
        words = words[1:]
    return words


def _latin_places(text: str, people: set[str]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for m in _CAP_RUN.finditer(text):
        words = _strip_leading(m.group(0).split())
        if words and words[0] == "the":
            words = words[1:]
        name = " ".join(words)
        head = name.split(" of ")[0].split()[-1] if words else ""   # "Tower of Vael": Tower; "House Surgeon": Surgeon
        code = _CODE.match(text, m.end())
        if (len(words) > 1 or code) and head in PLACE_NOUNS and " and " not in name \
                and (words[0] not in TITLES or _SAINTED.match(name)):
            found.append((m.start(), name + (code.group(0) if code else "")))
        elif len(words) == 2 and words[0] in PLACE_NOUNS and words[1] in NUMBER_WORDS:
            found.append((m.start(), name))   # "Deck Nine"
    found += [(m.start(1), m.group(1)) for m in (*OF_PLACE.finditer(text), *IN_REGION.finditer(text),
                                                 *_AT_SHOP.finditer(text))]
    for m in _AFTER_PREP.finditer(text):
        if m.group(0).startswith("at ") and LOOK_AT.search(text, 0, m.start()):
            continue   # "I look at Ada": a person
        words = m.group(2).split()
        joiner = next((j for j in ("and", "&") if j in words), None)
        if joiner and not m.group(1) and words[-1] not in PLACE_NOUNS:
            words = words[:words.index(joiner)]   # "to Rowan and Mira": only "the X and Y", "X & Y University" is one name
        words = _strip_leading(words, prepositions=False)
        while words and (words[0] in COMMON_CAPS or words[0].lower() in ("and", "of")):
            words = words[1:]
        if words and words[0] not in TITLES and words[-1] not in ("and", "of"):
            # "the Pier 9", and "at Mile 40", "to Exit 12": a word alone that a number follows is
            # one of a numbered kind, the number part of its name
            numbered = words[-1] in PLACE_NOUNS or len(words) == 1 and not _COUNTED.match(text, m.end(2))
            code = _CODE.match(text, m.end(2)) if numbered else None
            found.append((m.start(2), " ".join(words) + (code.group(0) if code else "")))
    # "sell it to Kestrel" where the text also says "Kestrel Dynamics": the company, said short
    orgs = {m.group(1) for m in ORG_NAMED.finditer(text)}
    return [(i, n) for i, n in found
            if n.casefold() not in people and not any(w in ORG_NOUNS for w in n.split()) and n not in orgs
            and n.split(" of ")[0].split()[-1] not in _TIME_NOUNS   # "in the Thawing Month" (not "Tower of Dawn")
            and not _FEAST.search(n)   # "at Candlemas", "by Michaelmas": a feast day
            and not (len(n.split()) == 1 and (not_a_name(n) or n in ("St", "Mt", "Ft")))]




_CHAPTER = re.compile(r"第[一二三四五六七八九十百零〇\d]+[章回节幕卷集话]|序章|序幕|楔子|尾声|终章|番外.*|"
                      r"(?i:(?:chapter|part|act|scene|episode|book) [\w-]+|prologue|epilogue|interlude)")
_ZH_DAY = re.compile(r"第[一二三四五六七八九十百零〇两\d]+[天日夜周年月]|[一二三四五六七八九十百两\d]+[天日年](?:后|前|之后)?$")
_ZH_WEATHER = re.compile(r"[\u4e00-\u9fff]?[雾雨雪风晴阴雷霜露霾]")
_TIME_TAGS = frozenset({"t", "m", "f", "mq", "tg"})
_EN_TIME = re.compile(r"(?i)(?:the )?(?:(?:early|late|next|that|same) )?(?:night|dawn|dusk|morning|noon|evening|midnight|"
                      r"afternoon|day(?:break)?|sunset|sunrise|twilight|later|\w+day|(?:day|night|chapter|part) \w+|"
                      r"[\d:]+(?: ?[ap]m)?)")


def _heading_places(text: str, people: set[str]) -> list[tuple[int, str]]:
    """The place of each scene heading (「雨夜·百乐门」, [Dusk · The Old Mill]): its first part that
    is not a time (雨夜, 三日后, Night) nor a floor (二楼包厢); what follows it is a room of that
    place (百乐门·二楼包厢). Placed after the text's own places: a heading repeats itself on
    every reply and would take every place slot of the batch."""
    found = []
    for m in SCENE_HEADING.finditer(text):
        line = m.group(0).strip()
        parts = SCENE_PARTS.split(line[1:-1])
        if len(parts) < 2 or any(_CHAPTER.fullmatch(p.strip()) for p in parts):
            continue   # 「第一章·暗号」: a chapter's title, not a scene's place
        for part in parts:
            part = part.strip().removeprefix("The ").removeprefix("the ")
            if _stated_place(part, people):
                found.append((len(text) + m.start(), part))
                break
    return found


def _stated_place(part: str, people: set[str], panel: bool = False) -> bool:
    """Whether a place a heading or a panel states ("The Old Mill", "百乐门") names one: not a
    time (雨夜, Night), a floor (二楼), a person, or a common word. A panel's location entry says
    it is a place, so there a lower-case phrase a place noun heads ("common room"), a title
    (Saint Ebba's House) and a numeral or locative first (7号泊位, 下城区) may be one too."""
    if len(part) < 2 or part.casefold() in people or FLOOR.match(part) or _EN_TIME.fullmatch(part):
        return False
    if is_cjk(part):
        if _ZH_SOME.match(part):
            return False   # 一家药店: "a pharmacy", no named place
        tokens = segment(part).tokens
        if all(t.tag in _TIME_TAGS or t.word.endswith("时") for t in tokens) or _ZH_DAY.search(part) \
                or _ZH_WEATHER.fullmatch(part):
            return False   # 雨夜, 末世第七天: a time; 灰雾, 大雨: the weather
        return panel or tokens[0].tag not in NOT_IN_PLACE
    if not part[0].isupper():
        return panel and part.split()[-1] in PLACE_HEADS
    caps = [w for w in part.split() if w[0].isupper()]
    if panel:
        return any(not not_a_name(w) or w.rstrip("s'’") in PLACE_NOUNS for w in caps)
    return not any(not_a_name(w) for w in caps)


# A town or a county ends so; it is never a room of the place before it (震泽镇).
_SETTLEMENT_END = frozenset("镇村县市省州城乡")
# Words a room is made of in Chinese that say which one it is, not what it is called: 后|仓库,
# 临时|宿舍, 废弃|仓库, 检修|平台 (locative, distinguishing word, verb, verbal noun, adjective).
_ROOM_MODIFIERS = frozenset({"f", "b", "v", "vn", "a", "ad", "d", "s"})


def path_places(path: Sequence[str], people: Iterable[str] = ()) -> list[str]:
    """The places a panel's location entry names, the scene's own first: its first part when it
    names a place (see _stated_place), then every later part that is a place of its own, not a
    room of the place before it. A later part is a room when it is lower-case ("Saint Ebba's
    House, the ossuary"), or in Chinese an everyday word (正殿, 阳台, 包厢) or one after words
    that only say which (后仓库, 临时宿舍). Chinese writes the path from the largest place
    down (永寿宫·揽月轩: the scene is 揽月轩), English mostly from the scene out
    ("Paget Ward, St. Jude's Infirmary")."""
    people_set = {p.casefold() for p in people if p}
    path = [_part_place(part) for part in path]
    if not path:
        return []
    kept = [path[0]] if _stated_place(path[0], people_set, panel=True) else []
    kept += [part for part in path[1:] if _stated_place(part, people_set, panel=True) and not _a_room(part)]
    return kept[::-1] if is_cjk(path[0]) else kept


def _part_place(part: str) -> str:
    """A Chinese path part without the floor or the side of it that it ends in: 旧校舍三楼 is
    旧校舍, 文艺部活动室前 is 文艺部活动室."""
    if not is_cjk(part) or len(part) < 4:
        return part
    return re.sub(r"(?:[前外旁边内]|[一二三四五六七八九十\d]+[楼层])$", "", part)


def _a_room(part: str) -> bool:
    if not is_cjk(part):
        return not part[0].isupper()
    if part[-1] in _SETTLEMENT_END:
        return False   # 震泽镇, though the dictionary has it as a word: a town is no room
    if len(part) >= 3 and (part[-1] in "下上边旁" or part.endswith(("住处", "住所"))
                           or part[-2:] in ZH_ROOMS and re.search("[外内里旁]", part[:-2])):
        return True    # 老槐树下, 后院梁慕白住处, 病房外走廊: a spot in the place before it
    seg = segment(part)
    if seg.common_word(0, len(part)):
        return True
    head, rest = seg.tokens[0], seg.tokens[1:]
    return ((head.known or len(head.word) == 1) and head.tag in _ROOM_MODIFIERS and bool(rest)
            and seg.common_word(rest[0].start, len(part)))


def places(text: str, people: Iterable[str] = (), known: Iterable[str] = (), context: str = "",
           stated: Iterable[str] = ()) -> list[str]:
    """Place names in order of first mention, a longer mention of a place replacing a shorter one,
    and a mention of a `known` place (青石 for 青石城, "the keep" for Dunmarrow Keep)
    given as the known name (_one_place); `context` (earlier lines) is evidence only. `stated`
    (what the replies' status panels give as the location) come first: the scene's place."""
    people_set = {p.casefold() for p in people if p} | {t.casefold() for t in titled_names(text)}
    # "the train to Vell" is a place, but "near Quell" or "at Ada" names a person's name.
    name_words = {w for p in people_set for w in re.findall(r"[^\W\d_]+", p)}
    # Lines in another language are blanked, not removed, so offsets keep the order of mention.
    latin = "\n".join(" " * len(line) if is_foreign(line) else line for line in text.split("\n"))
    hits = [(i, n) for i, n in _latin_places(latin, people_set)
            if not (" " not in n and n.casefold() in name_words)]
    known = [k for k in known if k]
    hits += scene_places(latin, context, [*known, *(n for _, n in hits)])
    chinese = re.search(r"[\u4e00-\u9fff]", text) is not None
    if chinese:
        hits += [_foreign_whole(text, i, n) for i, n in zh_places(text) + zh_rooms(text, context)
                 if n.casefold() not in people_set and not _inside_foreign(text, i, n)]
    hits += _known_stems(text, known) + _heading_places(text, people_set)
    # Places the lists know ("late of Missouri", 上海的大老板): after every place the text itself
    # shows as one, so a batch's cap keeps the scene's own places first.
    listed = [(i, n) for i, n in latin_known_places(latin) if n.casefold() not in name_words]
    if chinese:
        listed += zh_known_places(text)
    hits += [(2 * len(text) + i, n) for i, n in listed if n.casefold() not in people_set]
    hits += [(-1 - i, p) for i, p in enumerate(reversed(list(stated))) if _stated_place(p, people_set, panel=True)]
    found: list[str] = []
    for _, name in sorted(hits, key=lambda h: h[0]):
        name = _STATE_CODE.sub("", _BOUND.sub("", name.strip(" ,.'\"")))
        if not name:
            continue
        if len(name) >= 3 and name[-1] in "市省县" and is_known_place(name[:-1]):
            name = name[:-1]   # 上海市 is 上海, as a reader lists it
        name = next((k for k in reversed(known) if k != name and _one_place(name, k)), name)
        same = next((i for i, f in enumerate(found) if _one_place(name, f)), None)
        if same is None:
            found.append(name)
        elif _same_place(found[same], name) or found[same].islower() and not name.islower():
            found[same] = name   # the longer or the proper name: "Dunmarrow Keep", not "keep"
    return found


def _inside_foreign(text: str, at: int, name: str) -> bool:
    """Whether a Chinese place starts inside a foreign name (塞西|莉亚来庄园, 洛伦|萨港): the
    segmenter cut the name, the place is not there."""
    return at >= 2 and all(c in TRANSLIT for c in text[at - 2:at] + name[0])


def _foreign_whole(text: str, at: int, name: str) -> tuple[int, str]:
    """A foreign place name the segmenter cut before its suffix (洛伦|萨港): the whole of it."""
    if not all(c in TRANSLIT for c in name):
        return at, name
    tail = re.match(f"[{TRANSLIT}]{{1,4}}{ZH_SUFFIX}", text[at + len(name):])
    return (at, name + tail.group(0)) if tail else (at, name)


def _known_stems(text: str, known: list[str]) -> list[tuple[int, str]]:
    """A known Chinese place named without its suffix after a movement verb: 回到青石 is 青石城."""
    out = []
    for name in known:
        suffix = re.search(f"{ZH_SUFFIX}$", name)
        stem = name[:suffix.start()] if suffix else ""
        if len(stem) >= 2:
            out += [(m.start(1), name) for m in re.finditer(f"{ZH_PREP}({re.escape(stem)})(?!{NAME_CHAR})", text)]
    return out


def _one_place(a: str, b: str) -> bool:
    """Whether two mentions name one place: the same place written longer or shorter (青石 /
    青石城, "Salt Tower" / "Salt Tower of Ard"), a lower-case head that a proper name
    contains ("the tower"), or a lower-case name and its plural ("the cave", "the caves")."""
    if _same_place(a, b) or _same_place(b, a):
        return True
    if a.islower() != b.islower():
        head, proper = (a, b) if a.islower() else (b, a)
        return " " not in head and head in proper.casefold().split()
    return a.islower() and a.rstrip("s") == b.rstrip("s")


def _same_place(short: str, long: str) -> bool:
    """Whether `long` is a longer mention of the place `short`: "Ruined Tower" -> "Ruined Tower of
    Vael", 临安 -> 临安城, "St. Jude's" -> "St. Jude's Infirmary"; but "Vell Infirmary" is a
    place in Vell, not Vell."""
    if short == long or short not in long:
        return short == long
    if re.search(r"[\u4e00-\u9fff]", short):
        return True
    rest = long.replace(short, "", 1).strip()
    if short.endswith(("'s", "’s")) and long.startswith(short):   # St. Jude's: St. Jude's Infirmary
        return rest.split()[-1] in PLACE_NOUNS
    return rest.startswith("of ") or short.split()[-1].capitalize() in PLACE_NOUNS
