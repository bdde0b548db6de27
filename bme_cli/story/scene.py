"""Where a reply says its scene is: the location entry of its status panel.

A status panel is no story (the reader drops it), but one entry of it is the model's own
statement of where the scene is: "Location: The Old Mill, outside", "地点：东区宿舍 值班室",
"时间：黄昏 | 地点：码头", `<b>地点</b>：学生会办公室<br>`. The offline extractor takes it
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
_HINT = re.compile(r"(?i)location|place|where|scene|setting|area|position|locale|地点|位置|场景|所在|地點|場景|场所|所处|坐标")
_BREAK_TAG = re.compile(r"(?i)<\s*/?\s*(?:br|div|p|li|ul|ol|tr|td|th|table|h\d|details|summary|section|hr)\b[^<>\n]{0,200}>")
_TAG = re.compile(r"<[^<>\n]{0,200}>")
_KEY_DECOR = re.compile(r"^[^\w\u4e00-\u9fff]+|[^\w\u4e00-\u9fff]+$")
_MOVE = re.compile(r"\s*(?:→|->|=>|⇒|➜|➡|⟶)\s*")
_PARTS = re.compile(r"\s*(?:[,，、/|｜·・•>»(（\[【]|\s[-–—]\s)\s*")
_CJK_SPACE = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
_NONE = frozenset("unknown none n/a na ? - — tbd 未知 无 不明 暂无 未定 空".split())
MAX_VALUE = 40


def panel_locations(raw: str) -> list[str]:
    """The place each location entry of the message's panels names, in order, repeats removed."""
    if not _HINT.search(raw):
        return []
    text = _TAG.sub("", _BREAK_TAG.sub("\n", raw)) if "<" in raw else raw
    out: list[str] = []
    for line in text.split("\n"):
        if not _HINT.search(line):
            continue
        for piece in BAR_SPLIT.split(line.strip().strip("[]")):
            entry = kv(piece)
            if entry is None or _KEY_DECOR.sub("", entry[0]).casefold() not in LOCATION_KEYS:
                continue
            place = _place_of(entry[1])
            if place and place not in out:
                out.append(place)
    return out


def _place_of(value: str) -> str:
    value = _MOVE.split(value.strip())[-1]
    value = _CJK_SPACE.sub("/", value)
    first = _PARTS.split(value, maxsplit=1)[0].strip(" *_`'\"“”「」『』.。")
    first = re.sub(r"^(?:the|The)\s+", "", first)
    if not first or len(first) > MAX_VALUE or first.casefold() in _NONE or first.isdigit():
        return ""
    return first
