"""Small text helpers shared by every layer: token estimate, language detection, place names."""
from __future__ import annotations

import math
import re

_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")


def estimate_tokens(text: str) -> int:
    """ST-BME's estimate (spec §5.4): ceil(cjk/2 + other/4), cjk = U+4E00..U+9FFF."""
    cjk = len(_CJK.findall(text))
    return math.ceil(cjk / 2 + (len(text) - cjk) / 4)


def token_units(text: str) -> int:
    """Quarter-tokens of text, len + CJK count, so estimate_tokens(text) == ceil(token_units / 4)."""
    return len(text) if text.isascii() else len(text) + len(_CJK.findall(text))


def detect_language(text: str) -> str:
    """'zh' when CJK characters carry at least as much as Latin letters (one CJK ~ four letters)."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return "zh" if cjk and cjk * 4 >= latin else "en"


# One character that makes a Chinese name a place: 青石 and 青石城 are one city. (The offline
# extractor's fuller list is in providers/heuristic/places.py; these are the unambiguous ones.)
_ZH_PLACE_CHARS = "城镇村山寺庙府宫谷岛湖港峰洞庄堂阁殿楼街路寨斋潭"


def same_place_name(a: str, b: str) -> bool:
    """Whether two normalised place names are one place written two ways: with or without "the",
    "X" for "X of Y" (salt tower / salt tower of ard), 青石 for 青石城. Each batch sees only the
    last few places, so an extractor may well create one again under its other name."""
    a, b = (x.removeprefix("the ") for x in (a, b))
    short, long = sorted((a, b), key=len)
    if not short or short == long:
        return bool(short)
    if long.startswith(short + " of "):
        return True
    return (len(short) >= 2 and len(long) == len(short) + 1 and long.startswith(short)
            and long[-1] in _ZH_PLACE_CHARS and "\u4e00" <= short[-1] <= "\u9fff")
