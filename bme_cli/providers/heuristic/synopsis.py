"""Offline synopsis: who the story is about, what happened, where things stand, in one cell.

The block cuts every cell at 200 characters (spec §5; the spec's synopsis is "at most 200
characters" too), so the synopsis is built to fit: whole sentences only, never a word or a
Chinese word cut. In order: the main characters (those the events name most), the story
so far (the weightiest narrated sentences of the top events: names, outcomes, causes; no
dialogue asides, questions or date and speaker labels), then the current states of the
characters last changed and the open threads, as far as they fit.
"""
from __future__ import annotations

import re
from collections import Counter

from ...prompts.synopsis import SynopsisEvent, SynopsisInput, SynopsisReply
from .names import not_a_name
from .nlp import split_sentences
from .salience import overlap, salience

SYNOPSIS_CHARS = 200    # the block's cell limit (there in UTF-16 units: emoji count twice)
TOP_EVENTS = 8
MAX_MAIN = 3
MAX_STATES = 2
MIN_SHARE_OF_BEST = 0.3
MIN_WORDS = {"en": 5, "zh": 10}   # shorter sentences are asides ("Sister.", "好。")
_CLOSED = ("completed", "complete", "resolved", "abandoned", "done", "closed", "完成", "结束", "放弃")
_WORDS = {
    "en": {"main": "{names}. ", "and": " and ", "list": ", ", "now": "Now: ", "threads": "Open: ", "sep": "; ",
           "end": ". "},
    "zh": {"main": "主角：{names}。", "and": "、", "list": "、", "now": "现状：", "threads": "未决：", "sep": "；",
           "end": "。"},
}
# "[8 May 2023] ", "Inspector Calloway: ", "苏晚晴：" at a sentence start: labels, not story.
_LABEL = re.compile(r"^\s*\[[^\]]{1,40}\]\s*|^(?:[A-Z][\w.'’-]*\s?){1,4}:\s+|^[\u4e00-\u9fff]{1,6}：")
_DIALOGUE = {"en": re.compile(r"\b(?:you|your|I|me|my|we|us|let's)\b", re.I), "zh": re.compile(r"[你我咱]")}
_AUX = re.compile(r"^(?:is|was|are|were|has|had|have|got|became|died)\b")
# A sentence that leans on the one before it reads as a fragment on its own: "Because he asked
# for one", "She hasn't come home", "所以……", "不过今年……".
_LEANS = {"en": re.compile(r"^(?:because|but|and|or|so|which|although|though|since|unless|yet|nor|also|"
                           r"that's|it's|he|she|it|they|him|her|his|its|their|them)\b", re.I),
          "zh": re.compile(r"^(?:所以|但是|但|可是|不过|还有|而且|因为|并且|而|她|他|它)")}
# The words before a quote ("苏晚晴低声说", "Mira turned and said") are no story on their own.
_SAYS = {"en": re.compile(r"\b(?:said|says|say|asked|asks|replied|replies|answered|whispered|shouted|"
                          r"muttered|told|tells|added|wrote|writes|announced|explained)$", re.I),
         "zh": re.compile(r"(?:说|说道|道|问|问道|答|答道|回答|喊|喊道|叫道|低语|嘀咕|笑道|吼道|写道|表示|宣布)$")}
_ENDS = re.compile(r"[.!?。！？…”」』\"')）]$")
_PAIRS = ("“”", "「」", "『』", "()", "（）")
_PARENS = re.compile(r"[(（][^)）]*[)）]")
_TIME_WORD = re.compile(r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|"
                        r"last|next|this|yesterday|today|tonight|tomorrow|morning|evening|night|"
                        r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
                        r"sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|"
                        r"(?:mon|tues|wednes|thurs|fri|satur|sun)day)$", re.I)


def _score(e: SynopsisEvent, rank: int, total: int) -> float:
    # Compressed events stand for several; the latest events matter for "where we are".
    return e.importance + 1.5 * e.level + 2.0 * (rank + 1) / max(1, total)


def top_events(events: list[SynopsisEvent], k: int = TOP_EVENTS) -> list[SynopsisEvent]:
    """The k best-scoring events, back in story order."""
    ordered = sorted(events, key=lambda e: e.seq)
    ranked = sorted(range(len(ordered)), key=lambda i: (-_score(ordered[i], i, len(ordered)), -i))
    return [ordered[i] for i in sorted(ranked[:k])]


def _main_characters(inp: SynopsisInput) -> list[str]:
    counts = Counter({c.name: sum(c.name in e.summary for e in inp.events) for c in inp.characters})
    return [n for n, c in counts.most_common(MAX_MAIN) if c >= 2]


def _story(inp: SynopsisInput, lang: str, budget: int) -> list[str]:
    """The weightiest narrated sentences of the top events that fit `budget`, in story order."""
    names = [c.name for c in inp.characters]
    pool: list[tuple[int, str, float]] = []
    for e in top_events(inp.events):
        for x in split_sentences(e.summary):
            parts = re.split(r"(?<=\w)[:;：；]\s*", x)
            for s in parts:
                s = _LABEL.sub("", _LABEL.sub("", s)).strip(" ‘’'「」『』")
                if len(parts) > 1:   # a part cut at a colon is a sentence of its own, or nothing
                    if _SAYS[lang].search(s):
                        continue
                    if s and not _ENDS.search(s):
                        s += _WORDS[lang]["end"].strip()
                _add_candidate(pool, s, e, names, lang)
    return _choose(pool, lang, budget)


def _add_candidate(pool: list[tuple[int, str, float]], s: str, e: SynopsisEvent, names: list[str],
                   lang: str) -> None:
    size = len(s) if lang == "zh" else len(s.split())
    # A story sentence names someone; one that does not is an aside ("Never been inside alone").
    if (size >= MIN_WORDS[lang] and not s.endswith(("?", "？")) and not _DIALOGUE[lang].search(s)
            and _stands_alone(s, lang) and _names_someone(s, names, lang)):
        pool.append((len(pool), s, salience(s) * (e.importance + 1.5 * e.level)))


def _choose(pool: list[tuple[int, str, float]], lang: str, budget: int) -> list[str]:
    """The densest sentences of the pool that fit `budget`, none repeating another, in story order."""
    chosen: list[tuple[int, str]] = []
    used = 0
    best = max((w for _, _, w in pool), default=0.0)
    # Filler goes; then content per character: in 200 characters two dense sentences tell more than one long one.
    for i, s, _ in sorted((p for p in pool if p[2] >= MIN_SHARE_OF_BEST * best),
                          key=lambda p: (-p[2] / len(p[1]) ** 0.5, p[0])):
        if used + len(s) + 1 <= budget and not any(overlap(s, c) >= 0.5 for _, c in chosen):
            chosen.append((i, s))
            used += len(s) + (0 if lang == "zh" else 1)
    return [s for _, s in sorted(chosen)]


def _stands_alone(sentence: str, lang: str) -> bool:
    """Not a fragment: it does not lean on the sentence before, and its quotes and brackets pair up."""
    if _LEANS[lang].match(sentence) or sentence.count('"') % 2:
        return False
    return all(sentence.count(a) == sentence.count(b) for a, b in _PAIRS)


def _names_someone(sentence: str, names: list[str], lang: str) -> bool:
    if any(n in sentence for n in names):
        return True
    # "(30 Oct 2025)" is a resolved date and "Four days ago" a time: neither names anyone.
    words = re.findall(r"\b[A-Z][a-z'’]+", _PARENS.sub("", sentence))
    return lang == "en" and any(not not_a_name(w) and not _TIME_WORD.match(w) for w in words)


def _state(name: str, state: str, lang: str) -> str:
    if lang == "zh":
        return f"{name}{state}"   # 苏晚晴中了毒, 米拉受伤
    return f"{name} {state}" if _AUX.match(state) else f"{name} - {state}"


def answer(inp: SynopsisInput) -> SynopsisReply:
    """A synopsis of at most SYNOPSIS_CHARS characters from the input alone (deterministic)."""
    lang = "zh" if inp.language == "zh" else "en"
    w = _WORDS[lang]
    main = _main_characters(inp)
    head = w["main"].format(names=(w["and"] if len(main) == 2 else w["list"]).join(main)) if main else ""
    states = [_state(c.name, c.state, lang) for c in inp.characters[-MAX_STATES:] if c.state]
    threads = [t.title for t in inp.threads if not any(x in t.status.lower() for x in _CLOSED)][-1:]
    tail = []
    for label, items in ((w["now"], states), (w["threads"], threads)):
        while items:   # drop the oldest entries until the part fits what is left
            part = label + w["sep"].join(items) + w["end"].strip()
            if len(head) + len(" ".join(tail)) + len(part) + 1 <= SYNOPSIS_CHARS // 2:
                tail.append(part)
                break
            items = items[1:]
    room = SYNOPSIS_CHARS - len(head) - sum(len(t) + 1 for t in tail) - 1
    story = _story(inp, lang, room)
    joiner = "" if lang == "zh" else " "

    def render() -> str:
        return joiner.join(p for p in [head.strip(), joiner.join(story), *tail] if p)

    while len(render()) > SYNOPSIS_CHARS and (story or tail):
        (story or tail).pop()    # whole sentences go, never part of one
    return SynopsisReply(summary=render() if len(render()) <= SYNOPSIS_CHARS else "")
