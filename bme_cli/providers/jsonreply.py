"""Getting a validated JSON reply out of whatever a chat model wrote (spec §7.1 + fixes).

Parse order (spec §7.1, then Appendix B's fixes): drop `<think>` blocks; the whole text;
each fenced code block; the first `{`/`[` to its matching close; the first opener to the
last closer. The first candidate that validates against the response model wins. A reply
that fails is classified as truncated (finish_reason "length", unbalanced braces, an
unclosed fence) or invalid, and `repair_note` says exactly that to the model next time.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, get_origin

from pydantic import BaseModel, ValidationError

from .salvage import salvage

T = TypeVar("T", bound=BaseModel)

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_OPEN_THINK = re.compile(r"^\s*<(think|thinking|reasoning)>", re.I)
_FENCE = re.compile(r"```[ \t]*[\w-]*[ \t]*\n?(.*?)```", re.S)

# Rules appended to every system prompt: weak models otherwise wrap JSON in prose.
COMPACT_JSON_RULES = ("Reply with exactly one compact JSON value and nothing else: no markdown "
                      "fences, no comments, no prose before or after it. Keep strings short.")


@dataclass(frozen=True)
class ReplyCheck(Generic[T]):
    """The outcome of checking one reply: a validated value, or what was wrong with it."""

    value: T | None
    problem: str | None = None
    truncated: bool = False
    kept: int | None = None   # set when value was salvaged from a cut-off reply: items kept

    @property
    def ok(self) -> bool:
        return self.value is not None


def strip_think(text: str) -> str:
    """The text without `<think>…</think>` blocks (an unclosed one swallows the rest)."""
    text = _THINK.sub("", text)
    m = _OPEN_THINK.match(text)
    return "" if m else text


def _matching_close(text: str, start: int) -> int | None:
    """Index of the bracket closing the one at `start`, string-aware; None if unbalanced."""
    stack: list[str] = []
    in_str = esc = False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            esc, in_str = (False, in_str) if esc else (c == "\\", c != '"')
            continue
        if c == '"':
            in_str = True
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
        elif c in "}]":
            if not stack or stack.pop() != c:
                return None
            if not stack:
                return i
    return None


def candidates(text: str) -> list[str]:
    """Substrings that might be the JSON value, most likely first (duplicates removed)."""
    text = strip_think(text).strip()
    out = [text] + [m.group(1).strip() for m in _FENCE.finditer(text)]
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if starts:
        first = min(starts)
        close = _matching_close(text, first)
        if close is not None:
            out.append(text[first:close + 1])
        last = max(text.rfind("}"), text.rfind("]"))
        if last > first:
            out.append(text[first:last + 1])
    seen: set[str] = set()
    return [c for c in out if c and not (c in seen or seen.add(c))]


def _wrap_list(value: Any, model: type[BaseModel]) -> Any:
    """A bare list for a model whose only field is a list: wrap it (weak models do this)."""
    fields = model.model_fields
    if isinstance(value, list) and len(fields) == 1:
        (name, info), = fields.items()
        if get_origin(info.annotation) is list or info.annotation is list:
            return {name: value}
    return value


def _brief(err: ValidationError, limit: int = 300) -> str:
    parts = []
    for e in err.errors()[:3]:
        loc = ".".join(str(x) for x in e["loc"]) or "(top level)"
        parts.append(f"{loc}: {e['msg']}")
    more = err.error_count() - 3
    text = "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def looks_truncated(text: str, finish_reason: str | None = None) -> bool:
    """finish_reason 'length', more openers than closers, or an unclosed code fence."""
    if finish_reason == "length":
        return True
    body = strip_think(text) if text else text
    if body.count("```") % 2 == 1:
        return True
    starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
    return bool(starts) and _matching_close(body, min(starts)) is None and \
        _unclosed_depth(body[min(starts):]) > 0


def _unclosed_depth(text: str) -> int:
    depth, in_str, esc = 0, False, False
    for c in text:
        if in_str:
            esc, in_str = (False, True) if esc else (c == "\\", c != '"')
        elif c == '"':
            in_str = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
    return depth


def check_reply(text: str | None, model: type[T], finish_reason: str | None = None) -> ReplyCheck[T]:
    """Extract and validate the reply; on failure say why and whether it looks truncated."""
    if not text or not text.strip():
        truncated = finish_reason == "length"
        return ReplyCheck(None, "the reply was empty", truncated)
    first_error: str | None = None
    for cand in candidates(text):
        try:
            value = json.loads(cand)
        except (ValueError, RecursionError):  # RecursionError: a reply nested thousands deep
            continue
        try:
            return ReplyCheck(model.model_validate(_wrap_list(value, model)))
        except ValidationError as e:
            first_error = first_error or _brief(e)
    # A reply that hit the length limit is truncated whatever else is wrong with it.
    if finish_reason == "length" or (first_error is None and looks_truncated(text)):
        return _salvaged(text, model) or ReplyCheck(None, "the reply was cut off before the JSON was complete", True)
    if first_error is not None:
        return ReplyCheck(None, f"the JSON did not match the schema: {first_error}")
    return ReplyCheck(None, "the reply contained no parseable JSON")


def _salvaged(text: str, model: type[T]) -> ReplyCheck[T] | None:
    """The complete items of a cut-off reply's list, validated; the model learns of the cut
    through a `cut_off` field when it has one (ExtractReply reports the loss)."""
    kept = salvage(strip_think(text))
    if kept is None:
        return None
    value = _wrap_list(kept.value, model)
    if isinstance(value, dict) and "cut_off" in model.model_fields:
        value = {**value, "cut_off": 1}
    try:
        return ReplyCheck(model.model_validate(value), "the reply was cut off; its complete items were kept",
                          True, kept.kept)
    except ValidationError:
        return None


def repair_note(check: ReplyCheck[Any]) -> str:
    """The sentence added to the rebuilt prompt telling the model what went wrong last time."""
    if check.truncated:
        return ("Your previous reply was cut off before the JSON was complete. Answer again with "
                "much shorter output: fewer items, short strings, compact JSON on one line, "
                "no reasoning or prose.")
    return (f"Your previous reply could not be used: {check.problem}. Answer again with only "
            "one JSON value that matches the required structure exactly, without markdown fences.")
