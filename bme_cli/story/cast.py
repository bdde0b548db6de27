"""Who a reply's status panel says is in the story: its affection, relationship or
characters-present entry.

Like the location entry (scene.py), a panel is no story, but this entry is the model's own
list of the people it is tracking: "好感度：皇上 25→35｜青黛 25→60", "在场人物：萧寒、苏晚晴",
"Affection: Mira 30 / Kael 10", "Present: Mira, Old Pell". The offline extractor takes a
name listed there as evidence that the word is a person where the story names them; nothing
of the panel is stored. The keys are English and Chinese words for such entries, not any
chat's data; a value is split into entries, and each entry loses its numbers, arrows, hearts
and bracketed notes ("青黛 25→60" is 青黛, "Kael (wary)" is Kael).
"""
from __future__ import annotations

import re

from .blocks import BAR_SPLIT, NO_VALUE, panel_text

CAST_KEYS = frozenset((
    "affection", "affinity", "favor", "favour", "favorability", "relationship", "relationships", "trust",
    "bond", "bonds", "characters", "characters present", "present", "present characters", "cast", "npcs",
    "present npcs", "nearby", "with you", "companions", "party",
    "好感度", "好感", "好感值", "亲密度", "信任度", "羁绊", "关系", "人物关系", "角色关系", "角色好感",
    "在场人物", "在场角色", "出场人物", "出场角色", "登场人物", "当前人物", "人物", "角色", "在场", "同行", "同伴",
))
_KEYS = "|".join(map(re.escape, sorted(CAST_KEYS, key=len, reverse=True)))
_HINT = re.compile(f"(?i){_KEYS}")
# "💗 好感度：…", "- **Present**: …", "<b>关系</b>：…" (tags gone by then): a cast key, then its value.
_CAST_ENTRY = re.compile(rf"(?i)^[^\w\u4e00-\u9fff]{{0,4}}({_KEYS})[^\w\u4e00-\u9fff:：]{{0,3}}\s*[:：]\s*(.*)$")
_OTHER_ENTRY = re.compile(r"^[^:：]{1,24}[:：]")
_ENTRIES = re.compile(r"\s*[,，、;；]\s*")
# What follows a name in an entry: a score, a change, a heart, a note ("25→60", "+5", "❤️ 30", "(wary)").
_AFTER_NAME = re.compile(r"\s*(?:[:：=]\s*)?(?:[-+]?\d|[(（\[【]|[→↑↓➜>/]|[^\w\s\u4e00-\u9fff'’.-]).*$")
_ZH_NAME = re.compile(r"[\u4e00-\u9fff·]{1,8}")
_EN_NAME = re.compile(r"(?:[A-Z][\w'’.-]*)(?: (?:[A-Z][\w'’.-]*|of|the|de|van|von)){0,3}")


def panel_people(raw: str) -> list[str]:
    """The names the message's panels list as the story's people, in order, repeats removed."""
    if not _HINT.search(raw):
        return []
    text = panel_text(raw)
    out: list[str] = []
    for line in text.split("\n"):
        if not _HINT.search(line):
            continue
        listing = False   # inside a cast entry of a one-line bar: "好感度：皇上 25｜青黛 60｜时间：夜"
        for part in BAR_SPLIT.split(line.strip().strip("[]")):
            entry = _CAST_ENTRY.match(part)
            if entry is not None:
                listing, part = True, entry.group(2)
            elif _OTHER_ENTRY.match(part):
                listing = False
            if listing:
                out.extend(n for n in map(_name, _ENTRIES.split(part)) if n and n not in out)
    return out


def _name(entry: str) -> str | None:
    """The name an entry starts with ("青黛 25→60", "Kael (wary)"), if it is one."""
    name = _AFTER_NAME.sub("", entry.strip()).strip()
    if not name or name.casefold() in NO_VALUE:
        return None
    if _ZH_NAME.fullmatch(name) or _EN_NAME.fullmatch(name):
        return name
    return None
