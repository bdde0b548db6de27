"""Chinese word boundaries for the offline heuristics, from a segmenter's dictionary.

Name and place patterns ("surname + one or two characters", "X + 山/城/阁") find candidates;
the segmenter says whether a candidate cuts through a word: 何应对 starts inside 如何,
方达成 inside 双方, 汪伪政 ends inside 汪伪政权, 一旁观 inside 观看. A candidate that is
itself one everyday dictionary word (相关, 顶峰, 茶楼) is no name either.

The segmenter is rjieba (jieba-rs, the Rust port of jieba, with jieba's dictionary): a
4.6 MB wheel for every platform, 0.2 s to import, 0.1 ms per sentence; see docs/quality.md
for the comparison with jieba and with patterns alone. It is imported on the first
Chinese text only, so English chats and `bme --version` never load it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# A word cut before one of these keeps a place whole: 寒潭|边 is 寒潭 + "beside" (jieba's 潭边).
LOCATIVES = frozenset("边里中上下前后外内旁底脚顶侧畔")
# One-character verbs and prepositions the segmenter's model may glue to the word after them
# (说|六宫, 再见|见周|掌柜): no name or place starts with one where the model guessed the word.
GLUED_VERBS = frozenset("说问叫喊看听想见找请让给把被跟对向")
# Parts of speech that make a single dictionary word a proper noun (person, place, other).
PROPER_TAGS = frozenset({"nr", "nrt", "nrfg", "ns", "nz", "nt"})


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    import rjieba  # lazily: only Chinese text pays its load
    return rjieba


@dataclass(frozen=True)
class Token:
    start: int
    end: int
    word: str
    tag: str
    known: bool  # a dictionary word (not one the segmenter's HMM guessed)


class Segmentation:
    """A text's tokens with their offsets, to test candidate spans against word boundaries."""

    def __init__(self, text: str):
        seg = _segmenter()
        self.text = text
        self.tokens: list[Token] = []
        self._inside: dict[int, Token] = {}   # offset strictly inside a token -> that token
        pos = 0
        for word, tag in seg.tag(text):
            tok = Token(pos, pos + len(word), word, tag, len(word) > 1 and bool(seg.has_word(word)))
            self.tokens.append(tok)
            for i in range(pos + 1, tok.end):
                self._inside[i] = tok
            pos = tok.end
        self._starting = {t.start: t for t in self.tokens}

    def cuts_word(self, start: int, end: int) -> bool:
        """Whether the span [start, end) starts or ends inside a dictionary word."""
        head = self._inside.get(start)
        if head is not None and head.known:
            return True
        tail = self._inside.get(end)
        if tail is None or not tail.known:
            return False
        # 寒潭|边 keeps 寒潭 whole, but 半路|上 is the everyday word 半路 + "on".
        before = self.text[tail.start:end]
        return not (tail.end - end == 1 and tail.word[-1] in LOCATIVES
                    and not (tail.start == start and _segmenter().has_word(before)))

    def common_word(self, start: int, end: int) -> bool:
        """Whether the span is exactly one everyday dictionary word (not tagged a proper noun)."""
        tok = self._starting.get(start)
        return tok is not None and tok.end == end and tok.known and tok.tag not in PROPER_TAGS

    def tag_at(self, start: int, end: int) -> str | None:
        """The tag of the token spanning exactly [start, end), if there is one."""
        tok = self._starting.get(start)
        return tok.tag if tok is not None and tok.end == end else None

    def in_dictionary(self, start: int, end: int) -> bool:
        """Whether the span is a dictionary word, however the text was segmented."""
        return bool(_segmenter().has_word(self.text[start:end]))

    def guessed_name_beyond(self, start: int, end: int) -> bool:
        """Whether a name the segmenter's model guessed starts at `start` and goes on past `end`
        (闻伯年 where the span is 闻伯)."""
        tok = self._starting.get(start)
        return tok is not None and not tok.known and tok.tag in ("nr", "nrfg", "nrt") and tok.end > end

    def starts_with_word(self, tok: Token) -> bool:
        """Whether a guessed token begins with an everyday dictionary word of two characters
        or more (看向|宸), which a name does not."""
        seg = _segmenter()
        return any(seg.has_word(tok.word[:k]) and not _is_name_word(tok.word[:k])
                   for k in range(2, len(tok.word)))

    def clean(self, start: int, end: int) -> bool:
        """A span that could be a name: it cuts no word and is not one everyday word."""
        return not self.cuts_word(start, end) and not self.common_word(start, end)


@lru_cache(maxsize=4096)
def _is_name_word(word: str) -> bool:
    """Whether the dictionary tags the word alone as a proper noun (a name it knows)."""
    tagged = _segmenter().tag(word)
    return len(tagged) == 1 and tagged[0][1] in PROPER_TAGS


@lru_cache(maxsize=64)
def segment(text: str) -> Segmentation:
    """The segmentation of a text (cached: a batch's text is looked at several times)."""
    return Segmentation(text)
