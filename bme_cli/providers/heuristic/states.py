"""State changes ("Mira was poisoned", "苏晚晴中了毒") attributed to the right person.

The subject of a state must be the subject of its clause: in 她一路帮我，还为我中了毒 the
one poisoned is 她, not 我 (the object of 为). "I"/我 is the speaker outside quotes and the
quote's owner inside (person.py), never a guess. He/she/他/她 are resolved by `Referents`:
the latest person mentioned before, in this message or the ones before it, whose pronouns
in the text are of that gender; a name spoken to ("Sister Elowen? She was shot ...") is
not who "she" is. When no one fits, the state is not recorded: better no state than
someone else's.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .names import COMMON_CAPS, EN_STATES, TITLES, not_a_name
from .person import quote_spans

_EN_VERB = (r"(?:is|was|got|gets|has been|had been|have been|became|becomes|is now|am|fell|just got|'s|’s|"
            r"is still|was still|are|were|are now|are still|were still)")
_EN_STATE = re.compile(
    rf"\b([A-Z][a-z]+(?: [A-Z][a-z]+)?|I|[Hh]e|[Ss]he|[Yy]ou)(?:(?:\s+{_EN_VERB}|['’]m|['’]re)\s+(?:[\w']+\s+){{0,4}}?"
    rf"(?:{EN_STATES})\b|\s+died\b)[^.!?;]*")
# The second person's verb in the form its named subject takes: "you are hurt" -> "Rowan is hurt".
_YOU_VERB = re.compile(r"^(?:are|['’]re)\b|^were\b|^have been\b")
_YOU_AS = {"are": "is", "'re": "is", "’re": "is", "were": "was", "have been": "has been"}
ZH_STATES = (r"受了?重?伤|受伤|负伤|被捕|被抓|被擒|被俘|死了|身亡|去世|牺牲|中毒|中了毒|中了[^，。！？]{1,6}(?:针|毒|箭|掌)|"
             r"昏迷|失踪|痊愈|康复|解了毒|失忆|恢复了?记忆|怀孕|成亲|结婚|被困|逃走|逃脱|逃了出来|逃出|醒来|醒了|"
             r"断了经脉|经脉已断|经脉受了反噬")
_CLAUSE_START = r"(?:^|(?<=[，。！？；：、,.!?;:…\s*“”‘’「」『』（）()\]]))"
# A state said after these is believed, feared or supposed, not stated (what someone says stays).
_REPORTED_EN = re.compile(r"\b(?:thought|think|thinks|believed|believe|believes|feared|fear|fears|assumed|assume|"
                          r"suppose|supposed|imagined|dreamed|dreamt|if|as if|as though|unless|whether|in case|"
                          r"pretend\w*|rumou?red|maybe|perhaps|might)\b[^.!?;]*$", re.I)
_REPORTED_ZH = re.compile(r"(?:以为|觉得|怕|担心|如果|要是|假如|万一|若是|梦见|假装)[^，。！？]*$")
_FEMALE = re.compile(r"\b(?:she|her|hers|herself)\b|她", re.I)
_MALE = re.compile(r"\b(?:he|him|his|himself)\b|他", re.I)


@dataclass
class Referents:
    """Who he/she can mean: people in order of mention, and the gender their pronouns show."""

    people: list[str]
    votes: dict[str, Counter[str]] = field(default_factory=dict)
    mentions: list[str] = field(default_factory=list)   # names in reading order, vocatives left out
    _named_in_message: bool = False

    def start_message(self) -> None:
        """A new message begins (its narration may mean its speaker by "she" until someone is named)."""
        self._named_in_message = False

    def read(self, sentence: str, speaker: str | None, narrator: bool) -> None:
        """Note a sentence: its mentions, and the gender its pronouns give the name before them."""
        hits = sorted((m.start(), p) for p in self.people for m in re.finditer(re.escape(p), sentence))
        vocative = bool(hits) and re.fullmatch(rf"\W*{re.escape(hits[0][1])}\W*", sentence) is not None
        # A pronoun votes for the one person named before it in its sentence, or, in a character's
        # own narration before anyone is named, for that character ("*She turns her mug.*").
        for pattern, gender in ((_FEMALE, "f"), (_MALE, "m")):
            for m in pattern.finditer(sentence):
                before = {p for i, p in hits if i < m.start()}
                who = next(iter(before)) if len(before) == 1 else None
                if not before and narrator and not self._named_in_message:
                    who = speaker
                if who:
                    self.votes.setdefault(who, Counter())[gender] += 1
        self._named_in_message = self._named_in_message or bool(hits)
        if narrator and speaker and not self.mentions:
            self.mentions.append(speaker)
        if not vocative:
            self.mentions += [p for _, p in hits]

    def gender(self, name: str) -> str | None:
        v = self.votes.get(name, Counter())
        for g, other in (("f", "m"), ("m", "f")):
            if v[g] and v[g] >= 2 * v[other]:
                return g
        return None

    def resolve(self, pronoun: str, speaker: str | None = None) -> str | None:
        """The latest-mentioned person of the pronoun's gender (not the one speaking)."""
        g = "f" if _FEMALE.fullmatch(pronoun) else "m"
        for name in reversed(self.mentions):
            if name != speaker and self.gender(name) == g:
                return name
        return None


def _owner_at(spans: list[tuple[int, int]], owners: dict[int, str], pos: int) -> tuple[bool, str | None]:
    for a, b in spans:
        if a <= pos < b:
            return True, owners.get(a)
    return False, None


def state_changes(sentence: str, speaker: str | None = None, people: list[str] = (),
                  refs: Referents | None = None, owners: dict[int, str] | None = None,
                  addressee: str | None = None) -> list[tuple[str, str]]:
    """(who, new state) pairs a sentence states, e.g. ('Mira', 'was badly injured in the fight');
    "you"/你 outside quotes is the `addressee` (no one when None)."""
    out: list[tuple[str, str]] = []
    spans = quote_spans(sentence)

    def who_is(word: str, pos: int) -> str | None:
        inside, owner = _owner_at(spans, owners or {}, pos)
        if word in ("I", "我"):
            return owner if inside else speaker
        if word in ("you", "You", "你"):
            return None if inside else addressee
        if word.lower() in ("he", "she") or word in ("他", "她"):
            return refs.resolve(word, owner if inside else speaker) if refs else None
        word = " ".join(w for w in word.split() if w not in TITLES and w not in COMMON_CAPS)   # "So Mira": Mira
        return None if not word or word in COMMON_CAPS or not_a_name(word) else word

    for m in _EN_STATE.finditer(sentence):
        if _REPORTED_EN.search(sentence[:m.start()] + m.group(1).split()[0] + " "):
            continue   # "I thought she was dead", "if he is hurt": a belief, a fear or a case, no fact
        who = who_is(m.group(1), m.start())
        state = m.group(0)[len(m.group(1)):].strip()
        state = "is " + state[2:].strip() if state.startswith(("'m", "’m")) else state
        state = "is " + state[2:].strip() if state.startswith(("'s ", "’s ")) else state
        state = re.split(r"[,;]\s", state)[0]
        state = _YOU_VERB.sub(lambda v: _YOU_AS[v.group(0)], state) if m.group(1).lower() == "you" else state
        if who:
            out.append((who, state[:160]))
    names = "|".join(re.escape(p) for p in sorted({p for p in people if p}, key=len, reverse=True))
    subject = f"({names + '|' if names else ''}我|你|她|他)"
    for m in re.finditer(f"{_CLAUSE_START}{subject}([^，。！？,!?你我他她为替给帮对向]{{0,6}}?)({ZH_STATES})[^，。！？,!?]{{0,12}}",
                         sentence):
        if _REPORTED_ZH.search(sentence, max(0, m.start(1) - 8), m.start(1)):
            continue   # 我以为她死了, 要是他受了伤: a belief or a case
        who = who_is(m.group(1), m.start(1))
        if who:
            out.append((who, m.group(0)[len(m.group(1)):].strip()[:80]))
    return out
