"""Sentences of story text, shared by every layer: splitting, filler, and cutting at a boundary.

Pure text functions, English and Chinese, no models. `split_sentences` cuts at . ! ? and their
full-width forms, ellipses and line breaks (closing quotes stay with their sentence;
abbreviations such as "Dr." do not end one). `is_filler` tells chat filler ("Wow, that's
great!", "好。") from a sentence that says something. `clip` shortens text to a limit without
cutting a word, a number or a CJK phrase in half.
"""
from __future__ import annotations

import re
from functools import cache
from typing import Iterable

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_CHAR = f"[{_CJK}]"
_MARKS = re.compile(r"(?<!\w)[*_~`]+|[*_~`]+(?!\w)|^[#>|]+\s*", re.M)
_SPACES = re.compile(r"[ \t\u3000]+")
_CLOSE = "\"'”’」』）)\\]"
# A sentence ends after 。！？；… (and their closing quotes) at once, after . ! ? only before a space;
# the closing quotes stay with their sentence, and "3.5" or "e.g.x" is not cut.
_SENT_END = (f"(?:(?<=[。！？；…])|(?<=[。！？；…][{_CLOSE}]))(?![{_CLOSE}])"
             f"|(?:(?<=[.!?])|(?<=[.!?][{_CLOSE}]))\\s+|\\n+")
_ABBREV = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Mt|Jr|Sr|Prof|vs|etc|e\.g|i\.e)\.$", re.I)
_WORD = re.compile(r"[^\W_]+")
# Break points for a cut, best first: the end of a clause, then any space (Latin) or CJK
# punctuation (Chinese); a cut never lands inside a word or a run of CJK characters.
_CLAUSE = re.compile(r"[,;:，；：、）)\]」』”]\s*")
_CJK_BREAK = f"(?<=[^{_CJK}])|(?=[^{_CJK}])|(?<=[，。！？；：、…])"


# The patterns with large CJK classes or many alternatives (the strings above and _LEAD below)
# take a millisecond or two each to compile: compiled on first use, once per process, so a
# command that cuts no text (a recall from a saved index) does not pay for them. A function
# fetches its pattern once per call, never per character or per match.
@cache
def _pattern(source: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(source, flags)


# Words that say nothing on their own in chat: a sentence made only of them is filler.
FILLER_WORDS = frozenset("""
a an the and or but so of to in on at it its it's is am are was were be been i me my you your we
our us he she they them this that these those there here just really so very too well oh ah wow
hey hi hello yeah yes yep yup no nope ok okay sure cool great good nice awesome amazing lovely
love loved glad thanks thank thx agree agreed sound sounds see chat talk soon later care bye hope
fun sweet wonderful fantastic incredible beautiful true right absolutely know think mean guess
bet happy proud stuff thing things congrats congratulations sorry hear heard cheers tell hug hugs
exciting excited interesting impressive inspiring totally wish luck best keep going doing feel
feels feeling time lot bit kind means appreciate appreciated haha lol omg hmm um uh yay
definitely exactly indeed same too much what how s t d ll re ve m
""".split())
ZH_FILLER_CHARS = frozenset("好的嗯哦啊呀吧呢吗了是对没错谢谢行可以知道明白")


def is_cjk(text: str) -> bool:
    """True when CJK characters carry at least as much of the text as Latin letters (one ~ four)."""
    if text.isascii():
        return False
    cjk = len(_pattern(_CJK_CHAR).findall(text))
    return cjk > 0 and cjk * 4 >= len(re.findall(r"[A-Za-z]", text))


def plain(text: str) -> str:
    """Text as a reader sees it: *emphasis* marks gone, spaces collapsed, lines kept (tags are
    story/'s business: its text arrives without them, and a user's "a < b > c" stays)."""
    text = _MARKS.sub("", text or "")
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def split_sentences(text: str) -> list[str]:
    """Sentences of a text (English and Chinese punctuation, line breaks); abbreviations kept whole."""
    return rejoin_abbreviations(_pattern(_SENT_END).split(plain(text)))


def rejoin_abbreviations(pieces: Iterable[str]) -> list[str]:
    """Pieces split at sentence ends, blanks dropped, a piece ending in "Dr." joined to the next."""
    out: list[str] = []
    carry = ""
    for piece in pieces:
        piece = (carry + " " + piece).strip() if carry else piece.strip()
        carry = ""
        if not piece:
            continue
        if _ABBREV.search(piece):
            carry = piece
            continue
        out.append(piece)
    if carry:
        out.append(carry)
    return out


def is_filler(sentence: str, names: frozenset[str] = frozenset()) -> bool:
    """A sentence with nothing a memory needs: only filler words (and the lowercased `names` of
    the people talking: "Wow, Mel!"), no number, no other name; or a number with no word at all
    ("36。" of a count read out, line by line)."""
    if re.search(r"\d", sentence):
        return re.search(r"[^\W\d_]", sentence) is None
    if is_cjk(sentence):
        content = [c for c in _pattern(_CJK_CHAR).findall(sentence) if c not in ZH_FILLER_CHARS]
        return len(content) < 2
    words = [w.lower() for w in _WORD.findall(sentence)]
    return all(w in FILLER_WORDS or w in names for w in words)


_LEAD_WORDS = (r"wow+|whoa+|woah+|oh+|ah+|aw+|ooh+|hey+|hi|hello|haha+|lol|omg|yay+|um+|uh+|hmm+|yeah+|yep|yup|"
               r"gosh|geez")
_LEAD_PUNCT = (r"yes|no|well|so|okay|ok|right|sure|thanks|thank you|thanks so much|cool|great|nice|awesome|"
               r"amazing|true|anyway|honestly|definitely|exactly|congrats|congratulations|sweet|perfect|"
               r"good|i see|got it|same|me too")
_LEAD = rf"^(?:(?:{_LEAD_WORDS})\b[\s,!.…~-]*|(?:{_LEAD_PUNCT})\s*[,!.…]+\s*)+"  # with re.I


def trim_lead(sentence: str, names: frozenset[str] = frozenset()) -> str:
    """A sentence without the interjections and vocatives it opens with ("Wow, Mel! I went ..." ->
    "I went ..."); the sentence itself when nothing would remain."""
    s, lead = sentence, _pattern(_LEAD, re.I)
    for _ in range(3):
        before = s
        s = lead.sub("", s)
        m = re.match(r"([^\W\d_]+)\s*[,!.]+\s*", s)
        if m and m.group(1).lower() in names:
            s = s[m.end():]
        if s == before:
            break
    s = s.strip(" ,;:-–")
    if not s:
        return sentence
    return s[:1].upper() + s[1:]


def clip(text: str, limit: int, ellipsis: str = "…") -> str:
    """Text cut to at most `limit` characters at a clause end or word boundary, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    room = max(1, limit - len(ellipsis))
    head = text[:room + 1]  # one more: a boundary right after the last kept character counts
    cut = _last_break(head, room)
    return text[:cut].rstrip(" ,;:，；：、") + ellipsis


def _last_break(head: str, room: int) -> int:
    """Where to cut `head` so at most `room` characters stay: a clause end in the last third,
    else the last boundary that splits no word or CJK run, else `room`."""
    floor = room * 2 // 3
    clause = [m.end() for m in _CLAUSE.finditer(head) if floor <= m.end() <= room]
    if clause:
        return clause[-1]
    if is_cjk(head):
        spots = [m.start() for m in _pattern(_CJK_BREAK).finditer(head) if room // 2 <= m.start() <= room]
    else:
        spots = [i for i in range(min(room, len(head) - 1), room // 2, -1) if head[i] == " "]
        spots = spots[:1]
    return max(spots) if spots else room


_PAIRS = {"“": "”", "「": "」", "『": "』"}
_CLOSERS = {v: k for k, v in _PAIRS.items()}
# An ASCII ' opens a quote after a space, a colon or the start and before a letter; it closes one
# after a letter or a mark and before a space, a mark or the end. Any other ' is an apostrophe.
_SINGLE_OPEN = re.compile(r"(?:(?<=^)|(?<=[\s:(\[—–-]))'(?=\w)")
_SINGLE_CLOSE = re.compile(r"(?<=[\w.!?,;…])'(?=[\s.!?,;:)\]…—–-]|$)")


def balance_quotes(text: str) -> str:
    """Text without the quote marks a sentence cut left unpaired (an opening “ whose ” is in a
    sentence that was not kept, and the like); paired quotes and apostrophes stay."""
    drop: set[int] = set()
    stack: list[tuple[str, int]] = []
    for i, ch in enumerate(text):
        if ch in _PAIRS:
            stack.append((ch, i))
        elif ch in _CLOSERS:
            if stack and stack[-1][0] == _CLOSERS[ch]:
                stack.pop()
            else:
                drop.add(i)
    drop.update(i for _, i in stack)
    doubles = [i for i, ch in enumerate(text) if ch == '"']
    if len(doubles) % 2:
        drop.add(doubles[-1] if text[doubles[-1] - 1:doubles[-1]].strip() else doubles[0])
    opens = [m.start() for m in _SINGLE_OPEN.finditer(text)]
    closes = [m.start() for m in _SINGLE_CLOSE.finditer(text)]
    drop.update(i for i in opens if not any(c > i for c in closes))
    if not drop:
        return text
    out = "".join(ch for i, ch in enumerate(text) if i not in drop)
    return _SPACES.sub(" ", out).strip()
