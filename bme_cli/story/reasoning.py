"""Where a reasoning block that was never closed ends.

A reply that opens with `<think>` and never closes it is one of two things: a generation cut
off while it was still reasoning (nothing after the opener is story), or a model that forgot
the closer and went on to write the reply after a blank line. The tag rules treat an unclosed
block as running to the end, which is right for the first and loses the whole reply for the
second. `end_open_reasoning` tells them apart by the reply's shape: the story starts at the
first paragraph, after at least one of reasoning, that opens the way a reply does (a quote,
an action in asterisks, a heading or scene line: `"God," Imani says`, `*By mid-morning…*`,
`【第二章·铁锈】`, `**— Day Two —**`) and is no planning note's label ("**Plan:**",
"【剧情规划】："). Plain narration before that paragraph belongs to the story too ("The
kitchen at ten at night is a different country…" right after the plan): the start moves back
over every paragraph that reads as narration, never onto the first one. A paragraph reads as
narration when, its quotes set aside, it asks nothing, talks about no writing (reply, scene,
the user, 剧情, 用户…), has no first person, modal or imperative of a planner ("I should",
"need to", "Let her tease", "我需要", "接下来"), and is made of whole sentences rather than
notes. A closer is put there; where no paragraph opens so, the block runs to the end unless
its last paragraphs, 200 characters or more, all read as narration. A message with a story
tag (`<content>`) needs none of this: the tag rules never let an open block swallow it.
"""
from __future__ import annotations

import re

from .vocab import REASONING, plan_patterns

_OPENER = re.compile(r"^\s*<([A-Za-z][\w:.\-]*)(?:\s[^<>]*)?>")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
# How a reply's first paragraph opens: a quote, an action or emphasis, a heading or a bracketed
# scene or chapter line, a dash.
_STORY_OPENING = re.compile(r"[\"“「『*_#【\[—–]")
_QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」|『[^』\n]*』")
# A planner's own voice in English: first person, modals and hedges, notes (the words about the
# writing itself, "reply", "scene", "剧情", "用户", are vocab's planning words).
_PLANNER = re.compile(
    r"\b(?:I|I'(?:ll|m|ve|d)|I’(?:ll|m|ve|d)|me|my|let's|we|should|need(?:s)? to|must|maybe|perhaps|"
    r"could|might|wants? to|going to|gonna|try to|okay|ok|todo|note|next|canon|lore|arc|beat|panel)\b",
    re.IGNORECASE)
# A sentence that opens with a bare verb is an instruction to the writer ("Let her tease.").
_IMPERATIVE = re.compile(
    r"(?:let|have|make|give|keep|end|teach|introduce|plant|show|start|describe|mention|focus|write|add|"
    r"remember|use|avoid|don't|do|include|open|close|continue|bring|move|reveal|hint|build|set|establish|"
    r"portray|wrap|go|plan|consider|aim|check|stay|get|put|tie|escalate|cut|skip|resolve|tease|"
    r"time[- ]skip|maybe|then|also|now|so|okay|ok)\b", re.IGNORECASE)
_ZH_PLANNER = re.compile(r"[？?]|我(?:需要|应该|要|会|得|打算|想|将)|需要|应该|接下来|下一步|注意|首先|然后|可以让|让我")
_SENTENCE_END = re.compile(r"(?<=[.!。！…])\s*")
_LIST_OR_FIELD = re.compile(r"^\s*(?:[-*•>]|\d+[.)、]|[^\s:：]{1,20}[:：])")


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
    starts = [gap.end() for gap in _PARAGRAPH.finditer(text, m.end())]
    paragraphs = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]
    opening = next((i for i, p in enumerate(paragraphs)
                    if _STORY_OPENING.match(p) and not label.match(p.split("\n", 1)[0])), None)
    if opening is None:
        # no paragraph opens like a reply: the story is a tail of narration, if there is one
        opening = len(paragraphs)
        while opening > 0 and reads_as_narration(paragraphs[opening - 1]):
            opening -= 1
        if opening == len(paragraphs) or sum(len(p) for p in paragraphs[opening:]) < 200:
            return text
    while opening > 0 and reads_as_narration(paragraphs[opening - 1]):
        opening -= 1
    start = starts[opening]
    return f"{text[:start]}</{name}>\n{text[start:]}"


def reads_as_narration(paragraph: str) -> bool:
    """Whether a paragraph reads as the story's narration rather than a plan for it (see the
    module docstring): the test is strict, since a plan taken for story puts notes in the graph."""
    prose = _QUOTED.sub(" ", paragraph).strip()
    if not prose or _LIST_OR_FIELD.match(prose) or "?" in prose or "\n" in prose or plan_patterns()[2].search(prose):
        return False
    if re.search(r"[\u4e00-\u9fff]", prose):
        return len(prose) >= 40 and not _ZH_PLANNER.search(prose) and bool(re.search(r"[。！…]$", prose))
    sentences = [s_ for s_ in _SENTENCE_END.split(prose) if s_]
    if not sentences or not re.search(r"[.!…]$", prose) or _PLANNER.search(prose):
        return False
    if any(_IMPERATIVE.match(s_) for s_ in sentences):
        return False
    short = sum(len(s_.split()) <= 2 for s_ in sentences)
    return len(prose.split()) >= 12 and short * 3 <= len(sentences)
