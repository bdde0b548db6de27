"""Untagged text that is not story, decided by its shape: panels, fences, notes, preambles.

A *panel* is a run of lines that are mostly `key: value` pairs with short values and
distinct keys, table rows, or box drawing: a status board, not narration. Script-style
dialogue ("Mira: Run!") is not a panel: its values are sentences and its keys repeat or
are the speakers' names. Every scan here is one pass over the lines (linear).
"""
from __future__ import annotations

import re
from functools import cache

from .vocab import plan_patterns

# A Chinese entry's note in full-width brackets (才人 → 贵人（封号：昭）) ends no sentence; an
# English line that ends in ")" may be one.
_NOTE_AFTER = re.compile(r"（[^（）\n]{1,30}）$")
_WHOLE_NOTE = re.compile(r"[(（][^()（）\n]{1,30}[)）]")
_SENTENCE_END = tuple(".!?。！？…~～\"”」』'’)）*")
_QUOTES = tuple("\"“「『'‘*(（")
_SPOKEN = tuple("。！？!?…")
# "时间：黄昏 | 地点：码头", "[Location: Murphy's] [Time: 9 PM] [Party: Jess]": a bar's entries
BAR_SPLIT = re.compile(r"\s*(?:\|\|?|｜|/|\]\s*\[|】\s*【)\s*|\s{2,}|\t")
# _KEY_BAD, _BULLET and _BOX, with their many non-ASCII characters, take the longest to compile:
# compiled on first use (_pattern), so a command that reads no panels or lists never does.
_KEY_BAD = r"[\"“”「」『』。，,！？!?;；\[\]|｜<>{}]"
_BULLET = r"^(?:[-*+•·>]\s+|\d{1,2}[.)、．]\s*|[①-⑳]\s*|[一二三四五六七八九十]{1,2}[、.．]\s*)"
_LEAD_SYMBOL = re.compile(r"^[^\w\s\"“「『'(（\[【]{1,3}\s*")
_BOX = r"[─━│┃┄┅┆┇┈┉┊┋┌┍┎┏┐┑┒┓└┕┖┗┘┙┚┛├┝┞┟┠┡┢┣┤┥┦┧┨┩┪┫┬┭┮┯┰┱┲┳┴┵┶┷┸┹┺┻┼═║╔╗╚╝╠╣╦╩╬╭╮╯╰]"
_SEPARATOR = re.compile(r"^\s*([-=*_~─━═·•—–+#<>])(?:\s*\1){2,}\s*$")
_HEADING = re.compile(r"^\s*#{1,6}\s+\S")
_LABEL = re.compile(r"^\s*(?:【[^】\n]{1,20}】|\[[^\]\n]{1,20}\]|\*\*[^*\n]{1,20}\*\*|[^\s:：]{1,20}[:：])\s*$")
_FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
_PROSE_FENCES = frozenset({"", "text", "txt", "markdown", "md", "plain", "plaintext"})
# Any word a plan label starts with, to skip the line-by-line test in most messages.
_PLAN_HINT = (r"(?i)plan|outline|thinking|analysis|reasoning|note|next|preview|direction|"
              r"思考|分析|计划|规划|大纲|剧情|本轮|写作|要点|注意|思路|预告|下一|后续")
_OOC_HINT = re.compile(r"ooc|\(\(|小剧场|小劇場|番外|彩蛋", re.IGNORECASE)
# (OOC: ...) and the like; （小剧场：...）, 【番外】...: a skit beside the story, which says so, is no story either.
_OOC_OPEN = re.compile(r"[(（\[【]\s*(?:ooc\b|小剧场|小劇場|番外|彩蛋)|\*\s*ooc\s*[:：]|\(\(", re.IGNORECASE)
_SKIT_LABEL = re.compile(r"[(（\[【]\s*(?:小剧场|小劇場|番外|彩蛋)\s*[)）\]】]")
_OOC_LINE = re.compile(r"^[ \t]*(?://[ \t]*)?ooc[ \t]*[:：][^\n]*", re.IGNORECASE | re.MULTILINE)
_TWO_SPACES = re.compile(r"(?<=\S)[ \t]{2,}(?=\S)")
_CLOSING = {"(": ")", "（": "）", "[": "]", "【": "】", "*": "*"}
# A scene heading: one short bracketed line of parts split by a middle dot, no sentence in it
# (「雨夜·百乐门」, 【黄昏·虹口】, [Night · The Old Mill]): where and when the scene is.
SCENE_HEADING = re.compile(r"^[ \t]*(?:「[^「」\n。！？，,.!?：:]{1,40}」|【[^【】\n。！？，,.!?：:]{1,40}】|"
                           r"\[[^\[\]\n。！？，,.!?：:]{1,40}\])[ \t]*$", re.MULTILINE)
SCENE_PARTS = re.compile(r"\s*[·・•|｜/]\s*")
MIN_PANEL_KV = 3        # untagged text: this many key: value lines make a panel
MIN_TAGGED_KV = 2       # inside a tag or a fence, fewer suffice


@cache
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source)


_BREAK_TAG = re.compile(r"(?i)<\s*/?\s*(?:br|div|p|li|ul|ol|tr|td|th|table|h\d|details|summary|section|hr)\b[^<>\n]{0,200}>")
_TAG = re.compile(r"<[^<>\n]{0,200}>")
# A panel value that says nothing: "Location: unknown", "人物：无".
NO_VALUE = frozenset("unknown none n/a na ? - — tbd 未知 无 不明 暂无 未定 空 无人".split())


def panel_text(raw: str) -> str:
    """A raw message with its HTML tags gone, those that break a line (<br>, <div>, <td>) as
    line breaks: "<b>地点</b>：码头<br>" reads as the entry "地点：码头"."""
    return _TAG.sub("", _BREAK_TAG.sub("\n", raw)) if "<" in raw else raw


def kv(line: str) -> tuple[str, str] | None:
    """(key, value) when the line reads like a panel entry ("时间：清晨", "- HP: 30/40")."""
    bare = _pattern(_BULLET).sub("", line.strip())
    s = _LEAD_SYMBOL.sub("", bare)
    cut = min((p for p in (s.find(":"), s.find("：")) if p > 0), default=-1)
    if cut < 0 or cut > 24:
        return None
    key, value = s[:cut].strip(), s[cut + 1:].strip()
    if not key or _pattern(_KEY_BAD).search(key) or len(key.split()) > 4:
        return None
    # "📌 下章预告：……罢休……": a key marked with a symbol is an entry, though its value reads like a sentence
    marked = len(s) < len(bare) and not bare[:1].isascii()
    said = _NOTE_AFTER.sub("", value)
    # "心情：（不写了，你懂的）": a value that is one note in brackets is still an entry
    if value.startswith(_QUOTES) and not _WHOLE_NOTE.fullmatch(value) or len(value) > (160 if marked else 80) or (
            not marked and len(said) > 12 and said.endswith(_SENTENCE_END)):
        return None
    return key, value


def _table_line(line: str) -> bool:
    """A table row or a box-drawn line ("||" separates fields, it draws no table)."""
    if "||" in line:
        line = line.replace("||", "")
    return line.count("|") + line.count("｜") >= 2 or len(_pattern(_BOX).findall(line)) >= 2


def _status_bar(line: str) -> bool:
    """Several key: value pairs on one line ("时间：黄昏 | 地点：码头 | 天气：晴"); a line
    where one of them is said aloud ("台词：你怎么这样！") is speech, not a bar."""
    if ":" not in line and "：" not in line:
        return False
    pieces = [kv(p) for p in BAR_SPLIT.split(line.strip().strip("[]"))]
    pairs = [kv for kv in pieces if kv is not None]
    return len(pairs) >= 3 and not any(v.endswith(_SPOKEN) for _, v in pairs)


def _panel_run(lines: list[str], min_kv: int, names: frozenset[str]) -> bool:
    """Whether these lines (one run, blank lines removed) are a panel."""
    keys = [kv[0] for kv in map(kv, lines) if kv is not None]
    tables = sum(_table_line(line) for line in lines)
    bars = sum(_status_bar(line) for line in lines)
    if (tables >= 2 or bars) and (tables + bars) * 2 >= len(lines):
        return True
    if len(keys) < min_kv or (len(keys) + tables) * 5 < len(lines) * 3:
        return False
    distinct = {k.casefold() for k in keys}
    if len(distinct) * 10 < len(keys) * 7:     # keys repeat: a script of speakers, not a board
        return False
    return sum(k.casefold() in names for k in keys) * 2 < len(keys)


def _panelish(line: str) -> bool:
    return (not line.strip() or kv(line) is not None or _table_line(line) or _status_bar(line)
            or bool(_SEPARATOR.match(line)) or bool(_LABEL.match(line)))


def drop_panels(text: str, names: frozenset[str] = frozenset(), notes: list[str] | None = None) -> str:
    """Drop each run of panel-like lines that is a panel; separator lines go too."""
    lines = text.split("\n")
    keep: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and _panelish(lines[j]):
            j += 1
        run = [ln for ln in lines[i:j] if ln.strip()]
        if run and _panel_run(run, MIN_PANEL_KV, names):
            _note(notes, "status panel")
        else:
            keep.extend(ln for ln in lines[i:j] if not _SEPARATOR.match(ln))
        if j < len(lines):
            keep.append(lines[j])
        i = j + 1
    return "\n".join(keep)


def prose_like(text: str) -> bool:
    """Mostly sentences: lines that end like a sentence, or long ones, carry >= 60% of it."""
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    total = sum(len(ln) for ln in lines)
    said = sum(len(ln) for ln in lines if ln.endswith(_SENTENCE_END) or len(ln) >= 80)
    return total > 0 and said * 5 >= total * 3


def panel_block(inner: str, attrs: str) -> bool:
    """Whether a tag block (a <div>, an unknown tag) holds a panel rather than story."""
    lines = [ln.strip() for ln in inner.split("\n") if ln.strip()]
    if not lines or _panel_run(lines, MIN_TAGGED_KV, frozenset()):
        return True
    if prose_like(inner):
        return False
    styled = re.search(r"\b(?:style|class)\s*=", attrs, re.IGNORECASE) is not None
    grid = len(lines) >= 4 and all(len(ln) <= 12 for ln in lines)  # labels and values, one a line
    return styled or grid


def fences(text: str, judge: bool, notes: list[str] | None = None) -> str:
    """Code-fenced blocks: a status board (or code) is dropped, fenced prose keeps its text."""
    out: list[str] = []
    body: list[str] | None = None
    lang = ""
    for line in text.split("\n") + [None]:  # type: ignore[list-item]
        fence = _FENCE.match(line) if line is not None else None
        if body is None:
            if fence:
                body, lang = [], fence.group(2).lower()
            elif line is not None:
                out.append(line)
            continue
        if line is None or fence:
            inner = "\n".join(body)
            if judge and (lang not in _PROSE_FENCES or not prose_like(inner)
                          or _panel_run([b for b in body if b.strip()], MIN_TAGGED_KV, frozenset())):
                _note(notes, "fenced block")
            else:
                out.append(inner)
            body = None
            continue
        body.append(line)
    return "\n".join(out)


def drop_ooc(text: str, notes: list[str] | None = None) -> str:
    """Out-of-character notes: (OOC: ...), [OOC ...], *OOC: ...*, ((...)), an OOC: line, and skits
    marked as such: （小剧场：...）, 【番外】 (to the line's end)."""
    if not _OOC_HINT.search(text):
        return text
    parts: list[str] = []
    pos = line_end = 0
    while m := _OOC_OPEN.search(text, pos):
        parts.append(text[pos:m.start()])
        if line_end <= m.start():  # found once per line, so a long line is scanned once
            line_end = text.find("\n", m.start())
            line_end = len(text) if line_end < 0 else line_end
        pos = _ooc_end(text, m.start(), m.group(0), line_end)
        if _SKIT_LABEL.fullmatch(text, m.start(), pos):
            pos = line_end   # 【番外】 labels the rest of its line
        _note(notes, "OOC note")
    parts.append(text[pos:])
    out = _TWO_SPACES.sub(" ", "".join(parts)) if len(parts) > 1 else text
    if _OOC_LINE.search(out):
        _note(notes, "OOC note")
        out = _OOC_LINE.sub("", out)
    return out


def _ooc_end(text: str, start: int, opener: str, line_end: int) -> int:
    """Where an OOC note opened at `start` ends: its matching bracket, else the line's end."""
    if opener == "((":
        close = text.find("))", start + 2, line_end)
        return line_end if close < 0 else close + 2
    left = opener.lstrip()[0]
    if left == "*":
        close = text.find("*", start + 1, line_end)
        return line_end if close < 0 else close + 1
    right, depth = _CLOSING[left], 0
    for k in range(start, line_end):
        if text[k] == left:
            depth += 1
        elif text[k] == right:
            depth -= 1
            if depth == 0:
                return k + 1
    return line_end


def drop_opening_aside(text: str, notes: list[str] | None = None) -> str:
    """A reply's first paragraph when it is a bracketed aside about the writing and a separator
    line ends it ("(Got it. Notes for this beat: ... keep it her story.)" then "---"): the model
    talking to the user. Runs before the separators go, which are its evidence."""
    lines = text.split("\n")
    first = next((k for k, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return text
    s = lines[first].strip()
    if not (s[:1] in "(（" and s[-1:] in ")）" and plan_patterns()[2].search(s)):
        return text
    after = next((k for k in range(first + 1, len(lines)) if lines[k].strip()), None)
    if after is None or not _SEPARATOR.match(lines[after]):
        return text
    _note(notes, "planning note")
    return "\n".join(lines[after + 1:])


def drop_preamble(text: str, notes: list[str] | None = None) -> str:
    """A planning note before the story ("Plan:", "好的，我将…", a list of what to write)."""
    lines = text.split("\n")
    plan_label, plan_opener, plan_words = plan_patterns()
    bullet = _pattern(_BULLET)
    found = False
    k = 0
    for k, line in enumerate(lines):
        s = line.strip()
        if not s or _SEPARATOR.match(s):
            continue
        if plan_label.match(s) or plan_opener.match(s):
            found = True
        elif bullet.match(s) and not s.lstrip("-*+•·> 0123456789.)、．").startswith(_QUOTES):
            found = found or bool(plan_words.search(s))
        elif not (_LABEL.match(s) and found):
            break
    else:
        k = len(lines)
    rest = "\n".join(lines[k:])
    if not found or not rest.strip():
        return text
    _note(notes, "planning note")
    return rest


def drop_plan_tail(text: str, notes: list[str] | None = None) -> str:
    """A planning note after the story: a plan label (【剧情规划】, "Next:") and nothing after it
    but list items, labels and entries ("- 撤离当日：…", "**Goals**")."""
    if not _pattern(_PLAN_HINT).search(text):
        return text
    lines = text.split("\n")
    plan_label = plan_patterns()[0]
    bullet = _pattern(_BULLET)
    for k, line in enumerate(lines):
        if k and plan_label.match(line.strip()) and all(
                not s or bullet.match(s) or _LABEL.match(s) or kv(s) is not None or plan_label.match(s)
                for s in (rest.strip() for rest in lines[k + 1:])):
            _note(notes, "planning note")
            return "\n".join(lines[:k]).rstrip()
    return text


# A dice roll: "🎲 Insight: 17 + 2 = 19", "*🎲 Stealth check, anyone who wants*", "Roll: d20 = 14".
_ROLL = re.compile(r"^[ \t>*_-]*(?:🎲|\[?rolls?\b[^\n]*\d[^\n]*(?:=|\+)|\[?d\d{1,3}\b)[^\n]*$", re.I | re.M)
_ROLL_HINT = re.compile(r"🎲|roll|\bd\d", re.I)   # what every roll line holds: a quick first test


def drop_rolls(text: str, notes: list[str] | None = None) -> str:
    """A line of dice or game mechanics (a roll and its arithmetic) is no part of the story."""
    if not _ROLL_HINT.search(text):
        return text
    kept = _ROLL.sub("", text)
    if kept != text:
        _note(notes, "dice roll")
    return kept


def drop_headings(text: str, notes: list[str] | None = None) -> str:
    """Markdown heading lines ("# Title"): a card or chapter title, never an event."""
    lines = text.split("\n")
    kept = [ln for ln in lines if not _HEADING.match(ln)]
    if len(kept) < len(lines):
        _note(notes, "title line")
    return "\n".join(kept)


def _note(notes: list[str] | None, what: str) -> None:
    if notes is not None:
        notes.append(what)


def scene_headings(text: str) -> list[str]:
    """The scene heading lines of a text (see SCENE_HEADING): two parts or more."""
    return [m.group(0).strip() for m in SCENE_HEADING.finditer(text)
            if len(SCENE_PARTS.split(m.group(0).strip()[1:-1])) >= 2]
