"""SillyTavern chat files (.jsonl): a streaming reader (the header writer is sillytavern/header.py).

No memory logic lives here; the lines themselves (size limits, strict JSON) are read by
chat_lines.py. Decisions worth knowing:
* A file holding only a header line is a valid chat with 0 messages (ST writes that for a
  character without a greeting). A file with no JSON lines at all is an error ("no messages").
* Blank lines are ignored, as ST does; any other line that is not a JSON object is an error
  unless `skip_bad_lines` is set, in which case `on_warning` hears about it and it is counted.
* Dates never make a read fail. Forms without a zone (ST's own) are read as UTC wall-clock
  times, so every parsed `send_date` is timezone-aware and comparable with every other.
"""
from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from itertools import islice
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from .chat_lines import MAX_INPUT_BYTES, Warn, is_header, objects, open_for_read, shown
from .dates import parse_send_date
from .errors import BadInputError
from .reltime import keeps_own_calendar, named_years
from .story import StoryOptions, StoryReader, is_person_name
from .text import PERSON_TITLES, is_settlement_name

GRAPH_KEY = "st_bme_graph"
# extra.type of the messages SillyTavern itself writes (/sys narration, comments, help): the
# name on them ("SillyTavern System") is nobody in the story.
_SYSTEM_TYPES = frozenset({"narrator", "comment", "help", "welcome", "group", "empty", "generic",
                           "slash_commands", "formatting", "hotkeys", "macros", "welcome_prompt",
                           "assistant_note"})


@dataclass(slots=True)
class Message:
    """One chat message as memory sees it; the raw JSON line is not kept."""

    seq: int                 # 0-based position in the message list, header excluded
    line_no: int             # 1-based line number in the file
    name: str                # the speaker memory names: raw_name, "" for a card title
    is_user: bool
    is_system: bool          # hidden (/hide) or system message: memory skips it
    text: str                # the story text of `mes` (see bme_cli.story), \r\n -> \n, stripped
    raw: str                 # `mes` exactly as in the file (Chub's {"message": ...} unwrapped)
    send_date: datetime | None
    swipe_id: int | None
    swipe_count: int         # len(swipes) when the line has a swipes array, else 0
    reasoning: str | None    # extra.reasoning (kept out of `text`)
    raw_name: str = ""       # `name` as in the file; falls back to original_avatar minus ".png"
    narrator: bool = False   # a SillyTavern system message (extra.type narrator, comment, ...)
    dated: bool = True       # its send date is the story's date: False where the story keeps its own calendar

    @property
    def role(self) -> str:
        """'user' or 'assistant', the role names ST-BME's prompts use."""
        return "user" if self.is_user else "assistant"


@dataclass
class Chat:
    """A whole chat file: its header (if any) and its messages in file order."""

    path: Path
    header: dict | None      # None for old headerless group chats
    messages: list[Message]
    user_name: str | None
    character_name: str | None
    is_group: bool
    skipped_lines: int = 0
    # Character-side speakers the story (almost) never names: a card that narrates ("锦瑟深宫").
    narrators: frozenset[str] = frozenset()
    # The story names its own years, far from the send dates (reltime.keeps_own_calendar).
    own_calendar: bool = False

    @property
    def assistant_turns(self) -> list[int]:
        """Seqs of the messages ST-BME extracts from: not user, not system/hidden."""
        return [m.seq for m in self.messages if not m.is_user and not m.is_system]

    def graph_in_header(self) -> dict | None:
        """The ST-BME graph stored in `chat_metadata.st_bme_graph`, if it is an object."""
        meta = self.header.get("chat_metadata") if self.header else None
        graph = meta.get(GRAPH_KEY) if isinstance(meta, dict) else None
        return graph if isinstance(graph, dict) else None


# ---------------------------------------------------------------- reading

def read_chat(path: Path, *, skip_bad_lines: bool = False, on_warning: Warn | None = None,
              story: StoryOptions | None = None, keep_text: int | None = None,
              max_bytes: int = MAX_INPUT_BYTES) -> Chat:
    """Read a SillyTavern chat in one streaming pass; a bad line raises BadInputError.

    Each message's `text` is its story text as `story` chooses it (the defaults if None).
    With `keep_text`, only the first that many messages keep their text (`raw`, `text`,
    `reasoning`): every line is still read and checked, but a command that only counts
    (`bme stats`) then holds a few dozen bytes per message, not the whole chat.
    A file over `max_bytes` (the max_input_mb setting) is refused before it is read.
    """
    path = Path(path)
    with open_for_read(path, max_bytes) as fh:
        return read_open_chat(path, fh, skip_bad_lines, on_warning, story, keep_text, max_bytes)


def read_open_chat(path: Path, fh: BinaryIO, skip_bad_lines: bool = False, on_warning: Warn | None = None,
                   story: StoryOptions | None = None, keep_text: int | None = None,
                   max_bytes: int = MAX_INPUT_BYTES) -> Chat:
    """read_chat of a file already open (from chat_lines.open_for_read)."""
    messages: list[Message] = []
    shape = ChatShape()
    for line_no, obj in objects(path, fh, skip_bad_lines, on_warning, max_bytes):
        if shape.add(obj):
            message = _message(obj, len(messages), line_no)
            if keep_text is not None and len(messages) >= keep_text:
                message.raw = message.text = ""
                message.reasoning = None
            messages.append(message)
    chat = shape.chat(path, messages)
    read_story(chat, story)
    return chat


class ChatShape:
    """What a whole read learns beside the messages, a line at a time: the header, the group
    marks, the speakers' names and the skipped lines (also the first pass of chat_stream)."""

    def __init__(self, *, turns: bool = False) -> None:
        self.header: dict | None = None
        self.first, self.skipped, self.has_mes, self.group_marks, self.count = True, 0, False, False, 0
        self.turns: list[int] | None = [] if turns else None  # with turns=True: the assistant turns' seqs
        self._names = ({}, {})   # per side (user, character): name -> messages under it
        self._unnamed = [False, False]  # a side speaking only under card titles
        self._named_in: dict[str, int] = {}   # character-side speaker -> messages whose text names it
        self._years: list[tuple[int, int]] = []   # (year a message names, the year it was sent)

    def add(self, obj: dict | None) -> bool:
        """Take in one line (None: a skipped bad one); True when it is a message."""
        if obj is None:
            self.skipped += 1
            return False
        if self.first:
            self.first = False
            if is_header(obj):
                self.header = obj
                return False
        self.group_marks = self.group_marks or obj.get("is_group") is True or "original_avatar" in obj
        self.has_mes = self.has_mes or "mes" in obj
        user, system = _flag(obj.get("is_user")), _flag(obj.get("is_system"))
        if user or not system:
            self._tally(user, _speaker(obj), _narrator(obj))
        mes = obj.get("mes")
        if isinstance(mes, str) and mes:
            for name in islice(self._names[1], NARRATOR_CANDIDATES):   # a chat has a few voices
                if len(name) <= MAX_NAME_CHARS and _names(name, mes):
                    self._named_in[name] = self._named_in.get(name, 0) + 1
            if len(self._years) < MAX_YEARS and self.count < YEAR_MESSAGES:
                years = named_years(mes)
                sent = parse_send_date(obj.get("send_date")) if years else None
                self._years += [(y, sent.year) for y in years] if sent is not None else []
        if self.turns is not None and not user and not system:
            self.turns.append(self.count)
        self.count += 1
        return True

    def _tally(self, user: bool, name: str, narrator: bool) -> None:
        if name and not narrator:
            if _person(name):
                counts = self._names[not user]
                counts[name] = counts.get(name, 0) + 1
            else:
                self._unnamed[not user] = True

    def chat(self, path: Path, messages: list[Message]) -> "Chat":
        """The Chat these lines make, with `messages`; BadInputError when they make none."""
        self.check(path)
        return Chat(path=path, header=self.header, messages=messages,
                    user_name=self.name(True), character_name=self.name(False),
                    is_group=self.group_marks or self.header is None, skipped_lines=self.skipped,
                    narrators=self.narrators(), own_calendar=keeps_own_calendar(self._years))

    def narrators(self) -> frozenset[str]:
        """Character-side speakers of NARRATOR_MESSAGES messages or more that at most
        NARRATOR_NAMED messages name (by a word of the name, or the whole Chinese name): a title
        line, say; or that are named after a village or a town (王家湾), however often named. Not a share: two people in a long chat rarely say each other's names (a
        LoCoMo speaker of 337 messages is named in 17)."""
        return frozenset(n for n, k in islice(self._names[1].items(), NARRATOR_CANDIDATES)
                         if k >= NARRATOR_MESSAGES and len(n) <= MAX_NAME_CHARS
                         and (self._named_in.get(n, 0) <= NARRATOR_NAMED or is_settlement_name(n)))

    def check(self, path: Path) -> None:
        """Refuse a file with no lines at all, or JSON Lines that are no chat."""
        if self.first:
            what = f"all {self.skipped} lines were unreadable" if self.skipped else "the file is empty"
            raise BadInputError(f"{shown(path)}: no messages ({what})",
                                "pass a SillyTavern chat file (.jsonl)")
        if self.header is None and self.count and not self.has_mes:  # JSON Lines, but of something else
            raise BadInputError(f"{shown(path)}: not a SillyTavern chat (no header line and no message has \"mes\")",
                                "pass a chat exported from SillyTavern (.jsonl)")

    def name(self, user: bool) -> str | None:
        """Commonest speaker of one side (ties: first seen) that is a person, not a card title;
        else the header's name, unless that side speaks only under titles (then the header's
        name never speaks: it is a card title too)."""
        counts = self._names[not user]
        if counts:
            return max(counts, key=counts.__getitem__)   # the first of the most common
        fallback = self.header.get("user_name" if user else "character_name") if self.header else None
        if self._unnamed[not user] or not isinstance(fallback, str) or not is_person_name(fallback):
            return None
        return fallback.strip()


def read_story(chat: Chat, options: StoryOptions | None = None) -> StoryReader:
    """Set every message's `text` (and speaker `name`) from its raw `mes`; returns the reader."""
    reader = story_reader(chat.user_name, chat.character_name, options)
    for m in chat.messages:
        tell_story(reader, m, chat.narrators, dated=not chat.own_calendar)
    return reader


def story_reader(user_name: str | None, character_name: str | None,
                 options: StoryOptions | None = None) -> StoryReader:
    """The reader of one chat's story text: it knows the chat's two names."""
    return StoryReader(options, user_name=user_name, character_name=character_name)


def tell_story(reader: StoryReader, m: Message, narrators: frozenset[str] = frozenset(), *,
               dated: bool = True) -> None:
    """Set one message's speaker `name` and story `text` from its raw `mes` (a narrating card
    speaks unnamed, as SillyTavern's narrator does), and whether its send date dates the story."""
    m.name = m.raw_name if _person(m.raw_name) and not m.narrator and m.raw_name not in narrators else ""
    m.text = reader.clean(m.raw, is_user=m.is_user, speaker=m.name)
    m.dated = dated



def looks_like_chat(path: Path, limit: int = 1 << 20) -> bool:
    """Whether a file's first line is a SillyTavern header or message (read at most `limit`
    bytes): how a folder tells its chats from other JSON Lines files beside them."""
    try:
        with open(path, "rb") as fh:
            line = fh.readline(limit).strip()
            while not line and fh.tell() < limit:
                line = fh.readline(limit).strip()
    except OSError:
        return True        # reading it properly will say what is wrong
    try:
        obj = json.loads(line.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return True        # a damaged first line: the reader reports it (or skips it)
    return not isinstance(obj, dict) or is_header(obj) or "mes" in obj




def _message(obj: dict, seq: int, line_no: int) -> Message:
    """Build a Message from one parsed message line; never fails on odd field values."""
    raw = _mes_text(obj.get("mes"))
    extra = obj.get("extra") if isinstance(obj.get("extra"), dict) else {}
    reasoning = extra.get("reasoning")
    swipe_id = obj.get("swipe_id")
    swipes = obj.get("swipes")
    speaker = _speaker(obj)
    return Message(
        seq=seq, line_no=line_no, name=speaker, raw_name=speaker,
        is_user=_flag(obj.get("is_user")), is_system=_flag(obj.get("is_system")),
        text=raw, raw=raw, send_date=parse_send_date(obj.get("send_date")),
        swipe_id=swipe_id if isinstance(swipe_id, int) and not isinstance(swipe_id, bool) else None,
        swipe_count=len(swipes) if isinstance(swipes, list) else 0,
        reasoning=reasoning if isinstance(reasoning, str) and reasoning.strip() else None,
        narrator=_narrator(obj),
    )


def _narrator(obj: dict) -> bool:
    """A message SillyTavern itself wrote (its extra.type says narrator, comment, help...)."""
    extra = obj.get("extra")
    kind = extra.get("type") if isinstance(extra, dict) else None
    return isinstance(kind, str) and kind in _SYSTEM_TYPES


NARRATOR_MESSAGES = 5
NARRATOR_NAMED = 2
NARRATOR_CANDIDATES = 16   # the first character-side speakers; a file of thousands of names has no narrator
MAX_NAME_CHARS = 80        # longer is no card's name (and a pattern of it would cost seconds)
MAX_YEARS = 400            # (year named, year sent) pairs enough to judge a chat's calendar
YEAR_MESSAGES = 1000       # the messages looked at for them: a story sets its time early
_ARTICLES = frozenset("the an of and".split())   # words of a card's name no story names it by


@lru_cache(maxsize=256)
def _name_pattern(name: str) -> re.Pattern[str]:
    """A speaker's name as the story would write it: the whole of a Chinese name, any word of
    another ("Roz" or "Achterberg" of Roz Achterberg; titles and articles aside: every story
    writes the "The" of a card called "The Asylum"), the last word of one that starts with "The"."""
    if re.search(r"[\u4e00-\u9fff]", name):
        return re.compile(re.escape(name))
    words = [w for w in re.findall(r"[^\W\d_]{2,}", name)
             if w.casefold() not in PERSON_TITLES and w.casefold() not in _ARTICLES]
    if words and name.split()[0].casefold() == "the":
        words = words[-1:]   # "The Velnara Accord" is named by its head word: "Velnara" is the station's too
    return re.compile(r"\b(?:" + "|".join(map(re.escape, words or [name])) + r")\b")


_HEADING = re.compile(r"^[ \t]*#.*$", re.M)   # a Markdown title line: the card's title, not the story naming it
_CAPITALISED = re.compile(r"[A-ZÀ-ÖØ-Þ][\w'’-]*")


def _names(name: str, text: str) -> bool:
    """Whether the story names the speaker: a title line does not; nor does a word of the name
    that another capitalised word follows ("Velnara Station" names no card "The Velnara Accord")."""
    pattern = _name_pattern(name)
    if pattern.search(text) is None:
        return False
    if "#" in text:
        text = _HEADING.sub("", text)
    if re.search(r"[\u4e00-\u9fff]", name):
        return pattern.search(text) is not None
    own = set(re.findall(r"[^\W\d_]+", name.casefold()))
    return any(_alone(m, text, own) for m in pattern.finditer(text))


def _alone(m: re.Match[str], text: str, own: set[str]) -> bool:
    """A match not followed by a capitalised word that is no word of the name (a word before it
    may well start the sentence: "Thanks Caroline")."""
    after = re.match(r" ([^\W\d_][\w'’-]*)", text[m.end():m.end() + 40])
    word = after.group(1) if after else ""
    return not (len(word) > 1 and _CAPITALISED.fullmatch(word) and not re.match(r"I['’]", word)
                and word.casefold() not in own)


@lru_cache(maxsize=4096)
def _person(name: str) -> bool:
    """is_person_name, remembered: a chat has a few speakers over many messages."""
    return is_person_name(name)


def _mes_text(mes: object) -> str:
    """`mes` as a string: Chub/Venus wrap it as {"message": ...}; null or missing is ""."""
    if isinstance(mes, dict):
        mes = mes.get("message")
    if mes is None:
        return ""
    return mes if isinstance(mes, str) else json.dumps(mes, ensure_ascii=False)


def clean_text(raw: str) -> str:
    """The story text of one message with the default options and no names known."""
    return StoryReader().clean(raw)


def _speaker(obj: dict) -> str:
    """`name`, else the group card file name (`original_avatar` minus .png), else ""."""
    # Interned: a chat has a few speakers over many messages; one str each saves ~56 B/message.
    name = obj.get("name")
    if isinstance(name, str) and name.strip():
        return sys.intern(name.strip())
    avatar = obj.get("original_avatar")
    if isinstance(avatar, str) and avatar.strip():
        return sys.intern(re.sub(r"\.png$", "", avatar.strip(), flags=re.IGNORECASE))
    return ""


def _flag(value: object) -> bool:
    """ST's booleans, tolerating the 1/"true" that third-party writers produce; missing is False."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True or (type(value) in (int, float) and value == 1)

