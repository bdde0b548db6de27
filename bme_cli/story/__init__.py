"""Story text: what happened in the story, out of a message's `mes` (pure text, no I/O).

Everything memory reads (extraction, the heuristic, the indexes, embeddings, recall
queries) reads this text; the chat file is never changed. In order:
1. SillyTavern macros become names: {{user}}/<USER> the user's, {{char}}/<BOT> the
   character's (in a group, the speaker's); other {{...}} macros go.
2. Tag blocks (tags.py): reasoning, policy checks, plot plans, status panels and their HTML
   are dropped; with a story tag (`<content>`) present only its inside is kept; prose HTML
   leaves its text.
3. Shape (blocks.py): fenced status boards, key: value and table panels, OOC notes, a
   planning note before the story, title and separator lines.
The heuristic steps (panels, planning notes, stray closers) never empty a message: when
they would, the text without them is kept. See docs/story-text.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import blocks
from .reasoning import end_open_reasoning
from .tags import TagRules, TagWalk
from .vocab import norm

__all__ = ["StoryOptions", "StoryReader", "is_person_name", "story_text"]

_MACRO = re.compile(r"\{\{\s*(user|char|charifnotgroup|bot)\s*\}\}|<(user|bot|char|charifnotgroup)>",
                    re.IGNORECASE)
_NEWLINE = re.compile(r"\{\{\s*newline\s*\}\}", re.IGNORECASE)
_OTHER = re.compile(r"\{\{[^{}\n]{0,200}\}\}")
_BLANKS = re.compile(r"[ \t]+\n")
_GAPS = re.compile(r"\n{3,}")
_SEPARATOR_NAME = re.compile(r"[\s\-=*_~─━═·•—–#.+<>|/\\]+")
MAX_SHAPE_LINES = 2000   # a message longer than this keeps its lines (tag rules still apply)
MAX_SHAPE_CHARS = 400_000
_TITLE_BRACKETS = ("《》", "【】", "[]", "<>", "〈〉")


@dataclass(frozen=True)
class StoryOptions:
    """How story text is chosen; the `[story]` settings (tag names compare normalised)."""

    story_tags: tuple[str, ...] = ("content",)
    drop_tags: tuple[str, ...] = ()
    keep_tags: tuple[str, ...] = ()
    drop_panels: bool = True   # status panels, fenced boards and markup-heavy blocks by shape
    drop_notes: bool = True    # OOC notes and planning notes before or after the story


def is_person_name(name: str | None) -> bool:
    """False for what only looks like a speaker: "", "unused", a card title ("# ..."),
    a separator ("---") or a bracketed title ("《...》")."""
    s = (name or "").strip()
    if not s or s.casefold() == "unused" or s.startswith("#"):
        return False
    if _SEPARATOR_NAME.fullmatch(s):
        return False
    return not any(s[0] == a and s[-1] == b for a, b in _TITLE_BRACKETS)


class StoryReader:
    """Cleans the messages of one chat: the options plus the chat's user and character names."""

    def __init__(self, options: StoryOptions | None = None, *, user_name: str | None = None,
                 character_name: str | None = None):
        self.options = options = options or StoryOptions()
        self.user_name = user_name if is_person_name(user_name) else None
        self.character_name = character_name if is_person_name(character_name) else None
        keep = frozenset(map(norm, options.keep_tags))
        self._rules = TagRules(story=frozenset(map(norm, options.story_tags)), keep=keep,
                               drop=frozenset(map(norm, options.drop_tags)) - keep,
                               judge=options.drop_panels)
        self._lenient = TagRules(story=self._rules.story, keep=keep, drop=self._rules.drop,
                                 judge=False, heuristics=False)
        self._names = frozenset(n.casefold() for n in (self.user_name, self.character_name) if n)

    def clean(self, raw: str, *, is_user: bool = False, speaker: str = "",
              notes: list[str] | None = None) -> str:
        """The story text of one message; `raw` itself when there is nothing to clean.

        `notes`, when given, hears a few words for each thing that was dropped.
        """
        text = self._clean(raw, is_user, speaker, True, notes)
        if not text and raw.strip():
            lenient = self._clean(raw, is_user, speaker, False, None)
            if lenient:
                if notes is not None:
                    notes[:] = [n for n in notes if n.startswith("<") and "panel" not in n]
                    notes.append("kept: the shape rules would have left nothing")
                return lenient
        return text

    def _clean(self, raw: str, is_user: bool, speaker: str, shape: bool,
               notes: list[str] | None) -> str:
        text = raw.replace("\r\n", "\n").replace("\r", "\n") if "\r" in raw else raw
        if "{" in text or "<" in text:
            text = self._macros(text, is_user, speaker)
        if "<" in text:
            text = end_open_reasoning(text)
            walk = TagWalk(text, self._rules if shape else self._lenient, blocks.panel_block, notes)
            text = walk.run()
        text = self._shape(text, is_user, shape, notes)
        if "&" in text:
            import html   # here: its table of entities costs a millisecond to load, and few texts have one
            text = html.unescape(text)
        if text is not raw and text != raw:
            text = _GAPS.sub("\n\n", _BLANKS.sub("\n", text)).strip()
            return text if text != raw else raw
        return raw if raw == raw.strip() else raw.strip()

    def _macros(self, text: str, is_user: bool, speaker: str) -> str:
        char = speaker if not is_user and is_person_name(speaker) else self.character_name
        names = {"user": self.user_name or "", "char": char or ""}
        text = _MACRO.sub(lambda m: names["user" if (m.group(1) or m.group(2)).lower() == "user"
                                          else "char"], text)
        if "{{" in text:
            text = _OTHER.sub("", _NEWLINE.sub("\n", text))
        return text

    def _shape(self, text: str, is_user: bool, shape: bool, notes: list[str] | None) -> str:
        o = self.options
        if text.count("\n", 0, MAX_SHAPE_CHARS) >= MAX_SHAPE_LINES:
            return text  # no reply anyone read: judged line by line it would only cost time
        if "```" in text or "~~~" in text:
            text = blocks.fences(text, shape and o.drop_panels, notes)
        if o.drop_notes:
            text = blocks.drop_ooc(text, notes)
        if o.drop_panels:
            text = blocks.drop_rolls(text, notes)
        if not shape or "\n" not in text:
            return text
        if not is_user and o.drop_notes:
            # before the panels: a panel just above a plan's label would take the label with it
            # and leave the plan's list behind ("【真相：…】\n\n【剧情规划】\n- 下一回：…")
            text = blocks.drop_plan_tail(blocks.drop_opening_aside(text, notes), notes)
        if o.drop_panels:
            text = blocks.drop_panels(text, self._names, notes)
        if not is_user:
            if o.drop_notes:
                text = blocks.drop_plan_tail(blocks.drop_preamble(text, notes), notes)
            if "#" in text:
                text = blocks.drop_headings(text, notes)
        return text


def story_text(raw: str, options: StoryOptions | None = None, **names: str | None) -> str:
    """One message's story text with default names (for tests and one-off use)."""
    return StoryReader(options, **names).clean(raw)
