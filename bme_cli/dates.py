"""SillyTavern's send_date forms, parsed leniently: every form ST writes, None for the rest.

Forms without a zone (ST's own) are read as UTC wall-clock times, so every parsed date is
timezone-aware and comparable with every other. Parsing never raises.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

_MONTHS = {name: i for i, names in enumerate((
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
    ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
    ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
    ("december", "dec")), start=1) for name in names}
_CN_MONTHS = {n: i for i, n in enumerate(
    ("一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"),
    start=1)}
_MERIDIEM = re.compile(
    r"(?P<mon>[^\W\d_]+\.?|\d{1,2}月)\s*(?P<day>\d{1,2}),?\s+(?P<year>\d{4})"
    r"(?:,?\s+(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?\s*(?P<ap>[ap]\.?\s?m\.?)?)?",
    re.IGNORECASE)
_HUMANIZED = re.compile(
    r"(?P<year>\d{4})-(?P<mon>\d{1,2})-(?P<day>\d{1,2})\s*@\s*(?P<h>\d{1,2})h\s*"
    r"(?P<mi>\d{1,2})m\s*(?P<s>\d{1,2})s(?:\s*(?P<ms>\d{1,3})ms)?", re.IGNORECASE)
_EPOCH = re.compile(r"-?\d+(?:\.\d+)?")
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_send_date(value: object) -> datetime | None:
    """Parse any send_date form ST or an importer writes into an aware datetime; None if unknown."""
    try:
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return _from_epoch(float(value))
        if not isinstance(value, str) or not value.strip():
            return None
        text = value.strip()
        if _ISO_DAY.match(text) and "@" not in text:  # ST's own form first: no other form matches it
            return _parse_iso(text)
        if _EPOCH.fullmatch(text):
            return _from_epoch(float(text))
        for parse in (_parse_humanized, _parse_meridiem, _parse_iso):
            result = parse(text)
            if result is not None:
                return result
    except (ValueError, OverflowError, OSError):
        pass  # an impossible date (month 13, year 99999): unknown, never an error
    return None


def _from_epoch(number: float) -> datetime | None:
    """Epoch milliseconds (ST's unit); 1e9..1e11 is read as seconds; smaller is no chat date."""
    if not number >= 1e9:  # also catches NaN
        return None
    seconds = number / 1000 if number >= 1e11 else number
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)


def _parse_humanized(text: str) -> datetime | None:
    """`2024-7-12@01h31m37s` (client) and `2024-6-5 @14h 56m 50s 682ms` (server)."""
    m = _HUMANIZED.fullmatch(text)
    if not m:
        return None
    ms = int((m["ms"] or "0").ljust(3, "0"))
    return datetime(int(m["year"]), int(m["mon"]), int(m["day"]), int(m["h"]), int(m["mi"]),
                    int(m["s"]), ms * 1000, tzinfo=timezone.utc)


def _parse_meridiem(text: str) -> datetime | None:
    """`March 25, 2025 9:19pm` (ST's message stamp), also with seconds, `AM`, `3月` or `三月`."""
    m = _MERIDIEM.fullmatch(text)
    if not m:
        return None
    token = m["mon"].lower().rstrip(".")
    month = _MONTHS.get(token) or _CN_MONTHS.get(token.removesuffix("月"))
    if month is None and token.removesuffix("月").isdigit():
        month = int(token.removesuffix("月"))
    if month is None:
        return None
    hour, minute = int(m["h"] or 0), int(m["mi"] or 0)
    if m["ap"]:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if m["ap"].lower().startswith("p") else 0)
    return datetime(int(m["year"]), month, int(m["day"]), hour, minute, int(m["s"] or 0),
                    tzinfo=timezone.utc)


def _parse_iso(text: str) -> datetime | None:
    """ISO 8601 (`2026-01-01T00:00:00Z`, with offsets or fractions); zone-less read as UTC."""
    if not _ISO_DAY.match(text):
        return None  # fromisoformat also takes forms like "2025W01", which ST never writes
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
