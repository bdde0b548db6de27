"""Where a reasoning block that was never closed ends.

A reply that opens with `<think>` and never closes it is one of two things: a generation cut
off while it was still reasoning (nothing after the opener is story), or a model that forgot
the closer and went on to write the reply after a blank line. The tag rules treat an unclosed
block as running to the end, which is right for the first and loses the whole reply for the
second. `end_open_reasoning` tells them apart by the reply's shape: the story starts at the
first paragraph, after at least one of reasoning, that opens the way a reply does (a quote,
an action in asterisks, a heading or scene line: `"God," Imani says`, `*By mid-morning…*`,
`【第二章·铁锈】`, `**— Day Two —**`) and is no planning note's label ("**Plan:**",
"【剧情规划】："). A closer is put there; where no paragraph opens so, the block still runs
to the end. A message with a story tag (`<content>`) needs none of this: the tag rules never
let an open block swallow it.
"""
from __future__ import annotations

import re

from .vocab import REASONING, plan_patterns

_OPENER = re.compile(r"^\s*<([A-Za-z][\w:.\-]*)(?:\s[^<>]*)?>")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
# How a reply's first paragraph opens: a quote, an action or emphasis, a heading or a bracketed
# scene or chapter line, a dash.
_STORY_OPENING = re.compile(r"[\"“「『*_#【\[—–]")


def end_open_reasoning(text: str) -> str:
    """The text with a closer where an unclosed leading reasoning block's story begins (see
    the module docstring); the text itself when there is none to add."""
    m = _OPENER.match(text)
    if m is None or m.group(1).lower() not in REASONING or "<content" in text.lower():
        return text
    name = m.group(1)
    if re.search(rf"</{re.escape(name)}\s*>", text, re.IGNORECASE):
        return text
    label = plan_patterns()[0]
    for gap in _PARAGRAPH.finditer(text, m.end()):
        start = gap.end()
        line = text[start:text.find("\n", start) if "\n" in text[start:] else len(text)]
        if _STORY_OPENING.match(line) and not label.match(line):
            return f"{text[:start]}</{name}>\n{text[start:]}"
    return text
