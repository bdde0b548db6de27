"""Small, deterministic text heuristics shared by the offline answers (English and Chinese).

Sentence splitting, informative-sentence scoring, relative dates resolved against a
message's date ("yesterday" on 8 May 2023 -> 7 May 2023), and the names of a list-like
field; finding names, places, states and first person lives in names.py, places.py,
states.py and person.py, weighing stored summaries in salience.py, and cutting text to a
length in bme_cli/sentences.py (`clip`, one for every layer).
No models, no downloads: regular expressions and word lists. They favour precision over
recall; a real model does all of this far better.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from functools import lru_cache
from typing import Iterable

from ...reltime import resolve_dates  # noqa: F401 - the heuristics' date resolution
from ...sentences import is_cjk, rejoin_abbreviations  # noqa: F401 - is_cjk: the heuristics import it from here

CJK = r"\u4e00-\u9fff"
_CJK_CHAR = re.compile(f"[{CJK}]")
_TAG = re.compile(r"<[^>\n]{1,200}>")
_MARKS = re.compile(r"[*_~`#>|]+")
_SPACES = re.compile(r"[ \t\u3000]+")
# A sentence ends at . ! ? (and full-width ones, ellipses) or a newline; closing quotes go with the break.
_SENT_END = re.compile(r"(?<=[.!?。！？；…])[\"'”’」』)\]]*\s*|\n+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,:]\d+)*")
_NUMBER = re.compile(r"\d")

EN_STOPWORDS = frozenset("""
a an the and or but if so of to in on at by for with from as into onto about over under than then
is am are was were be been being have has had do does did will would can could should shall may
might must not no nor yes it its it's this that these those there here what which who whom whose
when where why how all any both each few more most other some such only own same too very just
i me my mine myself we us our ours you your yours he him his she her hers they them their theirs
oh ah wow hey hi hello yeah yep ok okay well um uh hmm haha lol omg really totally super also
get got gets like lot lots thing things stuff much many way even still yet now up out off again
im ive ill id youre thats dont didnt cant wont isnt wasnt let lets gonna wanna kinda sure maybe
""".split())
ZH_STOP = "的了在是我你他她它们这那个和与到去来说也就都又还很把被让给着过吗呢吧啊呀么一不有没人"


@lru_cache(maxsize=4096)   # (these four: every batch reads its whole context window again)
def clean_text(text: str) -> str:
    """Markup removed (HTML tags, *action* marks), whitespace collapsed, lines kept."""
    text = _TAG.sub(" ", text or "")
    text = _MARKS.sub("", text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def split_sentences(text: str) -> list[str]:
    """Sentences of a text (English and Chinese punctuation, newlines); abbreviations kept whole.
    Unlike sentences.split_sentences, closing quotes go with the break (summaries drop them)."""
    return list(_sentences(text))


@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    return tuple(rejoin_abbreviations(_SENT_END.split(clean_text(text))))


def content_terms(sentence: str) -> list[str]:
    """The words that carry meaning: English non-stopwords and numbers; CJK non-stop characters."""
    return list(_content_terms(sentence))


@lru_cache(maxsize=8192)
def _content_terms(sentence: str) -> tuple[str, ...]:
    terms = [w.lower() for w in _WORD.findall(sentence) if w.lower().replace("'", "") not in EN_STOPWORDS
             and (len(w) > 1 or w.isdigit())]
    terms += [c for c in _CJK_CHAR.findall(sentence) if c not in ZH_STOP]
    return tuple(terms)


def informativeness(sentence: str, names: Iterable[str] = ()) -> float:
    """How much concrete content a sentence holds per length: names, numbers, content words."""
    terms = content_terms(sentence)
    if not terms:
        return 0.0
    score = float(len(set(terms)))
    score += 2.0 * sum(1 for n in names if n and n in sentence)
    score += 2.0 * len(_NUMBER.findall(sentence)) ** 0.5
    score += 1.5 * len(re.findall(r"(?<!^)(?<![.!?] )\b[A-Z][a-z]{2,}", sentence))
    if sentence.rstrip().endswith(("?", "？")):
        score *= 0.6  # questions carry less fact than answers
    length = max(len(terms), 4)
    return score / length ** 0.35


@lru_cache(maxsize=1024)
def parse_day(text: str | None) -> date | None:
    """'8 May 2023' or '2023年5月8日' back to a date (None otherwise)."""
    if not text:
        return None
    m = re.fullmatch(r"(\d{4})年(\d{1,2})月(\d{1,2})日", text.strip())
    try:
        if m:
            return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return datetime.strptime(text.strip(), "%d %b %Y").date()
    except ValueError:
        return None


_NAME_SPLIT = re.compile(r"[,，、;；/]|\band\b|和|与")


def split_names(text: str) -> list[str]:
    """Names from a list-like field ('A, B and C', 'A、B')."""
    return [p.strip() for p in _NAME_SPLIT.split(text or "") if p and p.strip()]
