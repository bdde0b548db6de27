"""Where a reply says its scene is: the location entry of its status panel.

A status panel is no story (the reader drops it), but one entry of it is the model's own
statement of where the scene is: "Location: The Old Mill, outside", "地点：东区宿舍 值班室",
"时间：黄昏 | 地点：码头", `<b>地点</b>：学生会办公室<br>`, a Markdown table's 地点 column. The offline extractor takes it
as evidence of a place; nothing of the panel is stored as text.

`panel_locations` reads the raw message (panels, HTML and fences included) and returns each
location entry's value as the path of places it names, in the order written: the last stop of
a move ("学生会办公室 → 东区宿舍": 东区宿舍), then its parts ("永寿宫·揽月轩",
"Paget Ward, St. Jude's Infirmary", "实验楼3F 化学实验室"), each without what only locates
the scene inside it: a floor (3F, 二楼), a flat's number (7栋1602), a house number after its
street (福开森路十七号), "outside" or "by the door" (七号仓库外), a note in brackets. Which parts
are places of their own (揽月轩 is, 正殿 and "common room" are rooms of the place before
them) is the extractor's to judge. The keys are words of English and Chinese for
"location" and the pin 📍, not any chat's data.
"""
from __future__ import annotations

import re

from .blocks import BAR_SPLIT, kv, NO_VALUE, panel_text

LOCATION_KEYS = frozenset((
    "location", "place", "where", "scene", "setting", "area", "position", "locale",
    "current location", "current place", "current scene",
    "地点", "位置", "场景", "所在", "所在地", "当前位置", "当前地点", "当前场景", "所在位置", "场所", "所处",
    "地點", "場景", "坐标",
))
_HINT = re.compile("(?i)📍|🗺|" + "|".join(map(re.escape, sorted(LOCATION_KEYS, key=len))))   # a quick first test
_KEY_DECOR = re.compile(r"^[^\w\u4e00-\u9fff]+|[^\w\u4e00-\u9fff]+$")
_MOVE = re.compile(r"\s*(?:→|->|=>|⇒|➜|➡|⟶)\s*")
_PARTS = re.compile(r"\s*(?:[,，、/|｜·・•>»(（\[【]|\s[-–—]\s)\s*")
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
_RULE_ROW = re.compile(r"\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?")
_PIN = re.compile(r"^\s*(?:📍|🗺\ufe0f?)\s*([^:：]+)$")   # 📍 枫林苑7栋1602, 🗺️ Brindlemoor: the pin or map is the key
# 📍 地点礼查饭店: a pin whose value still begins with its key (no colon between them).
_PIN_KEY = re.compile("^(?:" + "|".join(map(re.escape, sorted((k for k in LOCATION_KEYS if not k.isascii()),
                                                              key=len, reverse=True))) + r")\s*(?=\S)")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_BRACKETED = re.compile(r"\s*[(（\[【][^()（）\[\]【】]{0,20}[)）\]】]")
_ZH_FLOOR = re.compile(r"[A-Za-z]?\d+[FfLl层楼]|[一二三四五六七八九十]+[楼层]|地下[一二三\d]层")
_ZH_UNIT = re.compile(r"(?:\d+(?:栋|幢|号楼|单元)\w*|[A-Za-z]?\d{3,5}室?)$")   # 7栋1602, B302
_ZH_HOUSE_NUMBER = re.compile(r"(?<=[路街巷弄道里])[一二三四五六七八九十百\d]+号$")
_ZH_BESIDE = re.compile(r"(?:门外|门口|门前|附近|一带|外|内|里|旁|(?<=[观寺庙楼亭阁殿宫桥塔堂院馆府])前)$")
# 阊门内专诸巷, 朝阳门外大街: a city gate, then the street inside or outside it: two places.
_ZH_GATE_SIDE = re.compile(r"(?<=[\u4e00-\u9fff]门)[内外](?=[\u4e00-\u9fff]{2})")
_NAMED_PART = re.compile(r"\b(?:above|below|near|outside|behind|beside|beyond|under|past|by|at|in|on|of|off)"
                         r"\s+(?:the\s+)?([A-Z][\w'’]*(?:\s+[A-Z][\w'’]*)*)$")
# "Fort Clement firing", "Port Anselm astern", "Stillmere shore", "Gloamwood path": the name,
# then what it is doing or which side of it the scene is on.
_DOING = re.compile(r"([A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*)\s+(?:(?!(?:build|land|cross|clear|dwell|lodg|hous|"
                    r"park|mooring|off|r|w|k|spr|str)ing)[a-z]{2,}ing|ahead|astern|abeam|nearby|below|above|"
                    r"path|road|trail|shore|bank|banks|edge|side|outskirts|border|gates?|docks|pier|streets|woods)")
MAX_VALUE = 40


def panel_locations(raw: str) -> list[tuple[str, ...]]:
    """The path of places each location entry of the message's panels names (its parts as
    written), in order, repeats removed."""
    if not _HINT.search(raw):
        return []
    text = panel_text(raw)
    out: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not _HINT.search(line):
            continue
        values = _column(lines, i) if line.count("|") >= 2 else []
        if not values:
            values = [value for value in map(_location_value, BAR_SPLIT.split(line.strip().strip("[]")))
                      if value is not None]
        for value in values:
            path = _path_of(value)
            if path and path not in out:
                out.append(path)
    return out


def _location_value(part: str) -> str | None:
    entry = kv(part)
    if entry is not None:
        return entry[1] if _is_location_key(entry[0]) else None
    pinned = _PIN.match(part)
    return _PIN_KEY.sub("", pinned.group(1).strip(), count=1) if pinned else None


def _is_location_key(key: str) -> bool:
    return _KEY_DECOR.sub("", key).casefold() in LOCATION_KEYS


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _column(lines: list[str], header: int) -> list[str]:
    """A Markdown table's location column (`| 时间 | 地点 |` over `|---|---|` and its rows), or
    the value of a `| Location | The Old Mill |` row."""
    keys = _cells(lines[header])
    ruled = header + 1 < len(lines) and _RULE_ROW.fullmatch(lines[header + 1].strip())
    if not ruled:   # a key | value row: | Location | The Old Mill |
        return [keys[1]] if len(keys) == 2 and _is_location_key(keys[0]) else []
    at = next((k for k, key in enumerate(keys) if _is_location_key(key)), None)
    if at is None:
        return []
    values = []
    for row in lines[header + 2:]:
        if row.count("|") < 2:
            break
        cells = _cells(row)
        if len(cells) == len(keys) and cells[at]:
            values.append(cells[at])
    return values


def _path_of(value: str) -> tuple[str, ...]:
    value = _BRACKETED.sub("", _MOVE.split(value.strip())[-1])
    if _CJK.search(value):
        parts = [p for part in _PARTS.split(_CJK_SPACE.sub("/", value)) for floor in _ZH_FLOOR.split(part)
                 for p in _ZH_GATE_SIDE.split(floor)]
        parts = [_zh_place_of(p) for p in parts]
    else:
        parts = [_place_of(p) for p in _PARTS.split(value)]
    return tuple(dict.fromkeys(p for p in parts if p))


def _zh_place_of(part: str) -> str:
    part = _ZH_HOUSE_NUMBER.sub("", _ZH_UNIT.sub("", part.strip(" *_`'\"“”「」『』.。")))
    bare = _ZH_BESIDE.sub("", part)
    return _checked(bare if len(bare) >= 2 else part)


def _place_of(part: str) -> str:
    part = re.sub(r"^(?:the|The)\s+", "", part.strip(" *_`'\"“”「」『』.。"))
    named = _NAMED_PART.search(part) if part[:1].islower() else None
    if named:   # "path above the Needle's Eye": the place a phrase names
        part = named.group(1)
    doing = _DOING.fullmatch(part)
    if doing:   # the name, not what it is doing or its side
        part = doing.group(1)
    return _checked(part)


def _checked(part: str) -> str:
    if not part or len(part) > MAX_VALUE or part.casefold() in NO_VALUE or part.isdigit():
        return ""
    return part
