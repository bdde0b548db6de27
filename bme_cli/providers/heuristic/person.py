"""First person turned into the speaker's name, so a memory stands on its own.

English keeps agreement: "I shake her hand" -> "Rowan shakes her hand", "I am" -> "Rowan is",
"I don't" -> "Rowan doesn't"; modal verbs and the past tense stay ("Rowan can go", "Rowan
went"); a verb whose past is its present ("I set") follows the message's tense. With
pronouns=True only the first mention becomes the name and later ones "they" (which needs
no agreement). Chinese replaces 我 only where it stands alone as the pronoun: 我们, 你我,
自我 stay, and before kin 我娘 becomes 苏晚晴的娘, not 苏晚晴娘.

Second person becomes the one spoken to (`addressee`, when the chat says who: in a
role-play the narration's "you" is the user), with the same agreement: "She sits beside
you" -> "She sits beside Rowan", "you are" -> "Rowan is", "Are you hurt?" -> "Is Rowan
hurt?", "your" -> "Rowan's"; a plural you ("you two", "you all", 你们) stays. A memory is
read by the model it is injected into, to whom "you" would mean itself.

Quoted speech belongs to someone else: text inside single quotes (' ', ‘ ’, 「 」, 『 』) is
left alone unless its owner is known (`owner`), then its first person is that owner's (its
"you", whom the owner speaks to, is left).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...text import PERSON_TITLES

ADVERBS = ("also still just never always really only even often usually sometimes already finally "
           "quickly slowly carefully then now simply barely nearly almost actually truly certainly "
           "probably definitely rarely seldom mostly gently softly quietly immediately suddenly "
           "instantly silently calmly firmly honestly slightly kinda sorta").split()
MODALS = frozenset("can could will would shall should may might must ought cannot can't won't "
                   "wouldn't couldn't shouldn't mustn't didn't wasn't".split())
IRREGULAR_PAST = frozenset("""was were had did went saw took came got made knew thought told said found gave felt
left kept held brought began ran sat stood heard meant met paid sent spent built bought caught taught
fought sought lost won wrote rode drove broke spoke chose froze woke wore tore swore threw grew drew
flew blew fell forgot forgave hid bit ate became led fed fled slid slept swept wept crept dealt knelt
felt lay laid rose sang sank swam rang drank shook understood withdrew stuck struck hung dug spun
""".split())
SAME_PAST = frozenset("put set cut let hit shut hurt cost quit read spread cast burst split bet beat".split())
# Words after "I" that are no verb to agree with.
_NOT_VERBS = frozenset("and or too alone myself who that".split())
_KIN_ZH = (r"(?:父亲|母亲|师父|师傅|师兄|师姐|师妹|师弟|哥哥|姐姐|弟弟|妹妹|儿子|女儿|夫君|妻子|丈夫|娘子|相公|"
           r"爷爷|奶奶|祖父|祖母|家人|朋友|兄弟|娘|爹|妈|爸|哥|姐|弟|妹)")
# 我等 is "we" only before punctuation or 的/皆/都/便; 我等到天黑 is "I waited until dark".
_WO_KEEP = re.compile(r"我们|我俩|我等(?=[，。、！？的皆都便乃])|我辈|你我|自我|忘我|唯我|无我|本我|真我|我行我素")
_SINGLE_QUOTES = re.compile(r"(?<![A-Za-z0-9])'(?!(?:em|cept|til|tis|twas|cause|bout|round|n)\b)(?=\S)"
                            r"(?:[^'\n]|(?<=[A-Za-z])'(?=[A-Za-z])){2,}?(?<=\S)'(?![A-Za-z])"
                            r"|‘[^’\n]*(?:’|$)|「[^」\n]*(?:」|$)|『[^』\n]*(?:』|$)")


# Chat contractions that are no verb to add an -s to: "I wanna go" -> "Caroline wants to go".
_CONTRACTED = {"wanna": "wants to", "gonna": "is going to", "gotta": "has to"}


def third_singular(verb: str, tense: str = "present") -> str:
    """A verb after "I" in the form a third-person subject needs ("shake" -> "shakes")."""
    low = verb.lower()
    if low in _CONTRACTED:
        return _CONTRACTED[low]
    if (low in MODALS or low in IRREGULAR_PAST or low.endswith("ed") or not low.isalpha()
            or (low in SAME_PAST and tense == "past")):
        return verb
    if low == "have":
        return verb[0] + "as"
    if low in ("do", "go") or re.search(r"(?:s|sh|ch|x|z)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def message_tense(text: str) -> str:
    """'past' when the verbs after "I" are mostly past, else 'present'."""
    past = present = 0
    for m in re.finditer(rf"\bI (?:(?:{'|'.join(ADVERBS)}) )?([a-z]+)\b", text):
        v = m.group(1)
        if v in IRREGULAR_PAST or v.endswith("ed"):
            past += 1
        elif v not in MODALS and v not in SAME_PAST and v not in ADVERBS:
            present += 1
    return "past" if past > present else "present"


_FORMS = {"i'm": ("{n} is", "they're"), "i am": ("{n} is", "they are"), "i've": ("{n} has", "they've"),
          "i have": ("{n} has", "they have"), "i'll": ("{n} will", "they'll"), "i'd": ("{n} would", "they'd"),
          "i was": ("{n} was", "they were"), "i don't": ("{n} doesn't", "they don't"),
          "i do not": ("{n} does not", "they do not"), "i haven't": ("{n} hasn't", "they haven't"),
          "i myself": ("{n}", "they"), "my": ("{n}'s", "their"), "myself": ("{n}", "themself"), "me": ("{n}", "them"), "i": ("{n}", "they")}
_FIRST = re.compile(r"\b(?:I myself|I['’]m|I am|I['’]ve|I haven['’]t|I have|I['’]ll|I['’]d|I was|I don['’]t|I do not|"
                    r"[Mm]y|myself|me|I)\b")
_VERB_AFTER = re.compile(rf"((?:\s+(?:{'|'.join(ADVERBS)}))*)\s+([a-z]+)\b(?!['’])")   # not "didn't"


def _english(text: str, name: str, pronouns: bool, tense: str) -> str:
    seen = False
    out, pos = [], 0
    for m in _FIRST.finditer(text):
        key = m.group(0).replace("’", "'").lower()
        first, later = _FORMS[key]
        word = later if (pronouns and seen) else first.format(n=name)
        end = m.end()
        if key in ("i", "i myself") and not (pronouns and seen) and not re.search(r"\b(?:and|or|nor)\s*$", text[:m.start()]):
            v = _VERB_AFTER.match(text, end)
            if v and v.group(2) not in _NOT_VERBS and not text[v.end():].startswith((" and ", " or ")):
                word += v.group(1) + " " + third_singular(v.group(2), tense)
                end = v.end()
        seen = True
        at_start = m.start() == 0 or text[:m.start()].rstrip()[-1:] in ".!?\"“*"
        out += [text[pos:m.start()], word[:1].upper() + word[1:] if at_start else word]
        pos = end
    return "".join(out) + text[pos:]


_SECOND_FORMS = {"you're": "{n} is", "you are": "{n} is", "you've": "{n} has", "you have": "{n} has",
                 "you haven't": "{n} hasn't", "you'll": "{n} will", "you'd": "{n} would", "you were": "{n} was",
                 "you weren't": "{n} wasn't", "you aren't": "{n} isn't", "you don't": "{n} doesn't",
                 "you do not": "{n} does not", "are you": "is {n}", "were you": "was {n}", "have you": "has {n}",
                 "do you": "does {n}", "don't you": "doesn't {n}", "aren't you": "isn't {n}",
                 "yourself": "{n}", "yours": "{n}'s", "your": "{n}'s", "you": "{n}"}
_SECOND = re.compile(r"\b(?:you['’]re|you are|you['’]ve|you haven['’]t|you have|you['’]ll|you['’]d|you weren['’]t|"
                     r"you were|you aren['’]t|you don['’]t|you do not|are you|were you|have you|do you|"
                     r"don['’]t you|aren['’]t you|yourself|yours|your|you(?!['’]))\b"
                     r"(?!\s+(?:two|three|all|both|guys|people|lot|folks|each)\b)", re.IGNORECASE)
_QUESTION_FORMS = frozenset({"are you", "were you", "have you", "do you", "don't you", "aren't you"})
# "you" is the subject (its verb agrees) at a clause's start: after a mark or a conjunction.
_SUBJECT_BEFORE = re.compile(r"(?:^|[.!?;:,—–\"“*(]|\b(?:and|but|or|then|when|while|as|if|because|so|until|"
                             r"before|after|that|once|unless|where|what|why|how|who|which|than)\b)\s*$", re.IGNORECASE)
_NOT_VERBS_AFTER_YOU = frozenset("and or too alone the a an to of in on at for with all both two guys".split())


def _second_english(text: str, name: str, tense: str) -> str:
    out, pos = [], 0
    for m in _SECOND.finditer(text):
        key = re.sub(r"\s+", " ", m.group(0).replace("’", "'").lower())
        at_clause_start = bool(_SUBJECT_BEFORE.search(text[:m.start()]))
        if key in _QUESTION_FORMS and not at_clause_start:  # "glad to have you": have + you, no question
            verb = m.group(0)[:-3].rstrip()
            out += [text[pos:m.start()], f"{verb} {name}"]
            pos = m.end()
            continue
        word, end = _SECOND_FORMS[key].format(n=name), m.end()
        if key == "you" and at_clause_start:
            v = _VERB_AFTER.match(text, end)
            if v and v.group(2) not in _NOT_VERBS_AFTER_YOU and v.group(2) not in MODALS:
                word += v.group(1) + " " + third_singular(v.group(2), tense)
                end = v.end()
        if m.group(0)[:1].isupper():
            word = word[:1].upper() + word[1:]
        out += [text[pos:m.start()], word]
        pos = end
    return "".join(out) + text[pos:]


# 你 alone is "you": 你们, 你俩, 你我, 你好 and set phrases stay.
_NI_KEEP = re.compile(r"你们|你俩|你我|你好|你死我活|你争我夺|你来我往|你追我赶|你一言我一语|迷你|您们")


def _second_chinese(text: str, name: str) -> str:
    return _replace_pronoun(text, "[你您]", _NI_KEEP, name)


_TITLE = "|".join([*sorted(PERSON_TITLES, key=len, reverse=True), "ma['’]am"])
_TITLE_CALLED = re.compile(rf"^[\W_]*(?:{_TITLE})\b[^,，]{{0,30}}[,，]|[,，]\s*(?:{_TITLE})\b[^,，]{{0,30}}$", re.IGNORECASE)


def spoken_to(sentence: str, names: list[str], default: str | None) -> str | None:
    """Whom a sentence's "you" is: the person it calls by name ("Tobin, you were ..." / "..., Tobin?"
    / "沈青，你..."), no one known when it calls a title ("Doctor, you ...", "..., sir."), else `default`."""
    for name in sorted({n for n in names if n and n in sentence}, key=len, reverse=True):
        n = re.escape(name)
        if re.match(rf"[\W_]*{n}\s*[,，]", sentence) or re.search(rf"[,，]\s*{n}\s*[.!?。！？…]*[\W_]*$", sentence):
            return name
    return None if _TITLE_CALLED.search(sentence) else default


def _chinese(text: str, name: str) -> str:
    return _replace_pronoun(text, "我", _WO_KEEP, name)


def _replace_pronoun(text: str, pronoun: str, keep_words: re.Pattern, name: str) -> str:
    """Each `pronoun` standing alone (not inside one of `keep_words`) as `name`; before kin, name的."""
    out, pos = [], 0
    keep = [(m.start(), m.end()) for m in keep_words.finditer(text)]
    for m in re.finditer(pronoun, text):
        if any(a <= m.start() < b for a, b in keep):
            continue
        kin = re.match(_KIN_ZH, text[m.end():])
        out += [text[pos:m.start()], name + ("的" if kin else "")]
        pos = m.end()
    return "".join(out) + text[pos:]


@dataclass(frozen=True)
class Quote:
    """Quoted speech in a text: its span and, when the narration before it names them, who speaks."""

    start: int
    end: int
    owner: str | None = None


def quote_spans(text: str) -> list[tuple[int, int]]:
    """Spans of single-quoted speech (someone other than the speaker talking)."""
    return [(m.start(), m.end()) for m in _SINGLE_QUOTES.finditer(text)]


_PRONOUN = re.compile(r"\b(?:[Hh]e|[Ss]he|[Tt]hey|I)\b|[他她我]")


def quotes_of(text: str, people: list[str]) -> list[Quote]:
    """A message's quotes, each owned by the person the last narration sentence before it starts
    with ("*Tobin speaks hoarsely.* 'Brannoch sold us.'"); no owner when it starts with a pronoun."""
    out: list[Quote] = []
    names = "|".join(re.escape(p) for p in sorted({p for p in people if p}, key=len, reverse=True))
    prev = 0
    for a, b in quote_spans(text):
        lead = re.split(r"(?<=[.!?。！？…])\s*", text[prev:a].strip(" *\n"))
        last = next((x for x in reversed(lead) if x.strip(" *")), "")
        who = None
        if names and last:
            first = min((m for m in (re.search(names, last), _PRONOUN.search(last)) if m),
                        key=lambda m: m.start(), default=None)
            who = first.group(0) if first and not _PRONOUN.fullmatch(first.group(0)) else None
        out.append(Quote(a, b, who))
        prev = b
    return out


def local_quotes(quotes: list[Quote], offset: int, length: int) -> list[Quote]:
    """The message's quotes that overlap a sentence at `offset`, in the sentence's coordinates."""
    return [Quote(max(q.start - offset, 0), min(q.end - offset, length), q.owner)
            for q in quotes if q.start < offset + length and q.end > offset]


def third_person(text: str, speaker: str | None, cjk: bool = False, *, pronouns: bool = False,
                 tense: str = "present", quotes: list[Quote] | None = None, addressee: str | None = None) -> str:
    """First-person words replaced by the speaker's name outside quotes, by a quote's owner inside
    (quotes whose owner is unknown are left alone); outside quotes, second-person words by the
    `addressee`'s name when given. No speaker (a narrator) leaves first person alone outside
    quotes too. `quotes` default to the text's own."""
    if not speaker and not addressee:
        return text
    if quotes is None:
        quotes = [Quote(a, b) for a, b in quote_spans(text)]

    def rewrite(chunk: str, who: str | None, to: str | None = None) -> str:
        if who:
            chunk = _chinese(chunk, who) if cjk else _english(chunk, who, pronouns, tense)
        if to and to != who:
            chunk = _second_chinese(chunk, to) if cjk else _second_english(chunk, to, tense)
        return chunk

    out, pos = [], 0
    for q in sorted(quotes, key=lambda q: q.start):
        if q.start < pos:
            continue
        out.append(rewrite(text[pos:q.start], speaker, addressee))
        out.append(rewrite(text[q.start:q.end], q.owner) if q.owner else text[q.start:q.end])
        pos = q.end
    out.append(rewrite(text[pos:], speaker, addressee))
    return "".join(out)
