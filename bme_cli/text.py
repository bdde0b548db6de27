"""Small text helpers shared by every layer: token estimate, language detection."""
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
    return len(text) + len(_CJK.findall(text))


def detect_language(text: str) -> str:
    """'zh' when CJK characters carry at least as much as Latin letters (one CJK ~ four letters)."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return "zh" if cjk and cjk * 4 >= latin else "en"
