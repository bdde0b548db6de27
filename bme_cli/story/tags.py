"""Tag blocks in a message: find every tag once, pair them, then keep or drop each block.

Linear on any input (a megabyte of openers included): tags are found by one regex scan
with possessive patterns, paired with a stack (each opener pushed and popped once), and
the walk jumps over a dropped block in one step. Rules:
* a story tag present (`<content>` by default) -> the story is inside it, all of them;
  a stray story closer with no opener before it means the story began before `mes` did;
* a drop tag's block goes; unclosed, it runs to the end of what holds it, except that it
  never swallows a story block after it; a stray drop closer (a preset prefilled the
  opener) drops what came before it;
* prose HTML (<p>, <i>, <br>) leaves its text; blocks (<div>, unknown tags) are kept as
  text unless their content looks like a panel (`panel_block`);
* a custom tag does not nest in itself (a second <think> inside an open one is text, so
  the first opener pairs with the next closer); HTML tags nest;
* an unknown tag that never pairs is text (`a<b and c>d` is arithmetic, not markup).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from .blocks import scene_headings
from .vocab import BLOCK, DROP, HTML, LINE_BREAKS, PROSE, VOID, norm

_TAG = re.compile(r"<(/?)([A-Za-z][\w:.\-]*+)(?=[\s/>])([^<>]*+)>")
_DECLARATION = re.compile(r"<[!?][^<>]*+>")  # <!doctype>, <?xml?>, <![CDATA[
_BLANK_LINES = re.compile(r"\n\s*\n")
JUDGE_DEPTH = 8  # nested blocks judged on their own; deeper ones with their parent

STORY, KEEP, DROP_, PROSE_, BLOCK_, UNKNOWN, VOID_ = range(7)
_FORMAT = (PROSE_, VOID_)
PanelTest = Callable[[str, str], bool]  # (inner text, attributes) -> is it a panel?


@dataclass(frozen=True)
class TagRules:
    """Which class each tag name has, from the options; built once per reader."""

    story: frozenset[str]
    keep: frozenset[str]
    drop: frozenset[str]
    judge: bool = True          # decide blocks and unknown tags by structure
    heuristics: bool = True     # stray drop closers drop what came before them
    names: dict[str, tuple[str, int]] = field(default_factory=dict, compare=False, repr=False)

    def kind(self, name: str) -> int:
        """The class of a normalised tag name; story > keep > drop > built-in."""
        if name in self.story:
            return STORY
        if name in self.keep:
            return KEEP
        if name in VOID:
            return VOID_
        if name in self.drop or name in DROP:
            return DROP_
        if name in PROSE:
            return PROSE_
        return BLOCK_ if name in BLOCK else UNKNOWN

    def lookup(self, label: str) -> tuple[str, int]:
        """(normalised name, class) of a tag name as written; cached per spelling."""
        known = self.names.get(label)
        if known is None:
            name = norm(label)
            known = self.names[label] = (name, self.kind(name))
        return known


def without_comments(text: str) -> str:
    """Text without <!-- comments --> (an unclosed one runs to the end) or declarations."""
    if "<!--" in text:
        parts, pos = [], 0
        while (start := text.find("<!--", pos)) >= 0:
            parts.append(text[pos:start])
            end = text.find("-->", start + 4)
            pos = len(text) if end < 0 else end + 3
        parts.append(text[pos:])
        text = "".join(parts)
    return _DECLARATION.sub("", text) if "<!" in text or "<?" in text else text


class Tags:
    """The text without formatting tags, and its other tags as parallel lists (index = tag).

    Prose and void HTML (<i>, <span>, <br>, <p>) only format: they go here (<br>, <p> and
    the like become line breaks), so the walk sees only the tags that shape the story.
    """

    def __init__(self, text: str, rules: TagRules):
        self._source, self._parts, self._rows = text, [], []
        self._pos = self._shift = 0  # shift: characters removed so far (positions are in the new text)
        self._closers: dict[str, re.Pattern[str] | None] = {}
        names, lookup = rules.names, rules.lookup
        skip_to = run_end = -1
        for m in _TAG.finditer(text):
            if m.start() < skip_to:
                continue  # inside a dropped block whose closer was found: never read
            (start, end), (close, label, attrs) = m.span(), m.groups()
            name, kind = names.get(label) or lookup(label)
            if kind in _FORMAT or (attrs and not close and attrs.rstrip().endswith("/")):
                self._remove(start, end, kind in _FORMAT and name in LINE_BREAKS)
            elif kind != DROP_ or name in HTML:
                self._add(start, end, bool(close), name, kind, attrs, label)
            elif close:
                self._collapse_run(name, run_end, start)
                run_end = end
                self._add(start, end, True, name, kind, attrs, label)
            else:
                self._add(start, end, False, name, kind, attrs, label)
                found = _closer_after(text, end, label, self._closers)
                if found is not None:  # a custom block does not nest: its closer is the next one
                    self._add(*found, True, name, kind, "", label)
                    skip_to = found[1]
        self.text = text if not self._parts else "".join(self._parts) + text[self._pos:]
        columns = [list(c) for c in zip(*self._rows)] if self._rows else [[] for _ in range(7)]
        self.start: list[int] = columns[0]
        self.end: list[int] = columns[1]
        self.close: list[bool] = columns[2]
        self.name: list[str] = columns[3]
        self.kind: list[int] = columns[4]
        self.attrs: list[str] = columns[5]
        self.label: list[str] = columns[6]

    def _add(self, start: int, end: int, close: bool, name: str, kind: int, attrs: str,
             label: str) -> None:
        self._rows.append((start - self._shift, end - self._shift, close, name, kind, attrs, label))

    def _remove(self, start: int, end: int, line_break: bool) -> None:
        """Cut source[start:end] out of the text (a line break stands in for it if asked)."""
        piece = self._source[self._pos:start]
        self._parts.append(piece + "\n" if line_break else piece)
        self._shift += end - start - line_break
        self._pos = end

    def _collapse_run(self, name: str, run_end: int, start: int) -> None:
        """In a run of one drop closer the middle ones add nothing (the last one drops what
        came before it): they go like formatting, so a megabyte of them is cheap."""
        rows = self._rows
        if len(rows) > 1 and rows[-1][2:4] == rows[-2][2:4] == (True, name) and run_end >= 0 \
                and not self._source[run_end:start].strip():
            middle = rows.pop()
            self._remove(middle[0] + self._shift, middle[1] + self._shift, False)

    def __len__(self) -> int:
        return len(self.start)


def _closer_after(text: str, start: int, label: str,
                  closers: dict[str, re.Pattern[str] | None]) -> tuple[int, int] | None:
    """The span of the next </label> after start; once one is missing, it stays missing
    (no later opener of the name can close either), so many openers cost one search."""
    key = label.lower()
    pattern = closers.get(key, False)
    if pattern is False:
        pattern = closers[key] = re.compile(rf"</{re.escape(label)}\s*>", re.IGNORECASE)
    if pattern is None:
        return None
    m = pattern.search(text, start)
    if m is None:
        closers[key] = None
        return None
    return m.span()


@dataclass
class Pairs:
    """How the tags pair up."""

    closer: dict[int, int] = field(default_factory=dict)   # opener -> its closer
    opener: dict[int, int] = field(default_factory=dict)   # closer -> its opener
    ends: dict[int, int] = field(default_factory=dict)     # unclosed opener -> tag that ends it
    stray: set[int] = field(default_factory=set)           # closers with no opener
    ignored: set[int] = field(default_factory=set)         # a custom tag opened inside itself
    paired: set[str] = field(default_factory=set)          # names that pair at least once


def pair(tags: Tags) -> Pairs:
    """Match closers to openers with a stack; linear (each opener is popped once)."""
    p, stack, open_count = Pairs(), [], {}
    names = tags.name
    for i, close in enumerate(tags.close):
        name = names[i]
        if not close:
            if name not in HTML and open_count.get(name):
                p.ignored.add(i)
                continue
            stack.append(i)
            open_count[name] = open_count.get(name, 0) + 1
        elif not open_count.get(name):
            p.stray.add(i)
        else:
            while stack:
                j = stack.pop()
                open_count[names[j]] -= 1
                if names[j] == name:
                    p.closer[j], p.opener[i] = i, j
                    p.paired.add(name)
                    break
                p.ends[j] = i  # unclosed: it ends where what holds it closes
    for j in stack:
        p.ends[j] = len(tags)
    return p


@dataclass(slots=True)
class _Frame:
    opener: int
    kind: int
    judged: bool  # collects its own text, kept or dropped when it closes


class TagWalk:
    """One pass over a message that writes its story text out; see the module docstring."""

    def __init__(self, text: str, rules: TagRules, panel_block: PanelTest,
                 notes: list[str] | None = None):
        self.tags = tags = Tags(without_comments(text), rules)
        self.text, self.pairs = tags.text, pair(tags)
        self.rules, self.panel_block, self.notes = rules, panel_block, notes
        live = [i for i, k in enumerate(tags.kind) if k == STORY and i not in self.pairs.ignored]
        self.story_mode = bool(live)
        self.story_opens = [i for i in live if not tags.close[i]]
        # A stray story closer before any story opener: the story began before `mes` did.
        self.prefix = bool(live) and tags.close[live[0]]
        self.story_depth = int(self.prefix)
        self.out: list[list[str]] = [[]]
        self.frames: list[_Frame] = []
        self.open_ids: set[int] = set()
        self.judged = 0
        self.noted: set[str] = set()

    def run(self) -> str:
        """The text with every tag block kept or dropped."""
        tags, pairs, text = self.tags, self.pairs, self.text
        i, pos, n = 0, 0, len(tags)
        while i < n:
            kind = tags.kind[i]
            if kind == UNKNOWN and tags.name[i] not in pairs.paired:
                i += 1  # never pairs: it is text, written out with what follows it
                continue
            self._emit(text[pos:tags.start[i]])
            pos = tags.end[i]
            if i in pairs.ignored:
                i += 1
            elif kind == DROP_ and not tags.close[i]:
                i, pos = self._skip(i)
            else:
                if tags.close[i]:
                    self._closer(i)
                else:
                    self._open(i)
                i += 1
        self._emit(text[pos:])
        while self.frames:
            self._close_frame()
        return "".join(self.out[0])

    def _note(self, what: str) -> None:
        if self.notes is not None:
            self.notes.append(what)

    def _emit(self, piece: str) -> None:
        if not piece:
            return
        if not self.story_mode or self.story_depth > 0:
            self.out[-1].append(piece)
            return
        # A scene heading before the story (「雨夜·百乐门」) says where it happens: kept.
        self.out[-1].extend(f"{line}\n" for line in scene_headings(piece))
        if self.notes is not None and piece.strip() and "outside" not in self.noted:
            self.noted.add("outside")
            self._note("text outside the story tags")

    def _skip(self, i: int) -> tuple[int, int]:
        """Jump over a dropped block: to after its closer, or (unclosed) to where it ends."""
        tags = self.tags
        self._note(f"<{tags.label[i]}>")
        if i in self.pairs.closer:
            end = self.pairs.closer[i]
            return end + 1, tags.end[end]
        end = self.pairs.ends[i]
        if self.story_mode:  # an unclosed drop block never swallows the story after it
            end = next((k for k in self.story_opens if i < k < end), end)
        return end, (tags.start[end] if end < len(tags) else len(self.text))

    def _open(self, i: int) -> None:
        kind, name = self.tags.kind[i], self.tags.name[i]
        story = kind in (STORY, KEEP)
        judged = (not story and self.rules.judge and self.judged < JUDGE_DEPTH
                  and (not self.story_mode or self.story_depth > 0))
        if story:
            self.story_depth += 1
        if story or name in LINE_BREAKS:
            self._emit("\n")  # blocks never run into each other
        if not (story or judged):
            return  # a block only its line breaks mark: no frame, so deep nesting is cheap
        self.frames.append(_Frame(i, kind, judged))
        self.open_ids.add(i)
        if judged:
            self.judged += 1
            self.out.append([])

    def _closer(self, i: int) -> None:
        kind = self.tags.kind[i]
        if i in self.pairs.stray:
            if kind == STORY and self.prefix:
                self.prefix = False
                self.story_depth -= 1
            elif kind == DROP_ and self.rules.heuristics and self.out[-1]:
                self._note(f"text before </{self.tags.label[i]}>")
                self.out[-1].clear()
            return
        opener = self.pairs.opener[i]
        if opener not in self.open_ids:  # a block without a frame, or one a jump passed
            if self.tags.name[i] in LINE_BREAKS:
                self._emit("\n")
            return
        while self.frames and self._close_frame().opener != opener:
            pass  # what it holds and never closed ends here too

    def _close_frame(self) -> _Frame:
        frame = self.frames.pop()
        self.open_ids.discard(frame.opener)
        i = frame.opener
        if frame.kind in (STORY, KEEP):
            self._emit("\n")
            self.story_depth -= 1
        if frame.judged:
            self.judged -= 1
            inner = _BLANK_LINES.sub("\n\n", "".join(self.out.pop()))  # as the text ends up
            if self.panel_block(inner, self.tags.attrs[i]):
                self._note(f"<{self.tags.label[i]}> panel")
            else:
                self.out[-1].append(inner)
        if self.tags.name[i] in LINE_BREAKS:
            self._emit("\n")
        return frame
