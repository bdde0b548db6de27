"""Dense event summaries: the facts of a batch's messages, filler dropped, within one table cell.

The block cuts every cell at 200 characters (spec §5), so a summary written longer loses its
tail, and an extraction batch (a user turn and a reply) often runs to 300 characters or more.
What a summary can drop without losing a fact:
* chat filler: greetings, thanks, acknowledgements ("Wow, that's cool!"), sign-offs;
* leading interjections and the addressee's name ("Yeah, Mel, ..."), hedges ("really", "totally");
* the restated message date of "last week (the week before 8 May 2023)" when the summary is
  dated 8 May 2023 (`extract` resolves relative dates with that in mind);
* questions, first: in dialogue the answer carries the fact.
What it keeps: the set of sentences with the most content that fits (`choose`: an exact
knapsack over characters, content weighed by `value`: names, numbers and objects high,
everyday words low, filler nothing), every message represented when it says anything, image
captions shortened to "[photo: ...]", the speaker's name once per turn when the text does not
already say who is talking; then the best sentence left out, cut at a word boundary, in the
room that remains. English word lists only: Chinese sentences keep their informativeness
score from nlp.py as their value (below a floor they count as filler).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...sentences import clip
from .nlp import EN_STOPWORDS, content_terms

# Interjections stripped at a sentence start whatever follows them.
_LEAD_ALWAYS = (r"long time no (?:see|chat|talk)|how(?:'s| is) it going|what's up|how are you|"
                r"wow+|whoa+|woah+|oh+|ah+|aw+|aww+|ooh+|hey+|hi|hello|haha+|hah|lol|omg|yay+|um+|uh+|hmm+|"
                r"yeah+|yep|yup|nah|btw|by the way|gosh|geez")
# Words stripped at a sentence start only when punctuation follows ("Well, ..." but not "Well done").
_LEAD_PUNCT = (r"yes|no|well|so|okay|ok|right|sure|totally|absolutely|exactly|thanks|thank you|"
               r"thanks so much|thank you so much|cool|great|nice|awesome|amazing|true|anyway|honestly|"
               r"actually|definitely|agreed|indeed|congrats|congratulations|aw man|man|dude|sweet|perfect|"
               r"good|love it|i see|got it|same|me too")
_LEAD = re.compile(rf"^(?:(?:{_LEAD_ALWAYS})\b[\s,!.…~-]*|(?:{_LEAD_PUNCT})\s*[,!.…]+\s*)+", re.I)
_HEDGES = re.compile(r"\b(?:really|totally|actually|definitely|honestly|literally|basically|super|kinda|sorta)\s+"
                     r"|\b(?:so|very) (?=[a-z]+(?:[.!?,;]|$| and\b))")
_TAG_QUESTION = re.compile(r",\s*(?:right|huh|yeah|no|eh|isn't it|aren't they|don't you think|you know)\s*\?$", re.I)
_CAPTION = re.compile(r"\[(?:image|img|picture|photo)\s*:\s*(?:(?:a|an|the)\s+)?"
                      r"(?:(?:photo|photograph|photography|picture|image|pic|snapshot|screenshot)\s+of\s+)?", re.I)
# Words that say nothing on their own in chat: a sentence made only of them (and names) is filler.
FILLER_WORDS = frozenset("""
good great cool awesome amazing wow love loved lovely nice glad thanks thank agree agreed sounds sound
see seeing chat chatting talk talking soon later care bye hope hoping fun sweet wonderful fantastic
incredible beautiful true right absolutely know think mean guess bet happy proud stuff thing things
day congrats congratulations sorry hear heard catch cheers tell telling hug hugs yes yeah
exciting excited interesting impressive inspiring powerful special totally wish luck best
keep going doing feel feels feeling feelings time lot bit kind means appreciate appreciated
""".split())
# Everyday words: they carry a little, but a sentence of them is weaker than one that names things.
COMMON_WORDS = frozenset("""
think thought make made making take took taken taking go went gone going come came coming get got
getting give gave given know knew want wanted wants need needed needs try tried trying use used find
found look looks looking looked seem seems seemed felt keep kept put say said says tell told ask asked
work working worked start started help helped helps show showed mean meant change changed happen
happened happens learn learned believe remember remind reminds reminded hear let lets stay
people person way life thing world year years week weeks month months hand part place point group
moment moments journey experience experiences idea ideas others everyone someone something everything
anything nothing one ones side end kind sort bit lots lot type ways reason level
new old big small little long important different same able whole real hard easy better bad
always never often sometimes ever back well much many every enough together away already though since
whenever maybe probably especially recently lately soon yet ago next last first second
""".split())
COMMON_WEIGHT = 0.5
NAME_WEIGHT = 2.0      # a capitalised word that is not a speaker, a quoted title, a number
FILLER_WEIGHT = 0.25
QUESTION_FACTOR = 0.35
MIN_QUESTION_WORDS = 3  # "What jobs are you thinking of?" says nothing its answer does not
MESSAGE_BONUS = 1.0    # keeping a message represented is worth about one more content word
MIN_CLIP = 40          # a cut sentence shorter than this is not worth its "…"


@dataclass
class Piece:
    """One sentence of a message, compacted, with its content value."""

    message: int          # index of its message in the batch
    index: int            # position in the batch (reading order)
    speaker: str | None   # named before its text; None for a narrator or system speaker
    text: str
    value: float          # content per the filler-aware weights (0 = filler)


def compact(sentence: str, addressees: list[str]) -> str:
    """A sentence without leading interjections, vocatives of `addressees`, hedges, tag questions
    ("..., right?" states a fact); captions shortened."""
    s = _TAG_QUESTION.sub(".", _CAPTION.sub("[photo: ", sentence.strip()))
    names = "|".join(re.escape(a) for a in addressees if a)
    for _ in range(3):  # "Wow, Mel! Thanks, ..." peels in a few rounds
        before = s
        s = _LEAD.sub("", s)
        if names:
            s = re.sub(rf"^(?:{names})\s*[,!.]+\s*", "", s)
        if s == before:
            break
    if names:
        s = re.sub(rf",\s*(?:{names})(?=\s*[.!?]*$)", "", s)   # trailing vocative: "..., Caroline!"
    s = _HEDGES.sub("", s)
    s = s.strip(" ,;:-–")
    return s[:1].upper() + s[1:] if s and not s.startswith("[") else s


def value(sentence: str, names: list[str]) -> float:
    """Content of a sentence: a word weighs 1, an everyday word 0.5, a filler word 0.25, a name
    (capitalised mid-sentence or quoted) or a number 2; 0 for filler (nothing beyond the filler
    list) and for questions with fewer than 3 content words.

    Names in `names` (the speakers) count nothing: every summary names them anyway.
    """
    own = {w.casefold() for n in names for w in n.split()}
    marked = _marked_words(sentence)
    real, score = 0, 0.0
    for term in set(content_terms(sentence)):
        bare = term.removesuffix("'s").removesuffix("’s")
        if bare in own or term in EN_STOPWORDS:
            continue
        word = _base(term)
        filler = word in FILLER_WORDS
        real += not filler
        if bare in marked or term.isdigit():
            score += NAME_WEIGHT
        else:
            score += FILLER_WEIGHT if filler else COMMON_WEIGHT if word in COMMON_WORDS else 1.0
    if sentence.rstrip().endswith(("?", "？")):
        return score * QUESTION_FACTOR if real >= MIN_QUESTION_WORDS else 0.0
    return score if real else 0.0


def _base(term: str) -> str:
    """A third-person verb's base form when the word lists know it ("finds" -> "find", "tries" -> "try"):
    first person rewritten as "Ann finds" must weigh what "I find" weighed."""
    if term in FILLER_WORDS or term in COMMON_WORDS or not term.endswith("s"):
        return term
    for base in (term[:-3] + "y" if term.endswith("ies") else "", term[:-2], term[:-1]):
        if base in FILLER_WORDS or base in COMMON_WORDS:
            return base
    return term


_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z'’]+)")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")


def _marked_words(sentence: str) -> set[str]:
    """Lower-cased words written as names: capitalised but not at a sentence start, or inside quotes."""
    out = {m.group(1).lower() for m in _CAPITALISED.finditer(sentence.strip())}
    for m in _QUOTED.finditer(sentence):
        out.update(w.lower() for w in re.findall(r"[A-Za-z]+", m.group(1)))
    return {w.removesuffix("'s").removesuffix("’s") for w in out}


def short_forms(names: list[str]) -> list[str]:
    """Each name, and for a first name of 5+ Latin letters its 3- and 4-letter forms, which chats use
    as nicknames when addressing someone ("Mel" for Melanie)."""
    out: list[str] = []
    for n in names:
        out.append(n)
        first = n.split()[0] if n.split() else n
        if len(first) > 4 and first.isascii():
            out.extend(first[:k] for k in (3, 4))   # "Mel", "Caro"
    return out


def assemble(pieces: list[Piece], budget: int, zh: bool) -> str:
    """The pieces worth keeping, in reading order, within `budget` characters.

    The most content that fits (`choose`), then the best piece left out, cut at a word
    boundary, in the room that remains.
    """
    useful = [p for p in pieces if p.value > 0]
    if not useful:
        best = max(pieces, key=lambda p: (p.value, -p.index), default=None)
        return clip(render([best], zh), budget) if best else ""
    chosen = choose(useful, budget, zh)
    for p in sorted((p for p in useful if p not in chosen), key=lambda p: (-p.value, p.index)):
        if budget - len(render(chosen, zh)) < MIN_CLIP:
            break
        cut = _cut_to_fit(p, chosen, budget, zh)
        if cut is not None:
            chosen.append(cut)
            break
    text = render(chosen, zh)
    return text if len(text) <= budget else clip(text, budget)


def _cut_to_fit(p: Piece, chosen: list[Piece], budget: int, zh: bool) -> Piece | None:
    """`p` cut at a word boundary so that the rendering with `chosen` fits, if MIN_CLIP chars can stay."""
    room = budget - len(render(chosen, zh))
    for keep in range(min(len(p.text), room), MIN_CLIP - 1, -8):
        cut = Piece(p.message, p.index, p.speaker, clip(p.text, keep), p.value)
        if len(render([*chosen, cut], zh)) <= budget:
            return cut
    return None


def choose(pieces: list[Piece], budget: int, zh: bool) -> list[Piece]:
    """The set of pieces with the most value whose rendering fits `budget` (exact, by dynamic
    programming over characters): each piece's value, plus MESSAGE_BONUS for each message that
    keeps at least one piece, so a reply is not dropped for a few more words of the other turn.
    """
    sep = 0 if zh else 1
    ordered = sorted(pieces, key=lambda p: p.index)
    # state (chars used, index of the last chosen piece or -1) -> (value, chosen indexes)
    states: dict[tuple[int, int], tuple[float, tuple[int, ...]]] = {(0, -1): (0.0, ())}
    for i, p in enumerate(ordered):
        for (used, last), (val, picks) in list(states.items()):
            prev = ordered[last] if last >= 0 else None
            cost = len(p.text) + (sep if prev else 0)
            if p.speaker and p.speaker not in p.text and (prev is None or prev.speaker != p.speaker):
                cost += len(p.speaker) + (1 if zh else 2)
            gain = p.value + (MESSAGE_BONUS if prev is None or prev.message != p.message else 0.0)
            key = (used + cost, i)
            if used + cost <= budget and (key not in states or states[key][0] < val + gain):
                states[key] = (val + gain, picks + (i,))
    _, picks = max(states.values(), key=lambda s: (s[0], -len(s[1])))
    return [ordered[i] for i in picks]


def render(pieces: list[Piece], zh: bool) -> str:
    """Pieces in reading order; the speaker named when the speaker changes, unless the text names them."""
    parts: list[str] = []
    last = None
    for p in sorted(pieces, key=lambda p: p.index):
        if p.speaker != last and p.speaker and p.speaker not in p.text:
            parts.append(f"{p.speaker}{'：' if zh else ': '}{p.text}")
        else:
            parts.append(p.text)
        last = p.speaker
    return ("" if zh else " ").join(parts)
