"""Small, deterministic text heuristics shared by the offline answers (English and Chinese).

Sentence splitting, informative-sentence scoring, proper names (Latin capitalised words;
Chinese names by surname + speech verb or honorific), place phrases, state changes, and
relative dates resolved against a message's date ("yesterday" on 8 May 2023 -> 7 May 2023).
No models, no downloads: regular expressions and word lists. They favour precision over
recall; a real model does all of this far better.
"""
from __future__ import annotations

import re
from collections import Counter
from datetime import date, datetime, timedelta
from typing import Iterable

from ...reltime import resolve_dates  # noqa: F401 - the heuristics' date resolution

CJK = r"\u4e00-\u9fff"
_CJK_CHAR = re.compile(f"[{CJK}]")
_TAG = re.compile(r"<[^>\n]{1,200}>")
_MARKS = re.compile(r"[*_~`#>|]+")
_SPACES = re.compile(r"[ \t\u3000]+")
# A sentence ends at . ! ? (and full-width ones, ellipses) or a newline; closing quotes stay attached.
_SENT_END = re.compile(r"(?<=[.!?。！？；…])[\"'”’」』)\]]*\s*|\n+")
_ABBREV = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|St|Mt|Jr|Sr|Prof|vs|etc|e\.g|i\.e)\.$", re.I)
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
# Capitalised words that are not names even when they recur.
COMMON_CAPS = frozenset("""
I I'm I've I'll I'd The A An And But Or So If When While Then There Here This That These Those
It It's He She We They You Your My Our His Her Their What Who Why How Where Which Yes No Oh Ah
Wow Hey Hi Hello Yeah Okay Ok Well Thanks Thank Please Sorry Sure Maybe Just Also Even Still
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June
July August September October November December Mr Mrs Ms Dr Sir Lady Lord God OMG LOL Haha
Today Tomorrow Yesterday Tonight Morning Evening Night Let Don't Can't Not Do Did Is Are Was
""".split())
PLACE_NOUNS = frozenset("""
Harbor Harbour Port Tower Forest Woods Inn Tavern Castle Keep Fort Fortress City Town Village
Temple Shrine Church Cathedral Abbey Monastery Market Bazaar Square Academy School University
College Library Palace Hall Mountain Mountains Mount Peak Hill Hills Valley River Lake Sea Ocean
Bay Coast Beach Island Isle Desert Swamp Marsh Cave Caves Mine Mines Ruins Bridge Gate Street
Road Avenue Park Garden Gardens Museum Hospital Station Airport Cafe Café Restaurant Bar Club
Kingdom Empire Republic Province Realm Capital District Quarter Manor Estate Farm Camp Outpost
Citadel Dungeon Crypt Tomb Arena Theater Theatre Studio Office Tower Center Centre Mall Hotel
""".split())
PLACE_PREPOSITIONS = r"(?:in|at|from|into|near|towards?|inside|reached|entered|visited|arrived at|went to|moved to|travel(?:l?ed)? to)"
# Words that make the capitalised name after them a person ("Sister Elowen", "Captain Brannoch").
TITLES = frozenset("""
Sister Brother Captain Lord Lady Sir King Queen Prince Princess Master Father Mother Uncle Aunt
Dr Mr Mrs Ms Miss Professor Prof General Commander Sergeant Duke Duchess Count Countess Baron
Elder Chief Doctor Madam Mistress Saint Emperor Empress
""".split())

ZH_STOP = "的了在是我你他她它们这那个和与到去来说也就都又还很把被让给着过吗呢吧啊呀么一不有没人"
ZH_NAME_STOP = "的了在是我你他她它们这那个和与把被让给着过吗呢吧啊呀么不有没就都又还很也地得"
ZH_SURNAMES = ("欧阳 上官 司马 诸葛 慕容 南宫 令狐 东方 独孤 西门 皇甫 长孙 宇文 司徒 夏侯 "
               "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
               "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾"
               "毛郝龚邵万钱严覃武戴莫孔向汤柳楚萧温云凌沐洛阮燕秋厉聂祝纪舒屈项卓蓝颜宁左裴岳骆易俞甘景"
               "包冷花管房申符阎柯")
_ZH_SURNAME_RE = "|".join(sorted((s for s in ZH_SURNAMES.split(" ")[:-1]), key=len, reverse=True)
                          + list(ZH_SURNAMES.split(" ")[-1]))
_ZH_NAME_CHAR = f"(?:(?![{ZH_NAME_STOP}])[{CJK}])"
# A name starts after a non-CJK character or a particle, not inside a word ("一任守阁长老").
_ZH_NAME_START = f"(?:(?<![{CJK}])|(?<=[的和与对向是见找问叫请给跟被把让将说道]))"
_ZH_SPEECH = r"(?:说道|笑道|问道|答道|喊道|叹道|冷笑|微笑|点头|摇头|说|道|笑|问|答|喊|叫|叹|看着|望着|转身|皱眉)"
_ZH_HONORIFIC = (r"(?:先生|小姐|姑娘|公子|大人|师父|师傅|师兄|师姐|师妹|师弟|掌柜|道长|大侠|少侠|将军|殿下|陛下|"
                 r"夫人|老爷|少爷|长老|掌门|前辈|大哥|大姐|老板)")
HONORIFIC_RE = _ZH_HONORIFIC
_ZH_PLACE_SUFFIX = (r"(?:客栈|酒楼|茶馆|学院|王国|帝国|山庄|山谷|医院|公司|大学|中学|车站|机场|酒店|宾馆|"
                    r"城|镇|村|山|寺|庙|观|府|宫|谷|岛|湖|港|林|峰|洞|庄|堂|阁|殿|楼|街|市|省|国|关|塔)")
_ZH_PLACE_PREP = r"(?:来到|回到|前往|离开|进入|走进|抵达|住在|赶到|返回|路过|逃到|逃往|到达|在|到|去|从|往)了?"


def clean_text(text: str) -> str:
    """Markup removed (HTML tags, *action* marks), whitespace collapsed, lines kept."""
    text = _TAG.sub(" ", text or "")
    text = _MARKS.sub("", text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def split_sentences(text: str) -> list[str]:
    """Sentences of a text (English and Chinese punctuation, newlines); abbreviations kept whole."""
    out: list[str] = []
    carry = ""
    for piece in _SENT_END.split(clean_text(text)):
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


def is_cjk(text: str) -> bool:
    """True when CJK characters dominate the text (one CJK ~ four Latin letters)."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk > 0 and cjk * 4 >= len(re.findall(r"[A-Za-z]", text))


def content_terms(sentence: str) -> list[str]:
    """The words that carry meaning: English non-stopwords and numbers; CJK non-stop characters."""
    terms = [w.lower() for w in _WORD.findall(sentence) if w.lower().replace("'", "") not in EN_STOPWORDS
             and (len(w) > 1 or w.isdigit())]
    terms += [c for c in _CJK_CHAR.findall(sentence) if c not in ZH_STOP]
    return terms


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


# -- names ----------------------------------------------------------------------------------
_CAP_RUN = re.compile(r"\b[A-Z][a-z'’]+(?:[ -](?:of |the |de |van |von )?[A-Z][a-z'’]+)*")


def latin_names(sentences: list[str], known: Iterable[str] = ()) -> Counter[str]:
    """Capitalised word runs that look like names, counted; sentence-initial ones only if seen elsewhere."""
    known_set = {k.casefold() for k in known if k}
    inner: Counter[str] = Counter()
    initial: Counter[str] = Counter()
    for s in sentences:
        for m in _CAP_RUN.finditer(s):
            words = m.group(0).replace("’", "'").removesuffix("'s").split()
            stripped = 0
            while words and words[0] in COMMON_CAPS:
                words, stripped = words[1:], stripped + 1
            if not words:
                continue
            name = " ".join(words)
            at_start = not stripped and (m.start() == 0 or s[:m.start()].rstrip()[-1:] in ".!?\"“'")
            (initial if at_start else inner)[name] += 1
    out = Counter(inner)
    for name, n in initial.items():
        if name in inner or name.casefold() in known_set:
            out[name] += n
    return out


_TITLED = re.compile(r"\b(" + "|".join(sorted(TITLES)) + r")\.? ([A-Z][a-z]+)\b")


def titled_names(text: str) -> Counter[str]:
    """Person names after a title, without it: 'Captain Brannoch' counts for 'Brannoch'."""
    return Counter(m.group(2) for m in _TITLED.finditer(text))


def cjk_names(text: str) -> Counter[str]:
    """Chinese person names: surname + 1-2 chars before a speech verb, or a name with an honorific."""
    out: Counter[str] = Counter()
    taken: set[int] = set()
    for m in re.finditer(f"{_ZH_NAME_START}((?:{_ZH_SURNAME_RE}){_ZH_NAME_CHAR}{{0,2}}?){_ZH_HONORIFIC}", text):
        name = m.group(0) if len(m.group(1)) == 1 else m.group(1)
        out[name] += 1
        taken.add(m.start())
    for m in re.finditer(f"{_ZH_NAME_START}((?:{_ZH_SURNAME_RE}){_ZH_NAME_CHAR}{{1,2}}?){_ZH_SPEECH}", text):
        if m.start() not in taken:
            out[m.group(1)] += 1
    # A surname + two characters seen three times or more is a name too ("厉天行").
    trigrams = Counter(re.findall(f"(?=((?:{_ZH_SURNAME_RE}){_ZH_NAME_CHAR}{{2}}))", text))
    for name, n in trigrams.items():
        if n >= 3 and not any(name in o or o in name for o in out):
            out[name] += n
    return out


def places(text: str, people: Iterable[str] = ()) -> list[str]:
    """Place names in order of first mention: '<Cap...> Harbor', 'in/at/to <Cap...>', 'X城', '来到X客栈'."""
    people_set = {p.casefold() for p in people if p} | {t.casefold() for t in titled_names(text)}
    found: list[str] = []

    def add(name: str) -> None:
        name = name.strip(" ,.'\"")
        if not name or name.casefold() in people_set or name in COMMON_CAPS:
            return
        if any(name in f for f in found):
            return
        for i, f in enumerate(found):
            if f in name:  # a longer mention of the same place
                found[i] = name
                return
        found.append(name)

    for m in _CAP_RUN.finditer(text):
        words = m.group(0).split()
        while words and words[0] in COMMON_CAPS:
            words = words[1:]
        if words and words[0] in TITLES:
            continue
        if len(words) > 1 and any(w in PLACE_NOUNS for w in words):
            add(" ".join(words))
    for m in re.finditer(rf"\b{PLACE_PREPOSITIONS} (?:the )?([A-Z][a-z]+(?: [A-Z][a-z]+){{0,2}})", text):
        words = [w for w in m.group(1).split() if w not in COMMON_CAPS]
        if words and words[0] not in TITLES:
            add(" ".join(words))
    for m in re.finditer(f"{_ZH_PLACE_PREP}({_ZH_NAME_CHAR}{{1,3}}?{_ZH_PLACE_SUFFIX})", text):
        add(m.group(1))
    for m in re.finditer(f"({_ZH_NAME_CHAR}{{2,3}}(?:客栈|酒楼|茶馆|学院|山庄|王国|帝国))", text):
        add(m.group(1))
    return found


# -- state changes --------------------------------------------------------------------------
EN_STATES = (r"injured|wounded|hurt|captured|imprisoned|arrested|kidnapped|poisoned|cursed|killed|dead|"
             r"dying|unconscious|missing|pregnant|married|engaged|divorced|sick|ill|healed|rescued|freed|"
             r"released|exiled|promoted|fired|betrayed|blinded|paralyzed|possessed|transformed|trapped|"
             r"adopted|hired|retired|injured|recovered|lost")
_EN_STATE = re.compile(
    rf"\b([A-Z][a-z]+|I)(?:(?:\s+(?:is|was|got|gets|has been|had been|have been|became|becomes|is now|"
    rf"am|fell|just got)|'m)\s+(?:[\w']+\s+){{0,5}}?(?:{EN_STATES})\b|\s+died\b)[^.!?]*")
_ZH_STATE = re.compile(
    f"((?:{_ZH_SURNAME_RE}){_ZH_NAME_CHAR}{{1,2}}?|我)[^，。！？,!?]{{0,6}}?"
    r"(受了?重?伤|受伤|负伤|被捕|被抓|被擒|被俘|死了|身亡|去世|牺牲|中毒|中了毒|昏迷|失踪|痊愈|康复|"
    r"失忆|恢复了?记忆|怀孕|成亲|结婚|被困|逃走|逃脱|醒来|醒了)[^，。！？,!?]{0,12}")


def state_changes(sentence: str, speaker: str | None = None) -> list[tuple[str, str]]:
    """(who, new state) pairs a sentence states, e.g. ('Mira', 'was badly injured in the fight')."""
    out: list[tuple[str, str]] = []
    for m in _EN_STATE.finditer(sentence):
        who = speaker if m.group(1) == "I" else m.group(1)
        state = m.group(0)[len(m.group(1)):].strip()
        state = "is " + state[2:].strip() if state.startswith("'m") else state
        if who and who not in COMMON_CAPS:
            out.append((who, state[:160]))
    for m in _ZH_STATE.finditer(sentence):
        who = speaker if m.group(1) == "我" else m.group(1)
        if who:
            out.append((who, m.group(0)[len(m.group(1)):].strip()[:80]))
    return out


# -- first person and dates -----------------------------------------------------------------
_FIRST_PERSON = [
    (re.compile(r"\bI'm\b|\bI am\b"), "{n} is"), (re.compile(r"\bI've\b|\bI have\b"), "{n} has"),
    (re.compile(r"\bI'll\b"), "{n} will"), (re.compile(r"\bI'd\b"), "{n} would"),
    (re.compile(r"\b[Mm]y\b"), "{n}'s"), (re.compile(r"\bmyself\b"), "{n}"),
    (re.compile(r"\bme\b"), "{n}"), (re.compile(r"\bI\b"), "{n}"),
]
# One pass for the `pronouns` mode: (the first mention, every later one).
_FIRST_PERSON_FORMS = {"i'm": ("{n} is", "they're"), "i am": ("{n} is", "they are"),
                       "i've": ("{n} has", "they've"), "i have": ("{n} has", "they have"),
                       "i'll": ("{n} will", "they'll"), "i'd": ("{n} would", "they'd"),
                       "i was": ("{n} was", "they were"), "my": ("{n}'s", "their"),
                       "myself": ("{n}", "themself"), "me": ("{n}", "them"), "i": ("{n}", "they")}
_FIRST_PERSON_ANY = re.compile(r"\b(?:I['’]m|I am|I['’]ve|I have|I['’]ll|I['’]d|I was|[Mm]y|myself|me|I)\b")


def _pronoun_pass(sentence: str, speaker: str) -> str:
    seen = False

    def repl(m: re.Match[str]) -> str:
        nonlocal seen
        first, later = _FIRST_PERSON_FORMS[m.group(0).replace("’", "'").lower()]
        out = later if seen else first.format(n=speaker)
        seen = True
        at_start = m.start() == 0 or sentence[:m.start()].rstrip()[-1:] in ".!?\"“"
        return out[:1].upper() + out[1:] if at_start else out

    return _FIRST_PERSON_ANY.sub(repl, sentence)


_NESTED_QUOTES = {"‘": "’", "「": "」", "『": "』"}


def third_person(sentence: str, speaker: str | None, cjk: bool = False,
                 quoted: bool = False, *, pronouns: bool = False) -> str:
    """First-person words replaced by the speaker's name, so a sentence stands on its own.

    With pronouns=True (English) only the first mention becomes the name and later ones
    "they"/"their"/"them": "Ann's dog likes them", shorter than repeating the name.
    For Chinese, text inside nested quotes (‘…’, 「…」) is someone else's speech and is left
    alone; `quoted` says whether the sentence starts inside such a quote.
    """
    if not speaker:
        return sentence
    if cjk:
        return _third_person_cjk(sentence, speaker, quoted)[0]
    if pronouns:
        return _pronoun_pass(sentence, speaker)
    for pattern, repl in _FIRST_PERSON:
        sentence = pattern.sub(repl.format(n=speaker), sentence)
    return sentence


def _third_person_cjk(sentence: str, speaker: str, quoted: bool) -> tuple[str, bool]:
    out, closing = [], None
    if quoted:
        closing = "’"
    for i, ch in enumerate(sentence):
        if closing is None and ch in _NESTED_QUOTES:
            closing = _NESTED_QUOTES[ch]
        elif closing is not None and ch in (closing, "’", "」", "』"):
            closing = None
        elif ch == "我" and closing is None and sentence[i + 1:i + 2] != "们":
            out.append(speaker)
            continue
        out.append(ch)
    return "".join(out), closing is not None


def ends_quoted(sentence: str, quoted: bool) -> bool:
    """Whether a Chinese nested quote is still open after this sentence."""
    return _third_person_cjk(sentence, "x", quoted)[1]


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


def clip(text: str, limit: int) -> str:
    """Text cut at a word boundary to at most limit characters (with an ellipsis)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if not is_cjk(cut) and " " in cut[limit // 2:]:
        cut = cut[:cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"
