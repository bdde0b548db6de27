"""The upkeep guard: a model's summary, synopsis, reflection or evolution text is checked before
it replaces anything. A weak model (SmolLM2-135M, Gemma-3-270M on llama.cpp) answers these
tasks with valid JSON that is junk: only a date ("16 Mar 2025"), a repetition loop, the prompt's
instructions or input table copied back, or invented text about nothing in the input. Stored,
such a text archives real memories under it (compression) or is injected every turn (synopsis).

`review(task, fields, required)` says why a reply is rejected, or None. Checks, in order:

* **repeats itself**: a run of the same 3-40 characters four times over, the same sentence
  three times, or too large a share of repeated word 4-grams (CJK: character-bigram 4-grams),
  in one field or across the reply's fields together (the same line as insight, trigger and
  suggestion);
* **copies the prompt**: word 4-grams of the prompt that lie in no input text (the instructions,
  the table's labels and markers such as `record 2 [messages 4-6] summary`) found in the reply;
* **empty / only a date**: a required field with no word left once dates, times, numbers
  (weekday and month names count as dates) and words only the prompt's instructions and labels
  use are taken out;
* **off the input**: too small a share of the reply's content terms (stemmed words, CJK
  character bigrams, as lexical.py makes them) found in the input texts it summarises (not
  judged when the reply is written in another script than its input, e.g. Chinese memories
  of English events).

The thresholds were chosen on examples (benchmarks/bench_guard.py): every reply of the offline
heuristic over the three sample chats and two LoCoMo conversations must pass, and written bad
replies of each kind must fail; see docs/quality.md for the numbers. A rejected reply is
treated like an invalid one: the step keeps the old nodes and counts it.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Mapping, Sequence

from ..errors import InvalidReplyError
from ..prompts.common import cell_text
from ..prompts.compress import CompressInput
from ..prompts.evolve import EvolveInput
from ..prompts.reflect import ReflectInput
from ..prompts.synopsis import SynopsisInput
from ..task import JsonTask
from ..text import detect_language
from .lexical import search_terms, tokenize

LOOP_NGRAM = 4
LOOP_MIN_TOKENS = 16       # shorter texts are not judged for repeated n-grams
LOOP_SHARE = 0.3           # repeated 4-grams / all 4-grams at or above this: a loop
SENTENCE_REPEATS = 3       # the same sentence (4+ tokens) this often: a loop
COPY_NGRAM = 4
COPY_MIN = 4               # this many distinct prompt-only 4-grams in the reply: a copy
COPY_SHARE = 0.3           # ... or at least 2 of them making up this share of the reply's 4-grams
MIN_TERMS = 3              # replies with fewer content terms are not judged for overlap
# Share of the reply's content terms found in the input, below which it is about something else.
# A summary restates its input (written paraphrases: 0.50-0.80; the heuristic's: 0.96 and up),
# while a long input's broad vocabulary lets unrelated text reach 0.19 (LoCoMo synopsis input);
# a reflection or an evolved context says more of its own (written: 0.21-0.80; unrelated 0-0.09).
MIN_OVERLAP = {"compress": 0.3, "synopsis": 0.3, "reflect": 0.15, "evolve": 0.15}

RUN_MIN, RUN_MAX, RUN_TIMES = 3, 40, 4   # "repeats itself": 3-40 characters four times over in a row
_SENTENCE = re.compile(r"[^.!?。！？；;\n]+")
_DATE_WORDS = frozenset("""
jan january feb february mar march apr april may jun june jul july aug august sep sept september
oct october nov november dec december mon monday tue tues tuesday wed wednesday thu thur thurs thursday
fri friday sat saturday sun sunday am pm day days date today tomorrow yesterday morning evening night
noon week year month st nd rd th utc gmt
""".split())
_CJK_DATE = re.compile(r"[0-9〇一二三四五六七八九十两]+\s*[年月日号時时点分秒周]|星期[一二三四五六日天]|周[一二三四五六日]"
                       r"|[上下]午|凌晨|今天|明天|昨天|早上|晚上|中午")
_NUMBER = re.compile(r"\d+(?:st|nd|rd|th|s)?")


class RejectedReply(InvalidReplyError):
    """The model answered in the right shape, but with text the guard will not store."""


@dataclass(frozen=True)
class Measures:
    """What the checks look at, for one text (kept apart from the verdict so benchmarks can tune)."""

    content_words: int      # words left once dates, times and numbers are taken out
    run: bool               # a short run repeated four times over
    sentence_repeats: int   # how often the most repeated sentence occurs
    loop_share: float       # repeated 4-grams / all 4-grams (0 for short texts)
    copied: int             # distinct prompt-only 4-grams in the text
    copy_share: float       # ... as a share of the text's 4-grams


def has_run(text: str) -> bool:
    """Whether some RUN_MIN..RUN_MAX characters stand RUN_TIMES times over in a row (what the
    regular expression `(.{3,40}?)\\1{3,}` finds, with `.` matching any character).

    That expression tries every length at every position, about a third of a millisecond on a
    summary, and every reply field of every batch is checked. A run's first RUN_MIN
    characters recur at RUN_TIMES evenly spaced places, so only three-character grams seen that
    often are followed, and only at the spacings their places allow."""
    n = len(text)
    if n < RUN_MIN * RUN_TIMES:
        return False
    grams = Counter([text[i:i + RUN_MIN] for i in range(n - RUN_MIN + 1)])
    for gram, count in grams.items():
        if count < RUN_TIMES:
            continue
        places, p = [], text.find(gram)
        while p >= 0:
            places.append(p)
            p = text.find(gram, p + 1)
        at = set(places)
        for p in places:
            for step in range(RUN_MIN, min(RUN_MAX, (n - p) // RUN_TIMES) + 1):
                # written out for RUN_TIMES = 4 (a generator per step would cost more than the regex)
                if p + step in at and p + 2 * step in at and p + 3 * step in at \
                        and text[p:p + 3 * step] == text[p + step:p + 4 * step]:
                    return True
    return False


def _ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The n-grams of tokens, in order: zip of the n shifted views (one tuple slice per position
    cost a prompt's few thousand tokens a millisecond)."""
    return list(zip(*(tokens[k:] for k in range(n))))


def content_words(text: str, scaffold_words: frozenset[str] | set[str] = frozenset()) -> int:
    """Words (CJK: bigrams) left once dates, times, numbers, date words and words only the prompt's
    instructions and labels use ("messages 3 ~ 10") are taken out."""
    text = _CJK_DATE.sub(" ", text)
    return sum(1 for t in tokenize(text) if t not in _DATE_WORDS and t not in scaffold_words
               and not _NUMBER.fullmatch(t))


def _sentence_repeats(text: str) -> int:
    sentences = [" ".join(tokenize(s, stopwords=False)) for s in _SENTENCE.findall(text)]
    counts = Counter(s for s in sentences if len(s.split()) >= 4)
    return max(counts.values(), default=0)


def _loop_share(tokens: Sequence[str]) -> float:
    if len(tokens) < LOOP_MIN_TOKENS:
        return 0.0
    grams = _ngrams(tokens, LOOP_NGRAM)
    return 1.0 - len(set(grams)) / len(grams)


@dataclass(frozen=True)
class Scaffold:
    """What of the prompt is not input: its word 4-grams and words found in no input text."""

    grams: frozenset[tuple[str, ...]]
    words: frozenset[str]


@lru_cache(maxsize=4096)   # upkeep shows the same nodes, and the same instructions, again and again
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(tokenize(text, stopwords=False))


@lru_cache(maxsize=4096)
def _grams(text: str) -> frozenset[tuple[str, ...]]:
    return frozenset(_ngrams(_tokens(text), COPY_NGRAM))


def scaffold_of(task: JsonTask[Any], sources: Iterable[str]) -> Scaffold:
    """The prompt's instructions and labels: its 4-grams and words that lie in none of the input texts."""
    # the tokens of "system\nuser" are those of each part (a line break is no part of a token),
    # so its 4-grams are each part's and those across the break: the instructions' are cached
    system, user = _tokens(task.system), _tokens(task.user)
    edge = system[-(COPY_NGRAM - 1):] + user[:COPY_NGRAM - 1] if system and user else ()
    sources = list(sources)
    grams = set().union(*map(_grams, sources))
    words = set().union(*map(_tokens, sources))
    prompt_grams = _grams(task.system).union(_ngrams(user, COPY_NGRAM), _ngrams(edge, COPY_NGRAM))
    return Scaffold(frozenset(prompt_grams - grams), frozenset(set(system).union(user) - words))


def measure(text: str, scaffold: Scaffold) -> Measures:
    """Every number the checks use for one text."""
    tokens = _tokens(text)
    grams = _grams(text)
    copied = len(grams & scaffold.grams)
    return Measures(content_words(text, scaffold.words), has_run(" ".join(text.split())),
                    _sentence_repeats(text), _loop_share(tokens), copied, copied / len(grams) if grams else 0.0)


@lru_cache(maxsize=4096)   # the same messages and nodes are the sources of every field of a batch
def _terms(text: str) -> frozenset[str]:
    return frozenset(search_terms(text))


def overlap(text: str, sources: Iterable[str]) -> tuple[int, float]:
    """(content terms of text, share of them found in the sources)."""
    return overlap_in(text, source_terms(sources))


def source_terms(sources: Iterable[str]) -> set[str]:
    """Every content term of the sources: what `overlap_in` looks a text's terms up in (built
    once when several texts are held against the same sources)."""
    return set().union(*map(_terms, sources))


def overlap_in(text: str, known: set[str] | frozenset[str]) -> tuple[int, float]:
    """(content terms of text, share of them in `known`, the `source_terms` of some sources)."""
    terms = {t for t in _terms(text) if not _NUMBER.fullmatch(t) and t not in _DATE_WORDS}
    if not terms:
        return 0, 1.0
    return len(terms), len(terms & known) / len(terms)


def verdict(m: Measures, *, required: bool) -> str | None:
    """Why one field's text is rejected, or None."""
    if m.run or m.sentence_repeats >= SENTENCE_REPEATS or m.loop_share >= LOOP_SHARE:
        return "repeats itself"
    if m.copied >= COPY_MIN or (m.copied >= 2 and m.copy_share >= COPY_SHARE):
        return "copies the prompt"
    if required and m.content_words == 0:
        return "no content but dates, numbers or the prompt's labels"
    return None


def task_sources(task: JsonTask[Any]) -> list[str]:
    """The input texts a reply is about: the nodes, events, states and threads the task shows."""
    d = task.data
    if isinstance(d, CompressInput):
        return [v for n in d.nodes for v in n.fields.values()]
    if isinstance(d, SynopsisInput):
        return ([e.summary for e in d.events] + [f"{c.name} {c.state}" for c in d.characters]
                + [f"{t.title} {t.status}" for t in d.threads] + [d.previous])
    if isinstance(d, ReflectInput):
        return ([f"{e.summary} {e.participants} {e.status}" for e in d.events]
                + [f"{c.label} {c.state}" for c in d.characters + d.threads]
                + [f"{c.source} {c.target}" for c in d.contradictions])
    if isinstance(d, EvolveInput):
        return [cell_text(v) for view in (d.new, *d.neighbours) for v in view.fields.values()]
    return []


def review(task: JsonTask[Any], fields: Mapping[str, str], required: Sequence[str] = ()) -> str | None:
    """Why the reply's text fields must not be stored ("summary: repeats itself"), or None."""
    sources = task_sources(task)
    scaffold = scaffold_of(task, sources)
    texts = {k: v for k, v in fields.items() if v and v.strip()}
    for key in required:
        if not (texts.get(key) or "").strip():
            return f"{key}: empty"
    for key, text in texts.items():
        why = verdict(measure(text, scaffold), required=key in required)
        if why:
            return f"{key}: {why}"
    text = " ".join(texts.values())
    if len(texts) > 1 and verdict(measure(text, scaffold), required=False) == "repeats itself":
        return "its fields repeat each other"  # the same sentence as insight, trigger and suggestion
    if detect_language(text) != detect_language(" ".join(sources)):
        return None  # a reply in the other script than its input: word overlap says nothing
    terms, share = overlap(text, sources)
    if terms >= MIN_TERMS and share < MIN_OVERLAP.get(task.kind, 0.0):
        return f"shares too little with its input ({share:.0%} of its words)"
    return None


def rejected(task: JsonTask[Any], why: str) -> RejectedReply:
    """The error for a rejected reply, naming the task and the reason."""
    return RejectedReply(f"the {task.kind} reply was rejected ({why}); nothing was replaced",
                         "a stronger model answers upkeep tasks better")
