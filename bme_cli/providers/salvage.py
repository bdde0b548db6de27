"""What can be kept of a JSON reply that was cut off inside its list of items.

A model that hits max_tokens in the middle of `{"thought": "...", "operations": [{...},
{...}, {"action": "cre` has finished two operations; throwing them away would waste the
batch. `salvage` cuts the text after the last complete item of the top-level list it
was writing (the root list, or a list directly under the root object), closes what was
open, and says how many items it kept. A cut anywhere else (inside a string field, inside
one item) keeps nothing: half an item is never made whole by guessing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Salvaged:
    """The closed-up JSON value and how many complete items of the cut list it holds."""

    value: Any
    kept: int


@dataclass
class _Cut:
    pos: int             # text[:pos] ends with a complete item of a top-level list
    closers: str         # what closes every container open at pos
    kept: int            # complete items of that list up to pos


def _top_list(stack: list[str]) -> bool:
    """Is the innermost open container a list at the root or directly under the root object?"""
    return bool(stack) and stack[-1] == "]" and (len(stack) == 1 or (len(stack) == 2 and stack[0] == "}"))


def _scan(text: str) -> tuple[_Cut | None, list[str]]:
    """The last cut point after a complete top-level list item, and the stack open at the end."""
    stack: list[str] = []
    counts: dict[int, int] = {}   # depth of an open top-level list -> items completed in it
    cut: _Cut | None = None
    in_str = esc = False
    pending = False               # a scalar item of a top-level list is being written

    def complete(pos: int) -> None:
        nonlocal cut
        depth = len(stack)
        counts[depth] = counts.get(depth, 0) + 1
        cut = _Cut(pos, "".join(reversed(stack)), counts[depth])

    for i, c in enumerate(text):
        if in_str:
            esc, in_str = (False, True) if esc else (c == "\\", c != '"')
            if not in_str and _top_list(stack):
                complete(i + 1)
                pending = False
            continue
        if c == '"':
            in_str = True
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
            if c == "[" and _top_list(stack):
                counts[len(stack)] = 0
        elif c in "}]":
            if not stack or stack.pop() != c:
                return None, stack
            if _top_list(stack):
                complete(i + 1)
        elif c == "," and _top_list(stack):
            if pending:   # a number or literal item ends at its comma
                complete(i)
            pending = False
        elif not c.isspace() and _top_list(stack):
            pending = True
    return cut, stack


def salvage(text: str) -> Salvaged | None:
    """The reply up to its last complete top-level list item, closed; None if nothing can be kept."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    body = text[start:]
    cut, open_at_end = _scan(body)
    # Only a cut inside the list that was still open when the text ended keeps items.
    if cut is None or cut.kept < 1 or not open_at_end or len(open_at_end) < len(cut.closers) \
            or "".join(reversed(open_at_end[:len(cut.closers)])) != cut.closers:
        return None
    try:
        value = json.loads(body[:cut.pos] + cut.closers)
    except (ValueError, RecursionError):
        return None
    return Salvaged(value, cut.kept)
