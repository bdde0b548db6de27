"""Where a reply says its scene is: the location entry of its status panel.

A status panel is no story (the reader drops it), but one entry of it is the model's own
statement of where the scene is: "Location: The Old Mill, outside", "地点：东区宿舍 值班室",
"时间：黄昏 | 地点：码头", `<b>地点</b>：学生会办公室<br>`, a Markdown table's 地点 column. The offline extractor takes it
as evidence of a place; nothing of the panel is stored as text.

`panel_locations` reads the raw message (panels, HTML and fences included) and returns each
location entry's value reduced to the place it names: the last stop of a move
("学生会办公室 → 东区宿舍": 东区宿舍), the first part of a place and its room ("The Salt
and Sparrow, common room": The Salt and Sparrow). The keys are words of English and
Chinese for "location", not any chat's data.
"""
from __future__ import annotations

import re

from .blocks import BAR_SPLIT, kv

LOCATION_KEYS = frozenset((
    "location", "place", "where", "scene", "setting", "area", "position", "locale",
    "current location", "current place", "current scene",
    "地点", "位置", "场景", "所在", "所在地", "当前位置", "当前地点", "当前场景", "所在位置", "场所", "所处",
    "地點", "場景", "坐标",
))
_HINT = re.compile("(?i)" + "|".join(map(re.escape, sorted(LOCATION_KEYS, key=len))))   # a quick first test
_BREAK_TAG = re.compile(r"(?i)<\s*/?\s*(?:br|div|p|li|ul|ol|tr|td|th|table|h\d|details|summary|section|hr)\b[^<>\n]{0,200}>")
_TAG = re.compile(r"<[^<>\n]{0,200}>")
_KEY_DECOR = re.compile(r"^[^\w\u4e00-\u9fff]+|[^\w\u4e00-\u9fff]+$")
_MOVE = re.compile(r"\s*(?:→|->|=>|⇒|➜|➡|⟶)\s*")
_PARTS = re.compile(r"\s*(?:[,，、/|｜·・•>»(（\[【]|\s[-–—]\s)\s*")
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
_NONE = frozenset("unknown none n/a na ? - — tbd 未知 无 不明 暂无 未定 空".split())
_RULE_ROW = re.compile(r"\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?")
_NAMED_PART = re.compile(r"\b(?:above|below|near|outside|behind|beside|beyond|under|past|by|at|in|on|of)"
                         r"\s+(?:the\s+)?([A-Z][\w'’]*(?:\s+[A-Z][\w'’]*)*)$")
MAX_VALUE = 40


def panel_locations(raw: str) -> list[str]:
    """The place each location entry of the message's panels names, in order, repeats removed."""
    if not _HINT.search(raw):
        return []
    text = _TAG.sub("", _BREAK_TAG.sub("\n", raw)) if "<" in raw else raw
    out: list[str] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not _HINT.search(line):
            continue
        values = _column(lines, i) if line.count("|") >= 2 else []
        if not values:
            values = [entry[1] for entry in map(kv, BAR_SPLIT.split(line.strip().strip("[]")))
                      if entry is not None and _is_location_key(entry[0])]
        for value in values:
            place = _place_of(value)
            if place and place not in out:
                out.append(place)
    return out


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


def _place_of(value: str) -> str:
    value = _MOVE.split(value.strip())[-1]
    value = _CJK_SPACE.sub("/", value)
    first = _PARTS.split(value, maxsplit=1)[0].strip(" *_`'\"“”「」『』.。")
    first = re.sub(r"^(?:the|The)\s+", "", first)
    named = _NAMED_PART.search(first) if first[:1].islower() else None
    if named:   # "path above the Needle's Eye": the place a phrase names
        first = named.group(1)
    if not first or len(first) > MAX_VALUE or first.casefold() in _NONE or first.isdigit():
        return ""
    return first
