"""A chat read in two passes, so a plan over a chat of any size holds about one batch of it.

Each message's story text depends on the speakers' names of the whole chat (chat.ChatShape),
so the first pass reads every line as read_chat does (the same checks, the same warnings)
but keeps only the header, the names, the assistant turns and the first `head` messages;
`stream()` then reads the same open file again and yields each message with its story
text. `ingest --dry-run` plans this way (issue 17). The second pass reads only the bytes the
first one did, so a line SillyTavern appends meanwhile is not half-counted; a file changed
in place between the passes is one clear error. A pipe cannot be read twice: it is read
whole, as read_chat would.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

from .chat import ChatShape, Message, _message, read_open_chat, story_reader, tell_story
from .chat_lines import MAX_INPUT_BYTES, Warn, is_header, objects, open_for_read, shown
from .errors import BadInputError
from .story import StoryOptions


@dataclass
class StreamedChat:
    """A chat's header, names and assistant turns, and its messages as a stream (`stream()`)."""

    path: Path
    header: dict | None
    user_name: str | None
    character_name: str | None
    is_group: bool
    skipped_lines: int
    count: int                       # messages in the chat
    assistant_turns: list[int]       # seqs ST-BME extracts from: not user, not hidden
    head: list[Message]              # the first messages, story text set (the language sample)
    story: StoryOptions | None = None
    _fh: BinaryIO | None = field(default=None, repr=False)
    _end: int = 0                    # bytes the first pass read
    _held: list[Message] | None = field(default=None, repr=False)  # a pipe's messages, read whole
    narrators: frozenset[str] = frozenset()   # as Chat.narrators
    own_calendar: bool = False                # as Chat.own_calendar

    def stream(self) -> Iterator[Message]:
        """Every message in file order with its story text, read again from the file."""
        if self._held is not None:
            yield from self._held
            return
        assert self._fh is not None, "stream() is for the open_streamed block"
        self._fh.seek(0)
        reader = story_reader(self.user_name, self.character_name, self.story)
        turns, seq, first = iter(self.assistant_turns), 0, True
        for line_no, obj in objects(self.path, self._fh, True, None, end=self._end):  # warned in pass 1
            if obj is None:
                continue
            if first:  # as ChatShape.add tells the header
                first = False
                if is_header(obj):
                    continue
            m = _message(obj, seq, line_no)
            if not m.is_user and not m.is_system and next(turns, None) != seq:
                self._changed()
            tell_story(reader, m, self.narrators, dated=not self.own_calendar)
            yield m
            seq += 1
        if seq != self.count or next(turns, None) is not None:
            self._changed()

    def _changed(self) -> None:
        raise BadInputError(f"{shown(self.path)} changed while bme was reading it; nothing was written",
                            "run the command again once SillyTavern has saved the chat")


@contextmanager
def open_streamed(path: Path, *, skip_bad_lines: bool = False, on_warning: Warn | None = None,
                  story: StoryOptions | None = None, head: int = 200,
                  max_bytes: int = MAX_INPUT_BYTES) -> Iterator[StreamedChat]:
    """The first pass over a chat (BadInputError as read_chat's); stream() inside the block."""
    path = Path(path)
    with open_for_read(path, max_bytes) as fh:
        if not fh.seekable():
            yield _whole(path, fh, skip_bad_lines, on_warning, story, head, max_bytes)
            return
        shape, first = ChatShape(turns=True), []
        for line_no, obj in objects(path, fh, skip_bad_lines, on_warning, max_bytes):
            seq = shape.count
            if shape.add(obj) and seq < head:
                first.append(_message(obj, seq, line_no))
        chat = shape.chat(path, first)
        reader = story_reader(chat.user_name, chat.character_name, story)
        for m in first:
            tell_story(reader, m, chat.narrators, dated=not chat.own_calendar)
        yield StreamedChat(path, chat.header, chat.user_name, chat.character_name, chat.is_group,
                           chat.skipped_lines, shape.count, shape.turns or [], first, story, fh, fh.tell(),
                           narrators=chat.narrators, own_calendar=chat.own_calendar)


def _whole(path: Path, fh: BinaryIO, skip: bool, warn: Warn | None, story: StoryOptions | None,
           head: int, max_bytes: int) -> StreamedChat:
    """A pipe, read whole into memory (it cannot be read a second time)."""
    chat = read_open_chat(path, fh, skip, warn, story, max_bytes=max_bytes)
    return StreamedChat(path, chat.header, chat.user_name, chat.character_name, chat.is_group,
                        chat.skipped_lines, len(chat.messages), chat.assistant_turns, chat.messages[:head],
                        story, _held=chat.messages, narrators=chat.narrators, own_calendar=chat.own_calendar)
