"""Japanese family names as Chinese writes them (佐藤, 长谷川, 小鸟游), for names in Chinese
role-play set in Japan: data/surnames_ja_zh.txt, whose top says how it was made and which
names it leaves out (those that are everyday Chinese words: 山下, 清水, 九条).

Chinese surname rules miss these names (九条 and 藤原 are no Chinese surnames), and a
Japanese setting names people by the family name and a title (神崎同学, 九条前辈).
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib.resources import files

# What follows a Japanese name in Chinese: the school's and the office's titles, and the
# Japanese honorifics as Chinese writes them (君, 酱, 桑).
JA_TITLE = r"(?:同学|君|酱|桑|前辈|学姐|学长|学妹|学弟|老师|先生|小姐|会长|部长|社长|课长|组长|大人|殿下|殿|さん|くん|ちゃん|様)"


@lru_cache(maxsize=1)
def ja_surnames() -> frozenset[str]:
    text = files(__package__).joinpath("data/surnames_ja_zh.txt").read_text(encoding="utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#"))


@lru_cache(maxsize=1)
def ja_surname_re() -> re.Pattern[str]:
    """Any listed family name, the longest first."""
    return re.compile("|".join(sorted(map(re.escape, ja_surnames()), key=len, reverse=True)))
