"""Standing rules and plot threads where the text states them, for the offline extractor.

Precision over recall: a junk rule sits in every block (rules are always injected), so only
sentences with an unmistakable form count.
* Rules: "Never ..." / "Always ..." commands; "whoever / anyone who / no one ... must / may /
  can"; "only ... can"; "... is forbidden"; "the rule is ..."; limits ("three times a day",
  "at most"); a plural subject that "won't / can't / never" do something, in a sentence
  without I / you / we (a standing fact, not a plan). Chinese: 只有…才, …者方可, 每人 / 每日
  / 一次…只能, 规矩是 / 铁律, 不可 / 不得 / 严禁 / 禁止, 若…就会 without 你 / 我.
* Threads: a goal someone states ("we must find the Sunken Archive", "I'm looking for the
  Lantern", 要救师父, 下一步去归墟岛) with a named object; still open ("知府千金还没救出来").
  A thread is completed when a later sentence names its object with an outcome ("Tobin is
  free", 找到了…, 救出了…) and no negation or question.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .names import is_foreign

_EN_RULES = [
    re.compile(r"^(?:Never|Always)\s+(?!(?:been|had|was|were|did|seen|ever|mind)\b)[a-z]+(?<!ed)\b"),
    re.compile(r"\b(?:[Ww]hoever|[Aa]nyone who|[Aa]nybody who|[Tt]hose who|[Nn]o one|[Nn]obody)\b[^.!?]*?"
               r"\b(?:must|may|can|cannot|can't|shall)\b"),
    re.compile(r"\b[Oo]nly\b[^.!?,]{1,40}?\b(?:can|may)\b"),
    re.compile(r"\b(?:is|are) (?:forbidden|not allowed|prohibited|banned)\b"),
    re.compile(r"\bmust (?:never|always)\b"),
    re.compile(r"\b[Tt]he (?:\w+ )?(?:rule|law|custom|oath) (?:is|says)\b"),
    re.compile(r"\b(?:once|twice|\w+ times) (?:a|per|each) (?:day|night|week|moon|month|year)\b"),
]
_EN_GENERIC = re.compile(r"\b[a-z]+s (?:won't|can't|cannot|will not|can never|never|must not|may not)\s+[a-z]+")
_PERSONAL = re.compile(r"\b(?:I|me|my|we|us|our|you|your)\b", re.I)
_ZH_RULES = [
    re.compile(r"只有[^。！？]{1,20}?才(?:能|可|可以|会)"),
    re.compile(r"[^，。！？]{1,12}者方可"),
    re.compile(r"(?:每人|每日|每天|一日|一天|每次|一人|一次)[^，。！？]{0,8}?(?:只能|最多|至多|不得|不可|仅能)"),
    re.compile(r"(?:规矩|铁律|规定|戒律|门规|禁忌)(?:是|：|:|说)"),
    re.compile(r"(?:不可|不得|严禁|禁止|切勿|不许|不准)[\u4e00-\u9fff]"),
    re.compile(r"一人一件"),
]
_ZH_IF = re.compile(r"(?:若|如果|倘若)[^。！？]{1,14}[，,][^。！？]{0,14}(?:就会|便会|则会|必会|则)")
_GOAL_VERBS = (r"find|reach|rescue|save|free|stop|recover|retrieve|defeat|catch|bring|get|open|destroy|"
               r"protect|avenge|track down|hunt down|return|finish|deliver")
_EN_GOAL = re.compile(
    rf"(?:\b[Ll]et['’]s|\b(?:[Ww]e|I|[Yy]ou and I)\s+(?:must|need to|have to|has to|will|are going to|am going to|want to|"
    rf"intend to|plan to|swore to|promised to|['’]ll|['’]re going to))\s+(?:\w+ly\s+)?"
    rf"(?P<verb>{_GOAL_VERBS})\s+(?P<obj>[^,.;!?]{{3,60}})"
    r"|\b(?:I['’]m|I am|[Ww]e['’]re|[Ww]e are)\s+(?:looking|searching) for\s+(?:something called\s+)?(?P<obj2>[^,.;!?]{3,60})")
_ZH_GOAL = re.compile(r"(?:要|必须|一定要|务必|打算|准备|决定|下一步|接下来)(?P<verb>去|找到|寻找|救出|救|夺回|取回|拿回|查明|找出|前往)"
                      r"(?P<obj>[\u4e00-\u9fff《》]{2,10})")
_ZH_OPEN = re.compile(r"(?P<obj>[\u4e00-\u9fff]{2,8}?)(?:也|都)?(?:还没|尚未|仍未|还没有)(?P<verb>救出来|救出|找到|查明|拿到|找回)")
_EN_DONE = re.compile(r"\b(?:found|rescued|freed|is free|are free|saved|recovered|got|have|has|reached|returned|"
                      r"home|defeated|is safe|are safe|delivered)\b")
_NEGATION = re.compile(r"\b(?:not|never|no|yet)\b|n['’]t\b|没|未|不")
_ZH_DONE = re.compile(r"找到[^，。！？]{0,4}了|救出了?|拿到了|取回|夺回了|到了|完成|得手|救了|逃了出来|取下")
_KIN = re.compile(r"\b(?:your|my|his|her|our|their) (?:brother|sister|mother|father|son|daughter|friend|master|wife|husband)\b")


@dataclass(frozen=True)
class Thread:
    title: str
    key: str  # the named object, to recognise it later ("Tobin", "归墟岛")


def is_rule(sentence: str, zh: bool) -> bool:
    """Whether a sentence states a standing rule or constraint."""
    s = sentence.strip()
    if s.endswith(("?", "？")) or len(s) < (4 if zh else 8) or is_foreign(s):
        return False
    if zh:
        if any(p.search(s) for p in _ZH_RULES):
            return True
        return bool(_ZH_IF.search(s)) and not re.search("[你我]", s)
    if any(p.search(s) for p in _EN_RULES):
        return True
    return bool(_EN_GENERIC.search(s)) and not _PERSONAL.search(s)


def rule_title(sentence: str, zh: bool) -> str:
    """A short title: the clause that states the rule, cut at a word boundary."""
    clauses = [c.strip(" .!?。！？‘’'\"“”") for c in re.split(r"[，。；：,;:‘’]|(?<=[.!?])\s", sentence.strip())]
    clauses = [re.sub(r"^(?:但|而且|所以|不过|可是|but|and|so)\s*", "", c, flags=re.I) for c in clauses if c]
    clause = next((c for c in clauses if is_rule(c + ("。" if zh else "."), zh)), clauses[0] if clauses else "")
    limit = 16 if zh else 48
    if len(clause) <= limit:
        return clause
    cut = clause[:limit]
    return cut if zh else cut[:cut.rfind(" ")] if " " in cut else cut


def _named(obj: str) -> str | None:
    """The named thing of a goal's object: a capitalised run, a kin phrase, a Chinese object."""
    m = re.search(r"[A-Z][a-z'’]+(?: (?:of |the )?[A-Z][a-z'’]+)*", obj)
    if m:
        return m.group(0)
    k = _KIN.search(obj)
    return k.group(0).split()[-1] if k else None


def threads(sentence: str, zh: bool) -> list[Thread]:
    """Plot threads (goals, open tasks) a sentence states."""
    if sentence.strip().endswith(("?", "？")):
        return []
    out = []
    if zh:
        for m in _ZH_GOAL.finditer(sentence):
            obj = m.group("obj")
            out.append(Thread(m.group("verb") + obj, obj))
        for m in _ZH_OPEN.finditer(sentence):
            out.append(Thread(m.group(0), m.group("obj")))
        return out
    for m in _EN_GOAL.finditer(sentence):
        obj = re.split(r"\s(?:before|after|when|while|until|if|because|so|and|or|but)\s",
                       (m.group("obj") or m.group("obj2") or "").strip())[0]
        key = _named(obj)
        if key:
            verb = m.group("verb") or "find"
            out.append(Thread(f"{verb} {obj}".strip()[:80], key))
    return out


def completes(sentence: str, key: str, zh: bool) -> bool:
    """Whether a sentence says a thread's object was reached, found, freed ... (no negation)."""
    s = sentence.strip()
    if s.endswith(("?", "？")) or key.casefold() not in s.casefold():
        return False
    if zh:
        return bool(_ZH_DONE.search(s)) and not re.search(r"还没|尚未|仍未|没有|未能", s)
    return bool(_EN_DONE.search(s)) and not _NEGATION.search(s)
