"""Wording every upkeep prompt shares."""
from __future__ import annotations

LANGUAGE_NAMES = {"en": "English", "zh": "Simplified Chinese"}


def language_rule(language: str, what: str) -> str:
    """The instruction to write `what` in the memory language (English when unknown)."""
    return f"Write {what} in {LANGUAGE_NAMES.get(language, LANGUAGE_NAMES['en'])}."
