"""Relative time words resolved against the day a message was sent, English and Chinese.

"I went yesterday" sent on 8 May 2023 becomes "I went yesterday (7 May 2023)", and
"我昨天去了" sent on 8 May 2023 becomes "我昨天（2023年5月7日）去了": the words stay, the date
they mean follows them, so a memory read months later still says when. The day is the
message's send date. A story that names its own years far from the send dates (1946 Shanghai,
2099; `keeps_own_calendar`) keeps its own calendar: its messages are not dated by when they
were sent (chat.Message.dated).
"""
from __future__ import annotations

import re
from functools import cache
from datetime import date, datetime, timedelta
from typing import Callable

_NUMS = {"one": 1, "a": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a couple of": 2}
_ZH_NUMS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}


# A year a story gives as its own present, not one it looks back to ("vanished in 1998"): a
# dateline opening a line (一九九五年，十月，油麻地。 / "October 1953." / "London, 1888"), a status
# panel's date (Date: Wednesday, October 14, 1953 / 时间：2099年), or said so ("the year is 2099",
# 现在是1946年, 公元1127年).
_ZH_DIGIT = {"〇": "0", "零": "0", "○": "0", "一": "1", "二": "2", "三": "3", "四": "4", "五": "5",
             "六": "6", "七": "7", "八": "8", "九": "9"}
_YEAR = r"(?<!\d)([12]\d{3})(?!\d)"
_ZH_YEAR = r"(?:(?<!\d)([12]\d{3})|([〇零○一二三四五六七八九]{4}))年"
_MONTHS = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_PRESENT_YEAR = re.compile(
    rf"^[ \t*_#>「【\[(（]*{_ZH_YEAR}"                                          # 一九九五年，十月
    rf"|^[ \t*_#>\[(]*(?:[A-Z][a-z]+,? )?(?:{_MONTHS},? (?:\d{{1,2}}(?:st|nd|rd|th)?,? )?)?{_YEAR}[.,:—-]"  # October 1953.
    rf"|^[^\n:：]{{0,16}}(?:[Dd]ate|DATE|[Yy]ear|[Tt]ime|日期|时间|年份|年代)\s*[:：][^\n]{{0,40}}?(?:{_ZH_YEAR}|{_YEAR})"
    rf"|(?:[Tt]he year is|[Ii]t is the year|[Ii]t's the year) {_YEAR}|[Ii]t is {_YEAR}(?=[.,;!?)\n]|$)"   # not "it is 2000 miles"
    rf"|(?:现在是|如今是|公元|这一年是|时值){_ZH_YEAR}", re.M)
_ANY_YEAR = re.compile(r"(?<!\d)[12]\d{3}(?!\d)|[〇零○一二三四五六七八九]{4}年")
# Years between the year a story gives as its present and the year that message was sent, past
# which the story's time is its own (1946 Shanghai, 2099), not the user's.
OWN_CALENDAR_YEARS = 15


def named_years(text: str) -> list[int]:
    """The years a text gives as the story's present, in order (see _PRESENT_YEAR)."""
    if not _ANY_YEAR.search(text):
        return []   # most messages name no year: one quick look, not the whole pattern
    out = []
    for m in _PRESENT_YEAR.finditer(text):
        found = next(g for g in m.groups() if g)
        out.append(int(found if found.isdigit() else "".join(_ZH_DIGIT[c] for c in found)))
    return out


def keeps_own_calendar(pairs: list[tuple[int, int]]) -> bool:
    """Whether a story keeps its own calendar, from (year named, year its message was sent) pairs:
    two or more, two thirds of them OWN_CALENDAR_YEARS apart. Then a send date is when the user
    wrote, not when the story is, and no memory is dated by it."""
    far = sum(abs(named - sent) >= OWN_CALENDAR_YEARS for named, sent in pairs)
    return len(pairs) >= 2 and far * 3 >= len(pairs) * 2


def send_day(message: object) -> datetime | None:
    """The send date that dates a message's story (None when unknown, or when the story keeps its
    own calendar: chat.Message.dated)."""
    when = getattr(message, "send_date", None)
    return when if isinstance(when, datetime) and getattr(message, "dated", True) else None


def render_date(when: object, language: str) -> str | None:
    """'8 May 2023' (Chinese: '2023年5月8日') for a send date; None when unknown."""
    if not isinstance(when, datetime):
        return None
    if language == "zh":
        return f"{when.year}年{when.month}月{when.day}日"
    return en_day(when)


# strftime's %b in the C locale (Python's own unless a program sets another), at a tenth of its cost:
# a dry run of a big chat renders one date a message.
_MONTH_ABBR = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def en_day(d: date) -> str:
    """'8 May 2023'."""
    return f"{d.day} {_MONTH_ABBR[d.month - 1]} {d.year}"


def zh_day(d: date) -> str:
    """'2023年5月8日'."""
    return f"{d.year}年{d.month}月{d.day}日"


def _shift_month(d: date, months: int) -> tuple[int, int]:
    y, m = divmod(d.year * 12 + d.month - 1 + months, 12)
    return y, m + 1


def _en_month(d: date, months: int) -> str:
    y, m = _shift_month(d, months)
    return f"{date(y, m, 1):%B} {y}"


def _zh_month(d: date, months: int) -> str:
    y, m = _shift_month(d, months)
    return f"{y}年{m}月"


def _en_ago(d: date, m: re.Match[str]) -> str:
    raw = m.group(2).lower()
    n = int(raw) if raw.isdigit() else _NUMS.get(raw, 1)
    unit = m.group(3).lower()
    if unit == "day":
        return en_day(d - timedelta(days=n))
    if unit == "week":
        return f"the week of {en_day(d - timedelta(days=7 * n))}"
    if unit == "month":
        return _en_month(d, -n)
    return str(d.year - n)


def _zh_ago(d: date, m: re.Match[str]) -> str:
    raw = m.group(2)
    n = int(raw) if raw.isdigit() else _ZH_NUMS.get(raw, 1)
    unit = m.group(3)
    if unit == "天":
        return zh_day(d - timedelta(days=n))
    if unit in ("周", "个星期", "星期"):
        return f"{zh_day(d - timedelta(days=7 * n))}那一周"
    if unit in ("个月", "月"):
        return _zh_month(d, -n)
    return f"{d.year - n}年"


Resolver = Callable[[date, re.Match[str]], str]
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"


@cache
def _relative() -> tuple[tuple[re.Pattern[str], Resolver, bool, bool], ...]:
    """The relative-time rules (pattern, resolver, whether the resolution only restates the
    message's own day, Chinese?), compiled on first use: the 24 patterns take milliseconds to
    compile, and only a sentence with a cue word (_CUE) needs them."""
    return (
        (re.compile(r"\b(yesterday|last night)\b", re.I), lambda d, m: en_day(d - timedelta(days=1)), False, False),
        (re.compile(r"\b(today|tonight|this morning|this afternoon|this evening)\b", re.I),
         lambda d, m: en_day(d), True, False),
        (re.compile(r"\b(tomorrow)\b", re.I), lambda d, m: en_day(d + timedelta(days=1)), False, False),
        (re.compile(rf"\b(last (?:week|weekend|{_WEEKDAYS}))\b", re.I),
         lambda d, m: f"the {m.group(1).split()[1]} before {en_day(d)}", True, False),
        (re.compile(r"\b(next (?:week|weekend|month))\b", re.I), lambda d, m:
         _en_month(d, 1) if m.group(1).lower().endswith("month")
         else f"the {m.group(1).split()[1]} after {en_day(d)}", False, False),
        (re.compile(r"\b(last month)\b", re.I), lambda d, m: _en_month(d, -1), False, False),
        (re.compile(r"\b(this month)\b", re.I), lambda d, m: _en_month(d, 0), False, False),
        (re.compile(r"\b(last year)\b", re.I), lambda d, m: str(d.year - 1), False, False),
        (re.compile(r"\b(this year)\b", re.I), lambda d, m: str(d.year), False, False),
        (re.compile(r"\b(next year)\b", re.I), lambda d, m: str(d.year + 1), False, False),
        (re.compile(r"\b((one|a|two|three|four|five|six|a couple of|\d+) (day|week|month|year)s? ago)\b", re.I),
         _en_ago, False, False),
        (re.compile(r"(昨天|昨晚|昨日)"), lambda d, m: zh_day(d - timedelta(days=1)), False, True),
        (re.compile(r"(前天)"), lambda d, m: zh_day(d - timedelta(days=2)), False, True),
        (re.compile(r"(今天|今晚|今日)"), lambda d, m: zh_day(d), True, True),
        (re.compile(r"(明天|明日)"), lambda d, m: zh_day(d + timedelta(days=1)), False, True),
        (re.compile(r"(后天)"), lambda d, m: zh_day(d + timedelta(days=2)), False, True),
        (re.compile(r"(上周|上个星期|上星期)"), lambda d, m: f"{zh_day(d)}之前的一周", True, True),
        (re.compile(r"(下周|下个星期|下星期)"), lambda d, m: f"{zh_day(d)}之后的一周", False, True),
        (re.compile(r"(上个月|上月)"), lambda d, m: _zh_month(d, -1), False, True),
        (re.compile(r"(下个月|下月)"), lambda d, m: _zh_month(d, 1), False, True),
        (re.compile(r"(去年)"), lambda d, m: f"{d.year - 1}年", False, True),
        (re.compile(r"(今年)"), lambda d, m: f"{d.year}年", False, True),
        (re.compile(r"(明年)"), lambda d, m: f"{d.year + 1}年", False, True),
        (re.compile(r"((\d+|[一两二三四五六七八九十])(天|周|个星期|个月|年)前)"), _zh_ago, False, True),
    )


# A word every pattern above needs (matched as they are, case-insensitively for English): the
# usual sentence holds none, and one search for these is 5x cheaper than the 24 patterns.
_CUE = re.compile(r"(?i:yesterday|last|today|tonight|this|tomorrow|next|ago)|[昨前今明后上下去]")


def resolve_dates(sentence: str, day: date | datetime | None, *, restate: bool = True) -> str:
    """Relative time words followed by the date they mean: 'yesterday (7 May 2023)', '昨天（2023年5月7日）'.

    With restate=False the text is already dated with `day`, so words whose resolution would
    only repeat it ("today", "last week" = the week before `day`) are left as they are.
    The first occurrence of each kind of word is resolved.
    """
    if day is None or not _CUE.search(sentence):
        return sentence
    if isinstance(day, datetime):
        day = day.date()
    for pattern, fn, restates, zh in _relative():
        if restates and not restate:
            continue
        left, right = ("（", "）") if zh else (" (", ")")
        for m in pattern.finditer(sentence):
            if sentence.startswith(("（", " ("), m.end()):
                continue  # resolved already
            sentence = f"{sentence[:m.start()]}{m.group(1)}{left}{fn(day, m)}{right}{sentence[m.end():]}"
            break
    return sentence


_ABSOLUTE = re.compile(r"\b\d{1,2} (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{4}\b|\d{4}年\d{1,2}月"
                       r"|\b\d{4}-\d{2}-\d{2}\b|\b(?:January|February|March|April|May|June|July|August|September|"
                       r"October|November|December) \d{1,2},? \d{4}\b")


def dated(summary: str, day: date | datetime | None, zh: bool) -> str:
    """An event summary that says when: relative words resolved against `day`, and "[8 May 2023] "
    (or "[2023年5月8日] ") in front unless it already names a date. Idempotent."""
    if day is None or not summary.strip():
        return summary
    if isinstance(day, datetime):
        day = day.date()
    if _ABSOLUTE.search(summary):
        return resolve_dates(summary, day)
    return f"[{zh_day(day) if zh else en_day(day)}] {resolve_dates(summary, day, restate=False)}"
