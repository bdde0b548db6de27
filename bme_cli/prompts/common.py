"""What every upkeep prompt shares: the language rule, and a node field as one line of text."""
from __future__ import annotations

from typing import Any

LANGUAGE_NAMES = {"en": "English", "zh": "Simplified Chinese"}


def language_rule(language: str, what: str) -> str:
    """The instruction to write `what` in the memory language (English when unknown)."""
    return f"Write {what} in {LANGUAGE_NAMES.get(language, LANGUAGE_NAMES['en'])}."


def cell_text(value: Any) -> str:
    """A field value as one line of text (lists joined with ', ', None as '')."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v).strip() for v in value if v is not None and str(v).strip())
    return str(value).strip()
