"""Person names with evidence, English and Chinese, for the offline extractor.

A name becomes a character only with evidence that it names a person:
* Latin script: a title before it ("Captain Brannoch"), an introduction ("my name is Rowan",
  "I'm Pip", "a dog named Oscar"), a person's action right after it ("the Widow spins",
  "Tobin whispers"), a person's body or kin after its possessive ("Mira's shoulder"), or
  recurrence: written capitalised mid-sentence, without an article, in two sentences of
  English prose. Never a common word (one the text also writes in lower case, one of the
  word lists below, a -tion/-ment/-ness noun), a language or nationality, a word of a
  sentence in another language (a German aside capitalises its nouns), or a Latin word
  inside Chinese text on recurrence alone.
* Chinese: surname + one or two characters before an honorific or a speech verb, after an
  introduction (我叫 / 在下), or recurring (three times), and a segmenter-tagged name before
  an honorific (玄真道长); always only where the candidate cuts no dictionary word
  (zh.py: 何应对 in 如何应对 is no name).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from ...text import PERSON_TITLES, ZH_PERSON_TITLES
from .nlp import CJK, EN_STOPWORDS, is_cjk
from .zh import PROPER_TAGS, Segmentation, segment

COMMON_CAPS = frozenset("""
I I'm I've I'll I'd The A An And But Or So If When While Then There Here This That These Those
It It's He She We They You Your My Our His Her Their What Who Why How Where Which Yes No Oh Ah
Wow Hey Hi Hello Yeah Okay Ok Well Thanks Thank Please Sorry Sure Maybe Just Also Even Still
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June
July August September October November December Mr Mrs Ms Dr Sir Lady Lord God OMG LOL Haha
Today Tomorrow Yesterday Tonight Morning Evening Night Let Don't Can't Not Do Did Is Are Was
Gods Heaven Hell Christmas Easter Halloween Internet Narration Narrator Note Notes OOC System
User Assistant Character Scene Chapter Part Status Summary Thinking Reasoning Response Reply
None Null True False Yes Good Great Fine Right Left North South East West Come Go Now Look Listen
Wait Stop Run Quick Quiet Please Welcome Goodbye Bye Agreed Understood Ready Done Nothing Everyone
Someone Something Anything Everything Nobody Somebody Anyone Whoever Whatever Never Always Only
Command Control Dispatch Base Headquarters HQ Mission Security Station Council Police Team Crew Staff
Earth Mars Moon Sun World Universe Nature Fate Death Time Love Life
Pa Ma Mom Dad Mum Papa Mama Grandpa Grandma Granny Gran Nana Sis Bro Kid Boss Sweetheart Darling Honey
Buddy Pal Son Boy Girl Lad Lass Folks
""".split())
# Language names and nationalities: capitalised in English, never a person.
LANGUAGES = frozenset("""
English Chinese Mandarin Cantonese German French Spanish Italian Portuguese Russian Japanese
Korean Arabic Hindi Latin Greek Dutch Swedish Norwegian Danish Finnish Polish Czech Turkish
Persian Hebrew Thai Vietnamese Indonesian Malay Ukrainian Hungarian Romanian Irish Scottish
Welsh British American Canadian Australian Mexican Brazilian Indian African European Asian
Elvish Common Markdown JSON HTML XML
""".split())
# Function words of other Latin-script languages that English never uses.
FOREIGN_WORDS = frozenset("""
ich du er sie wir ihr und ist nicht das der den dem ein eine einen mit auf für von bitte danke
ja nein mein meine dein deine auch aber oder wenn wie wo sind bin habe haben wird noch schon
je tu il elle nous vous ils elles les une des et est pas oui merci mon ma mes ce cette avec pour
dans sur mais qui que très
yo él ella nosotros ellos los las una y sí gracias por favor para pero muy está estoy
""".split())
PLACE_NOUNS = frozenset("""
Harbor Harbour Port Tower Forest Woods Wood Inn Tavern Castle Keep Fort Fortress City Town Village
Temple Shrine Church Cathedral Abbey Monastery Market Bazaar Square Academy School University
College Library Palace Hall Mountain Mountains Mount Peak Hill Hills Valley River Lake Sea Ocean
Bay Coast Beach Island Isle Isles Desert Swamp Marsh Cave Caves Mine Mines Ruins Bridge Gate Street
Road Avenue Park Garden Gardens Museum Hospital Station Airport Cafe Café Restaurant Bar Club
Kingdom Empire Republic Province Realm Capital District Quarter Manor Estate Farm Camp Outpost
Citadel Dungeon Crypt Tomb Arena Theater Theatre Studio Office Center Centre Mall Hotel Chapel
Oak Grove Falls Junction Infirmary Archive Archives Vault Sanctum Spire Canyon Cliffs Glacier
Lighthouse Docks Pier Wharf Plaza Arcade Prison Jail Barracks Tavern Alley Lane Springs Well
Mill Hold Deep Ward Wing Cellar Study Bay Quarters Deck Bridge Lab Laboratory Clinic
Bend House Diner Hardware Store Shop Motel Lodge Pass Ridge Crest Heights Crossing Lock Stair Stairs
Basin Fen Moor Heath Glen Creek Shed Bakery Pharmacy Garage Warehouse Depot Terminal Landing
Boulevard Trail Highway Route Summit Gorge Ravine Cove Priory Cloister Ossuary Scriptorium Hut Cabin
Cottage Barn Saloon Emporium Grocery Row Mews
""".split())
# More words a place's name ends in, and words that open one ("Mount Vael", "Isla Candela", "Torre
# Blanca"): a name made so is no person, though these alone do not make a place.
PLACE_LAST = PLACE_NOUNS | frozenset("""
Quay Quays Shoal Shoals Cay Cays Reef Reefs Atoll Lagoon Sound Strait Straits Passage Point Sands Narrows
Bluff Marina Anchorage Shipyard Dockyard
""".split())
PLACE_FIRST = frozenset("""
Mount Lake Fort Port Cape Isla Isle Torre Puerto Porto Castillo Monte Playa Cerro Bahía Bahia Loch Lough
Mont Lac Ciudad
""".split())
# Prepositions that start a sentence before a place: "On Canal Street", "About the Harrow Hill".
LEADING_PREPOSITIONS = frozenset("""
About On In At To From Into Onto Near Past Across Behind Beyond Under Over Through Toward Towards Up
Down Off Out Along Around Outside Inside After Before By With Without For Of Beneath Below Above
Between Inside Within Upon
""".split())
# Heads of organisations and publications: "the Vell Courier" is a newspaper, not a place.
ORG_NOUNS = frozenset("""
Courier Times Gazette Herald Post Tribune Journal News Chronicle Daily Weekly Review Magazine Press
Company Corporation Corp Inc Ltd LLC Group Society Council Party Committee Association Union
Foundation Institute Agency Bureau Ministry Department Records Radio Network Channel Show Band
Hand Order Brotherhood Guild Legion Army Navy Police Mining Industries Holdings Enterprises Bank
Trust Labs Systems Technologies Motors Airlines Railway Railways Lines Shipping Trading
""".split())
# Words that make the capitalised name after them a person ("Sister Elowen", "Captain Brannoch").
TITLES = frozenset(t.capitalize() for t in PERSON_TITLES)
_NOUN_SUFFIX = re.compile(r"(?:ment|tion|sion|ness|ity|ism|ance|ence|ship|hood|ful|less|ous|ive|able|ible|ical)$")
_PERSON_VERBS = (r"said|says|asks?|asked|repl(?:ies|ied)|whispers?|whispered|shouts?|shouted|smiles?|smiled|"
                 r"nods?|nodded|laughs?|laughed|sighs?|sighed|answers?|answered|mutters?|muttered|murmurs?|"
                 r"murmured|grins?|grinned|frowns?|frowned|shrugs?|shrugged|winces?|winced|glances?|glanced|"
                 r"kneels?|knelt|leans?|leaned|stares?|stared|hesitates?|hesitated|chuckles?|chuckled|"
                 r"sniffs?|sniffed|cries|cried|sobs?|sobbed|growls?|growled|hisses|hissed|spins?|spun|"
                 r"winks?|winked|blinks?|blinked|gasps?|gasped|yells?|yelled|screams?|screamed|"
                 r"crouches|crouched|sits|sat|stands|stood|turns|turned|walks|walked|arrives|arrived|"
                 r"speaks|spoke|told|tells|thinks|thought|wants|wanted|loves|loved|feels|felt|recoils|"
                 r"emerges|emerged|stirs|stirred|studies|studied|grips|gripped|closes|closed|opens|opened")
_BODY_KIN = (r"eyes?|voice|face|hands?|arms?|shoulders?|head|hair|lips|mouth|smile|breath|heart|gaze|jaw|"
             r"fingers?|expression|brow|cheeks?|wrists?|legs?|feet|knees?|throat|skin|blood|tears?|"
             r"brother|sister|mother|father|mum|mom|dad|son|daughter|wife|husband|friend|cousin|uncle|aunt|"
             r"grandmother|grandfather|boyfriend|girlfriend|partner|family|parents|kids|children|baby")
EN_STATES = (r"injured|wounded|hurt|captured|imprisoned|arrested|kidnapped|poisoned|cursed|killed|dead|"
             r"dying|unconscious|missing|pregnant|married|engaged|divorced|sick|ill|healed|rescued|freed|"
             r"released|exiled|promoted|fired|betrayed|blinded|paralyzed|possessed|transformed|trapped|"
             r"adopted|hired|retired|recovered|lost|shot|stabbed|bitten|drugged|chained|cured|free")
_NAME = r"[A-Z][a-z'’]+(?: [A-Z][a-z'’]+){0,2}"
_VERB_AFTER = re.compile(rf"\b({_NAME}) (?:{_PERSON_VERBS})\b")
_STATED = re.compile(rf"\b({_NAME}) (?:is|was|has been|had been|got|became) (?:\w+ )?(?:{EN_STATES})\b")
_POSSESSIVE = re.compile(rf"\b({_NAME})['’]s (?:\w+ )?(?:{_BODY_KIN})\b")
_INTRODUCED = re.compile(rf"(?:\b[Mm]y name(?: is|'s|’s)|\b(?:his|her|their) name is|\bI['’]m|\bI am|"
                         rf"\bcall me|\bnamed|\b(?:[Mm]y|[Hh]is|[Hh]er|[Yy]our|[Oo]ur|[Tt]heir) (?:little |big |older |"
                         rf"younger |elder |best )?(?:{_BODY_KIN.split('|brother|', 1)[1]}|brother)) ({_NAME})")
_TITLED = re.compile(r"\b(" + "|".join(sorted(TITLES)) + r")\.? ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b")
_CAP_RUN = re.compile(r"\b[A-Z][a-z'’]+(?:[ -](?:of |the |de |van |von )?[A-Z][a-z'’]+)*")
# Setting out for somewhere: "sailed for Ceylon", "rode for Greyhold".
LEFT_FOR = (r"(?:sail\w*|rode|ride\w*|head\w*|left|leav\w+|set (?:off|out|sail)|bound|making|"
             r"start\w*|depart\w*|flee\w*|fled) for")
# A name after these is a place: "in Vell", "reach Vell", "the train to Vell", "sailed for Ceylon".
_PLACED = re.compile(rf"\b(?:in|into|inside|near|reach\w*|arrived? in|(?:go|goes|going|went|come|came|coming|"
                     rf"travel\w*|sail\w*|head\w*|return\w*|mov\w+|fl[yi]\w*|flew|dr[oi]ve\w*|r[io]de|walk\w*|"
                     rf"train|road|way|trip|journey|ticket|bound|back) to) ({_NAME})\b(?!['’])")
# "look at Ada": a person after "at"; "at Greyhold" with no such verb, or "rode for Greyhold", a place
# unless the name has other evidence of a person ("a note left for Mira" when Mira speaks).
LOOK_AT = re.compile(r"\b(?:look|stare|glance|smile|nod|laugh|point|shout|wave|grin|frown|glare|peer|wink|"
                     r"snap|yell|scowl)(?:s|es|ed|d|ing|ped|ted|ned)? $")
# "the chimneys of Cogsgate", "the tin roofs of Shiloh Gap": what a town or district has.
OF_PLACE = re.compile(r"\b(?:streets|roofs?|rooftops|chimneys|lamps|gates|walls|docks|wharves|outskirts|edge|heart|"
                       r"centre|center|alleys|lights|slums|markets|harbou?r|skyline|towers|spires|quarter|district|"
                       r"outskirts|mud|fog|smoke|people|folk|mayor|sheriff|council|shutters|thatch|taproom|"
                       r"common room|cellar|landlord|landlady|innkeeper|bar|doors?) of (?:the )?([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b")
_AT = re.compile(rf"\b(?:at|{LEFT_FOR}) ({_NAME})\b(?!['’])")
_TAG_LIST = re.compile(r"^\W*[\w ]{1,30}[:：]\s*[A-Z][\w-]*(?:\s*[,/|、]\s*[A-Z][\w-]*)+\W*$")
_CAPS_SPEAKER = re.compile(r"\b([A-Z]{3,12})(?:,\s)? (?:says|said|replies|replied|asks|asked|answers|answered|"
                           r"announces|announced|whispers|whispered|adds|added|repeats|repeated)\b")
_OWNED = re.compile(r"\b(?:[Hh]is|[Hh]er|[Tt]heir|[Ii]ts)\s+$")
_OWNERS = frozenset("His Her Their Its".split())
_DETERMINER = re.compile(r"(?:\b(?:the|a|an|this|that|these|those|every|no|any|some|my|your|his|her|our|"
                         r"their|its)\s+)$", re.I)


def not_a_name(word: str) -> bool:
    """A capitalised word that never names a person on its own."""
    w = word.replace("’", "'").removesuffix("'s")
    return (w in COMMON_CAPS or w in LANGUAGES or w.lower() in FOREIGN_WORDS or w in TITLES
            or w.lower() in EN_STOPWORDS or len(w) < 2 or w.isupper())


_NOT_SPEAKER = re.compile(r"(?:system|narrator|旁白|系统|assistant|user|unused|\{\{|[#\d<>\[\]{}|@])", re.I)


def is_person_speaker(name: str) -> bool:
    """A speaker name that can be a character: not a system, narrator or title card ("# 沪上旧梦1946")."""
    return bool(name.strip()) and not _NOT_SPEAKER.search(name)


def is_foreign(sentence: str) -> bool:
    """A sentence in another Latin-script language: more of its function words than English ones."""
    words = re.findall(r"[^\W\d_]+", sentence.lower())
    foreign = sum(w in FOREIGN_WORDS for w in words)
    return foreign >= 2 and foreign > sum(w in EN_STOPWORDS for w in words)


def _strip(run: str) -> str:
    words = run.replace("’", "'").removesuffix("'s").split()
    while words and (words[0] in COMMON_CAPS or words[0] in TITLES):
        words = words[1:]
    return " ".join(words)


def titled_names(text: str) -> Counter[str]:
    """Person names after a title, without it: 'Captain Brannoch' counts for 'Brannoch'."""
    return Counter(m.group(2) for m in _TITLED.finditer(text)
                   if not any(not_a_name(w) or w in PLACE_NOUNS for w in m.group(2).split()))


def with_title(name: str, text: str) -> str:
    """A one-word name as the text titles it ("Miss Carter", "Dr. Orlov"), the commonest title
    first; the name itself when the text never titles it. A reader lists such a person with
    the title: the surname alone may be a family's."""
    if " " in name:
        return name
    forms = Counter(m.group(0) for m in _TITLED.finditer(text) if m.group(2) == name)
    return forms.most_common(1)[0][0] if forms else name


def _strong(text: str) -> set[str]:
    """Names the text marks as people: introduced, titled, acting, hurt or healed, with a body or kin."""
    found = set(titled_names(text))
    for pattern in (_VERB_AFTER, _POSSESSIVE, _INTRODUCED, _STATED):
        # "His Buick turns up": a thing someone has, not a person acting
        found.update(_strip(m.group(1)) for m in pattern.finditer(text)
                     if not _OWNED.search(text, max(0, m.start(1) - 8), m.start(1))
                     and m.group(1).split()[0] not in _OWNERS)
    return {n for n in found if n and not any(not_a_name(w) for w in n.split())}


def _mid_sentence(word: str, text: str) -> bool:
    """Whether `word` is written capitalised somewhere other than at a sentence's start."""
    for m in re.finditer(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text):
        before = text[:m.start()].rstrip()
        if before and before[-1] not in ".!?\"“'‘:*(\n":
            return True
    return False


def _recurring(sentences: list[str], lower_words: set[str]) -> Counter[str]:
    """Capitalised runs written without an article, counted once per sentence; one at a sentence
    start counts only for a name also written mid-sentence."""
    inner: Counter[str] = Counter()
    initial: Counter[str] = Counter()
    for s in sentences:
        here: dict[str, bool] = {}
        if _TAG_LIST.match(s):
            continue   # "Categories: Harassment, Hate." labels things, it names nobody
        for m in _CAP_RUN.finditer(s):
            before = s[:m.start()].rstrip()
            if _DETERMINER.search(s[:m.start()]) or s[m.end():m.end() + 1] in (":", "："):
                continue
            name = _strip(m.group(0))
            words = name.split()
            if m.group(0).split()[0] in ("The", "A", "An"):
                continue   # "The Lantern ..." at a sentence start: an article, as mid-sentence
            if (not words or any(not_a_name(w) for w in words)
                    or (len(words) == 1 and (name.lower() in lower_words or _NOUN_SUFFIX.search(name.lower())))):
                continue
            stripped = name != m.group(0).replace("’", "'").removesuffix("'s")   # "So Brannoch ...": mid-sentence
            mid = stripped or (bool(before) and before[-1] not in ".!?\"“'‘:*(")
            here[name] = here.get(name, False) or mid
        for name, mid in here.items():
            (inner if mid else initial)[name] += 1
    return Counter({n: c + initial[n] for n, c in inner.items()})


def _known_parts(text: str, known: set[str]) -> set[str]:
    """Two or three capitalised words in a row, the first a known name's first word and the last
    a known name's last ("Elwood Pike", with "Elwood" and "Mr. Pike" known): one person's full name."""
    firsts = {k.split()[0] for k in known if k and k.split()[0] not in TITLES}
    lasts = {k.split()[-1] for k in known if k}
    return {m.group(0) for m in re.finditer(r"\b[A-Z][a-z'’]+(?: [A-Z][a-z'’]+){1,2}\b(?!['’][a-rt-z])", text)
            if m.group(0).split()[0] in firsts and m.group(0).split()[-1] in lasts
            and m.group(0) not in known}


def _a_place(name: str) -> bool:
    """A name made like a place's: "Gallows Quay", "Isla Candela" (not "Mira" or "Rowan Vale")."""
    words = name.split()
    return words[-1] in PLACE_LAST or (len(words) > 1 and words[0] in PLACE_FIRST)


def latin_people(sentences: list[str], new_text: str, known: Iterable[str] = ()) -> list[str]:
    """Latin-script person names of the new text, with evidence from all `sentences`."""
    prose = [s for s in sentences if not is_foreign(s) and not is_cjk(s)]
    text = "\n".join(prose)
    lower_words = set(re.findall(r"(?<![A-Za-z])[a-z][a-z'’]+", text))
    # "Offer stands a week": a word the text also writes in lower case, capitalised only where a
    # sentence starts, is that word, whatever verb follows it.
    strong = {s for s in _strong(text) if " " in s or s.lower() not in lower_words or _mid_sentence(s, text)}
    strong |= {k for k in known if k}
    # Inside Chinese text only what is known or titled counts (a word seen twice there may be an aside).
    cjk_text = "\n".join(s for s in sentences if is_cjk(s) and not is_foreign(s))
    strong |= {n for n in _strong(cjk_text) if n in known}
    strong |= set(_ZH_TITLED_LATIN.findall(cjk_text))   # 人事Vivian姐, Kevin总: a title in Chinese
    strong |= _known_parts(text, strong)
    # "ARGUS replies", twice: a name written in capitals (a station's AI) that speaks
    spoken = Counter(m.group(1) for m in _CAPS_SPEAKER.finditer(text))
    strong |= {n for n, c in spoken.items() if c >= 2}
    counts = _recurring(prose, lower_words)
    # "in Vell", "reached Vell": a place, whatever its recurrence says.
    placed = set(_PLACED.findall(text))
    # "the Salt and Sparrow" (an inn), "Tessaract Mining" (a company): parts of other names.
    placed |= {w for m in re.finditer(r"\b[Tt]he ([A-Z][a-z]+) and ([A-Z][a-z]+)", text) for w in m.groups()}
    placed |= {m.group(1) for m in re.finditer(rf"\b([A-Z][a-z]+)[ -](?:{'|'.join(ORG_NOUNS)})\b", text)}
    # A name known only by recurrence that is also "at Greyhold", "rode for Greyhold" is a place too.
    placed |= {m.group(1) for m in _AT.finditer(text) if m.group(1) not in strong
               and not LOOK_AT.search(text, 0, m.start())}
    placed |= {m.group(1) for m in OF_PLACE.finditer(text) if m.group(1) not in strong}
    names = [n for n, c in counts.most_common() if (n in strong or c >= 2) and n not in placed and not _a_place(n)]
    names += sorted(n for n in strong if n not in names and n not in placed and not _a_place(n))
    return [n for n in names if re.search(rf"(?<![A-Za-z]){re.escape(n)}(?![A-Za-z])", new_text)]


# -- Chinese --------------------------------------------------------------------------------
ZH_SURNAMES = ("欧阳 上官 司马 诸葛 慕容 南宫 令狐 东方 独孤 西门 皇甫 长孙 宇文 司徒 夏侯 "
               "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
               "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾"
               "毛郝龚邵万钱严覃武戴莫孔向汤柳楚萧温云凌沐洛阮燕秋厉聂祝纪舒屈项卓蓝颜宁左裴岳骆易俞甘景"
               "包冷花管房申符阎柯祁闻葛齐康伍乔翟施殷庞樊麦饶季欧霍傅连尤岑倪耿苗鲁褚卫喻柏窦奚郎鲍费廉滕毕"
               "邬卞穆湛禹狄贝臧伏谈茅闵席娄刁虞缪郁洪诸邢荣翁荀惠甄芮储靳巫栾詹蒲邰鄂赖蔺屠胥党姬冉桑濮扈冀"
               "晏瞿慕茹庾匡寇阙蔚巩晁敖辛阚鞠竺")
SURNAME_RE = "|".join(sorted(ZH_SURNAMES.split(" ")[:-1], key=len, reverse=True) + list(ZH_SURNAMES.split(" ")[-1]))
ZH_NAME_STOP = "的了在是我你他她它们这那个和与把被让给着过吗呢吧啊呀么不有没就都又还很也地得"
NAME_CHAR = f"(?:(?![{ZH_NAME_STOP}])[{CJK}])"
# A name starts after a non-CJK character or a particle, or at a word boundary (checked in code).
_START = f"(?:(?<![{CJK}])|(?<=[的和与对向是见找问叫请给跟被把让将说道]))"
SPEECH = r"(?:说道|笑道|问道|答道|喊道|叹道|冷笑|微笑|点头|摇头|说|道|笑|问|答|喊|叫|叹|看着|望着|转身|皱眉)"
HONORIFIC = f"(?:{ZH_PERSON_TITLES})"
# What a person has (邵峰的声音, 沈砚秋的手): a possessive that names a person, as "Mira's shoulder" does.
_ZH_BODY = (r"声音|眼睛|眼神|目光|脸色|脸|手腕|手指|手|肩膀|背影|嘴角|嘴唇|头发|额头|眉头|呼吸|心跳|"
            r"母亲|父亲|妹妹|哥哥|姐姐|弟弟|女儿|儿子|妻子|丈夫|师父|徒弟")
_INTRO = r"(?:我叫|我是|在下|名叫|叫做|本名|名为|我名)"
# Kin or a companion before a name introduce it, as "my brother Tobin" does (你弟弟沈砚书).
_ZH_KIN = (r"(?:弟弟|哥哥|姐姐|妹妹|父亲|母亲|儿子|女儿|丈夫|妻子|未婚夫|未婚妻|表哥|表姐|表弟|表妹|堂兄|堂弟|"
           r"师兄|师姐|师弟|师妹|朋友|同学|室友|搭档|同事|徒弟|侄子|侄女|外甥)")
# Honorifics that follow a Daoist, Buddhist or sect name rather than a surname (清风道长, 无尘大师).
_DAO_TITLE = r"(?:真人|老祖|道长|大师|长老|掌门|仙子|上人|居士|法师|禅师|道人|散人|尊者|圣女)"
# A company after its name (蓝鲸游戏, 鹭岛互动科技): the name is no person's.
_ZH_ORG = r"(?:游戏|公司|集团|科技|传媒|互动|工作室|有限|股份|控股|银行|影业|文化)"
# A Latin name with a Chinese title after it: Vivian姐, Kevin总, Tony老师.
_ZH_TITLED_LATIN = re.compile(r"(?<![A-Za-z])([A-Z][a-z]{2,})(?=姐|哥|总|老师|先生|小姐|女士|经理|主管|同学|学长|学姐)")
_MASTER = r"(?:师父|师尊|师傅|师叔|师伯|师祖|恩师|家师)"
# Second characters that make surname + one character a sect, clan or place (唐门, 林家), not a person.
_NOT_GIVEN = "门派帮寨宗教会府城山家氏族国州县村镇"
NAME_TAGS = frozenset({"nr", "nrt", "nrfg"})
_PLACE_END = "城镇村山寺庙观府宫谷岛湖港峰洞庄堂阁殿楼寨斋潭渡"
_AT_PLACE = r"(?:在|到|去|回|来到|前往|离开|进入|上了|下了|住在|逃往|返回)"


def _ok_start(seg: Segmentation, text: str, start: int) -> bool:
    return start == 0 or not re.match(f"[{CJK}]", text[start - 1]) or text[start - 1] in "的和与对向是见找问叫请给跟被把让将说道" \
        or any(t.start == start for t in seg.tokens)


def cjk_names(text: str) -> Counter[str]:
    """Chinese person names in a text, counted; each candidate must cut no dictionary word."""
    seg = segment(text)
    out: Counter[str] = Counter()
    taken: set[int] = set()   # one mention counts once, whichever patterns match it

    def add(name: str, start: int, end: int) -> None:
        if len(name) == 2 and name[1] in _NOT_GIVEN:
            return   # 沈家|少爷, 唐门|掌门: a family, a sect
        if start not in taken and _clean_name(seg, start, end) and _ok_start(seg, text, start):
            out[name] += 1
            taken.add(start)

    for m in re.finditer(f"(?:{SURNAME_RE})({NAME_CHAR}{{0,2}}?)({HONORIFIC})", text):
        if m.group(1):
            add(m.group(0)[:m.start(2) - m.start()], m.start(), m.start(2))
        elif not seg.guessed_name_beyond(m.start(), m.end()):   # 闻伯年 is no 闻伯 ("uncle Wen")
            add(m.group(0), m.start(), m.end())
    for m in re.finditer(f"((?:{SURNAME_RE}){NAME_CHAR}{{1,2}}?)(?:{SPEECH}|的(?:{_ZH_BODY}))", text):
        add(m.group(1), m.start(), m.end(1))   # 邵峰说, 邵峰的声音: a person speaking, a person's body
    for m in re.finditer(f"{_INTRO}((?:{SURNAME_RE}){NAME_CHAR}{{1,2}})(?=[^{CJK}]|$)", text):
        add(m.group(1), m.start(1), m.end(1))
    for m in re.finditer(f"{_ZH_KIN}((?:{SURNAME_RE}){NAME_CHAR}{{1,2}})", text):
        # the name's end is where the words say: 沈砚书|三个 (the longer clean cut first)
        for end in range(m.end(1), m.start(1) + 1, -1):
            if _clean_name(seg, m.start(1), end):
                add(text[m.start(1):end], m.start(1), end)
                break
    for tok, nxt in zip(seg.tokens, seg.tokens[1:]):
        # 玄真道长: a word the segmenter tags as a name, before an honorific; one its model
        # guessed must be made of name characters and not start with a word (看向|宸贵妃, 夏和葛|师傅).
        if tok.tag in NAME_TAGS and 2 <= len(tok.word) <= 3 and re.fullmatch(HONORIFIC, nxt.word) and (
                tok.known or re.fullmatch(f"{NAME_CHAR}+", tok.word) and not seg.starts_with_word(tok)):
            add(tok.word, tok.start, tok.end)
    # 玄火老祖 twice: a Daoist or sect name has no surname, but recurs before its honorific.
    titled = Counter(m.group(1) for m in re.finditer(f"(?=({NAME_CHAR}{{2}})(?:{_DAO_TITLE}))", text))
    for name in (n for n, c in titled.items() if c >= 2):
        for m in re.finditer(f"{re.escape(name)}(?={_DAO_TITLE})", text):
            add(name, m.start(), m.end())
    # 师父清虚真人: a master introduced as one, once is enough, even where the name is also a
    # word (清虚, "pure and empty"): it cuts no word, and the title follows.
    for m in re.finditer(f"{_MASTER}({NAME_CHAR}{{2}})(?={_DAO_TITLE})", text):
        if m.start(1) not in taken and not seg.cuts_word(m.start(1), m.end(1)):
            out[m.group(1)] += 1
            taken.add(m.start(1))
    _add_court_names(text, seg, out, taken)
    _add_recurring(text, seg, out)
    # 云渺峰 recurs like a name, but "在云渺峰" makes it a place; 蓝鲸游戏, 蓝鲸公司 make 蓝鲸 a company.
    return Counter({n: c for n, c in out.items()
                    if not (n[-1] in _PLACE_END and re.search(f"{_AT_PLACE}{re.escape(n)}", text))
                    and not re.search(f"{re.escape(n)}{_ZH_ORG}", text)})


# Ranks of a court and a household that a one-character name comes before, a person's whole name
# as a reader lists it (德妃, 宸贵妃, 桂嬷嬷, 冯公公): no surname needed.
_COURT_TITLE = r"(?:皇贵妃|贵妃|妃|嫔|贵人|常在|答应|才人|美人|昭仪|婕妤|嬷嬷|姑姑|公公|太医|师太)"
_NOT_COURT_NAME = "皇贵王太后宫娘公姑嬷妃嫔老小大这那哪每各某此位个"
# One person each in a court: named by the rank alone where the text has them speak.
_SOLE_TITLES = r"(?:太后|皇后|皇上|皇帝|太子|太妃|王爷|世子)"


def _add_court_names(text: str, seg: Segmentation, out: Counter[str], taken: set[int]) -> None:
    """德妃, 桂嬷嬷 (a name character and a court rank), 小禄子 twice (a servant's name), 太后说道
    (a rank held by one person, speaking)."""
    hits = [(m.start(1), m.end(1)) for m in re.finditer(f"(?=([{CJK}]{_COURT_TITLE}))", text)
            if m.group(1)[0] not in _NOT_COURT_NAME and m.group(1)[0] not in ZH_NAME_STOP]
    twice = Counter(m.group(1) for m in re.finditer(f"(?=(小[{CJK}]子))", text))
    hits += [(m.start(), m.end()) for name, c in twice.items() if c >= 2 and name[1] not in ZH_NAME_STOP
             for m in re.finditer(re.escape(name), text)]
    sole = {m.group(1) for m in re.finditer(f"({_SOLE_TITLES})(?:{SPEECH})", text)}
    hits += [(m.start(), m.end()) for name in sole for m in re.finditer(re.escape(name), text)]
    for start, end in hits:
        if start in taken or seg.cuts_word(start, end) or seg.common_word(start, end) and text[start:end] not in sole:
            continue
        first = seg.tag_at(start, start + 1)
        if text[start:end] not in sole and (first is not None and first[:1] in "pvcdrmqu"
                                            or not any(t.start == start for t in seg.tokens)):
            continue   # 为|才人, 册为|才人: "made a 才人", no name
        out[text[start:end]] += 1
        taken.add(start)


_COMPOUND_SURNAMES = frozenset(ZH_SURNAMES.split(" ")[:-1])
_SINGLE_SURNAMES = frozenset(ZH_SURNAMES.split(" ")[-1])


# Parts of speech that a given name never is as a whole word: adverb, pronoun, conjunction,
# preposition, particle, numeral, measure word, locative, time.
_NOT_GIVEN_TAGS = frozenset("drcpumqft")


def _clean_name(seg: Segmentation, start: int, end: int) -> bool:
    """A name span cuts no word, is no everyday word, and does not start with one (周二晚 is Tuesday
    night) unless that word is a compound surname with a given name after it (上官 is also an official);
    a familiar form (老张, 小王) may be a dictionary word too."""
    head = next((t for t in seg.tokens if t.start == start), None)
    if end - start == 2 and seg.text[start] in "老小阿" and seg.text[start + 1] in _SINGLE_SURNAMES:
        return not seg.cuts_word(start, end)
    if end - start == 3 and seg.text[end - 1] in "妃嫔":
        return False   # 连|宜嫔: a word before a consort's rank, not a surname and a given name
    if head is not None and head.known and head.tag == "ns" and head.end < end and head.word not in _COMPOUND_SURNAMES:
        return False   # 苏州|孟掌柜: a place, then the person from there
    given = next((t for t in seg.tokens if t.start == start + 1 and t.end == end and t.known), None)
    if given is not None and given.tag[:1] in _NOT_GIVEN_TAGS:
        return False   # 夏|终于: surname + an adverb, a pronoun, a conjunction is no name
    return seg.clean(start, end) and not (head is not None and head.known and head.end <= end
                                          and head.tag not in PROPER_TAGS
                                          and not (head.word in _COMPOUND_SURNAMES and head.end < end))


def _add_recurring(text: str, seg: Segmentation, out: Counter[str]) -> None:
    """Surname + two characters seen three times (厉天行), a segmenter-tagged surname + one (唐七), or a
    familiar form (阿福, 老周) seen three times."""
    spans: dict[str, list[int]] = {}
    for m in re.finditer(f"(?=((?:{SURNAME_RE}){NAME_CHAR}{{1,2}}|阿{NAME_CHAR}|[老小](?:{SURNAME_RE})))", text):
        name = m.group(1)
        for cut in ([name] if len(name) == 2 else [name, name[:2]]):
            if _clean_name(seg, m.start(), m.start() + len(cut)):
                spans.setdefault(cut, []).append(m.start())
    for name, starts in sorted(spans.items(), key=lambda kv: -len(kv[1])):
        if len(starts) < 3 or any(name in o or o in name for o in out):
            continue
        if len(name) == 2:
            after = {text[s + 2:s + 3] for s in starts}
            longer = [name + c for c in after if len(spans.get(name + c, ())) >= 2]
            if len(after) == 1 and longer:
                out[longer[0]] += len(starts)   # 厉天 is always 厉天行, even where 行走 split it
                continue
            familiar = name[0] in "阿老小"
            if longer or (not familiar and (name[1] in _NOT_GIVEN or not any(
                    seg.tag_at(s, s + 2) in NAME_TAGS for s in starts))):
                continue   # 沈砚 is the start of 沈砚秋 and 沈砚书
        out[name] += len(starts)
