"""Person names with evidence, for the offline extractor: Latin script here, Chinese in zh_names.py.

A name becomes a character only with evidence that it names a person:
* Latin script: a title before it ("Captain Brannoch"), an introduction ("my name is Rowan",
  "I'm Pip", "a dog named Oscar"), a person's action right after it ("the Widow spins",
  "Tobin whispers"), a person's body or kin after its possessive ("Mira's shoulder"), or
  recurrence: written capitalised mid-sentence, without an article, in two sentences of
  English prose. Never a common word (one the text also writes in lower case, one of the
  word lists below, a -tion/-ment/-ness noun), a language or nationality, a word of a
  sentence in another language (a German aside capitalises its nouns), or a Latin word
  inside Chinese text on recurrence alone.
* Chinese: see zh_names.py.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from ...text import PERSON_TITLES, is_settlement_name
from .nlp import EN_STOPWORDS, is_cjk
from .place_words import IN_REGION, PLACE_NOUNS, SPELLED_NUMBER, made_like_a_place

COMMON_CAPS = frozenset("""
I I'm I've I'll I'd The A An And But Or So If When While Then There Here This That These Those
It It's He She We They You Your My Our His Her Their What Who Why How Where Which Yes No Oh Ah
Wow Hey Hi Hello Yeah Okay Ok Well Thanks Thank Please Sorry Sure Maybe Just Also Even Still
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June
July August September October November December Mr Mrs Ms Dr Sir Lady Lord God OMG LOL Haha
Today Tomorrow Yesterday Tonight Morning Evening Night Let Don't Can't Not Do Did Is Are Was
Gods Heaven Hell Christmas Easter Halloween Thanksgiving Hanukkah Passover Ramadan Diwali Yule Eid Internet Narration Narrator Note Notes OOC System
User Assistant Character Scene Chapter Part Status Summary Thinking Reasoning Response Reply
None Null True False Yes Good Great Fine Right Left North South East West Come Go Now Look Listen
Wait Stop Run Quick Quiet Please Welcome Goodbye Bye Agreed Understood Ready Done Nothing Everyone
Someone Something Anything Everything Nobody Somebody Anyone Whoever Whatever Never Always Only
Command Control Dispatch Base Headquarters HQ Mission Security Station Council Police Team Crew Staff
Earth Mars Moon Sun World Universe Nature Fate Death Time Love Life
Pa Ma Mom Dad Mum Papa Mama Grandpa Grandma Granny Gran Nana Sis Bro Kid Boss Sweetheart Darling Honey
Buddy Pal Son Boy Girl Lad Lass Folks
Majesty Highness Lordship Ladyship Eminence Excellency Holiness Worship Honour Honor
Later Soon Finally Suddenly Meanwhile Afterwards Again Once Perhaps Instead Together Slowly Quickly Carefully
Gently Softly Quietly Silently Eventually Luckily Unfortunately Apparently Honestly Anyway
""".split())
# Language names and nationalities: capitalised in English, never a person.
LANGUAGES = frozenset("""
English Chinese Mandarin Cantonese German French Spanish Italian Portuguese Russian Japanese
Korean Arabic Hindi Latin Greek Dutch Swedish Norwegian Danish Finnish Polish Czech Turkish
Persian Hebrew Thai Vietnamese Indonesian Malay Ukrainian Hungarian Romanian Irish Scottish
Welsh British American Canadian Australian Mexican Brazilian Indian African European Asian
Elvish Common Markdown JSON HTML XML
Swahili Yoruba Igbo Hausa Zulu Xhosa Amharic Somali Afrikaans Tagalog Filipino Bengali Punjabi Urdu
Tamil Telugu Marathi Gujarati Nepali Tibetan Mongolian Kazakh Uzbek Pashto Kurdish Armenian Georgian
Serbian Croatian Bulgarian Slovak Slovenian Lithuanian Latvian Estonian Icelandic Basque Catalan
Gaelic Maori Hawaiian Yiddish Esperanto Sanskrit Aramaic Norse Nigerian Ghanaian Kenyan Egyptian
Moroccan Ethiopian Pakistani Bangladeshi Iranian Iraqi Syrian Lebanese Israeli Saudi Argentine
Argentinian Chilean Peruvian Colombian Venezuelan Cuban Jamaican Haitian Swiss Austrian Belgian
""".split())
# Function words of other Latin-script languages that English never uses.
FOREIGN_WORDS = frozenset("""
ich du er sie wir ihr und ist nicht das der den dem ein eine einen mit auf für von bitte danke
ja nein mein meine dein deine auch aber oder wenn wie wo sind bin habe haben wird noch schon
je tu il elle nous vous ils elles les une des et est pas oui merci mon ma mes ce cette avec pour
dans sur mais qui que très
yo él ella nosotros ellos los las una y sí gracias por favor para pero muy está estoy
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
Dynamics Robotics Solutions Logistics Pharmaceuticals Pharma Biotech Aerospace Electronics Analytics
Ventures Partners Capital Consortium Syndicate Cartel Conglomerate Directorate Collective Incorporated
Haulage Freight Transport Transportation Construction Insurance Realty Properties Estates Media Studios
Productions Entertainment Brewery Breweries Distillery Automotive Petroleum Textiles Imports Exports
Supplies Services Consulting Associates Sons Yards Shipyards Armaments Arms Munitions
Shows Circus Wonders Caterers Tailors Outfitters Conclave Compact
""".split())
# "Tessaract Mining", "Kestrel Dynamics": the word before a company word names the company.
ORG_NAMED = re.compile(rf"\b([A-ZÀ-ÖØ-Þ][\w'’-]*)[ -](?:{'|'.join(sorted(ORG_NOUNS))})\b")
# Words that make the capitalised name after them a person ("Sister Elowen", "Captain Brannoch").
TITLES = frozenset(t.capitalize() for t in PERSON_TITLES)
# Offices that end a run of capitals ("Managing Director"): a post, not a person's name.
_OFFICES = frozenset("Director Manager Secretary Chairman Chairwoman Chairperson President Treasurer Supervisor "
                     "Superintendent Administrator Accountant Clerk Editor Registrar Principal Dean Minister "
                     "Governor Mayor Commissioner Chancellor Counsel Attorney".split())
_NOUN_SUFFIX = re.compile(r"(?:ment|tion|sion|ness|ity|ism|ance|ence|ship|hood|ful|less|ous|ive|able|ible|ical)$")
# What only a person does: speak or make a face ("the Widow says"; but "the Lantern turns",
# "the Cordova arrives", "the Admiralty wants" may be things).
_SPEECH_AND_FACE = (r"said|says|asks?|asked|repl(?:ies|ied)|whispers?|whispered|shouts?|shouted|smiles?|smiled|"
                    r"nods?|nodded|laughs?|laughed|sighs?|sighed|answers?|answered|mutters?|muttered|murmurs?|"
                    r"murmured|grins?|grinned|frowns?|frowned|shrugs?|shrugged|winces?|winced|glances?|glanced|"
                    r"kneels?|knelt|stares?|stared|hesitates?|hesitated|chuckles?|chuckled|sniffs?|sniffed|"
                    r"cries|cried|sobs?|sobbed|growls?|growled|winks?|winked|gasps?|gasped|yells?|yelled|"
                    r"screams?|screamed|speaks|spoke")
_PERSON_VERBS = (_SPEECH_AND_FACE + r"|leans?|leaned|hisses|hissed|spins?|spun|blinks?|blinked|"
                 r"crouches|crouched|sits|sat|stands|stood|turns|turned|walks|walked|arrives|arrived|"
                 r"told|tells|thinks|thought|wants|wanted|loves|loved|feels|felt|recoils|"
                 r"emerges|emerged|stirs|stirred|studies|studied|grips|gripped|closes|closed|opens|opened")
_BODY_KIN = (r"eyes?|voice|face|hands?|arms?|shoulders?|head|hair|lips|mouth|smile|breath|heart|gaze|jaw|"
             r"fingers?|expression|brow|cheeks?|wrists?|legs?|feet|knees?|throat|skin|blood|tears?|"
             r"brother|sister|mother|father|mum|mom|dad|son|daughter|wife|husband|friend|cousin|uncle|aunt|"
             r"grandmother|grandfather|boyfriend|girlfriend|partner|family|parents|kids|children|baby")
EN_STATES = (r"injured|wounded|hurt|captured|imprisoned|arrested|kidnapped|poisoned|cursed|killed|dead|"
             r"dying|unconscious|missing|pregnant|married|engaged|divorced|sick|ill|healed|rescued|freed|"
             r"released|exiled|promoted|fired|betrayed|blinded|paralyzed|possessed|transformed|trapped|"
             r"adopted|hired|retired|recovered|lost|shot|stabbed|bitten|drugged|chained|cured|free")
# A name of one to three words, a double name one word ("Halden-Voss"); never started after a hyphen.
_NAME = r"(?<!-)[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+(?:-[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+)?(?: [A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+(?:-[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+)?){0,2}"
_VERB_AFTER = re.compile(rf"\b({_NAME}) (?:{_PERSON_VERBS})\b")
_STATED = re.compile(rf"\b({_NAME}) (?:is|was|has been|had been|got|became) (?:\w+ )?(?:{EN_STATES})\b")
_POSSESSIVE = re.compile(rf"\b({_NAME})['’]s (?:\w+ )?(?:{_BODY_KIN})\b")
_INTRODUCED = re.compile(rf"(?:\b[Mm]y name(?: is|'s|’s)|\b(?:his|her|their) name is|\bI['’]m|\bI am|"
                         rf"\bcall me|\bnamed|\b(?:[Mm]y|[Hh]is|[Hh]er|[Yy]our|[Oo]ur|[Tt]heir) (?:little |big |older |"
                         rf"younger |elder |best )?(?:{_BODY_KIN.split('|brother|', 1)[1]}|brother)) ({_NAME})")
_TITLED = re.compile(r"\b(" + "|".join(sorted(TITLES)) + r")\.? ([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?: [A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+)?)\b")
_CAP_RUN = re.compile(r"\b[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+(?:[ -](?:of |the |de |van |von )?[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+)*")
# Setting out for somewhere: "sailed for Ceylon", "rode for Greyhold".
LEFT_FOR = (r"(?:sail\w*|rode|ride\w*|head\w*|left|leav\w+|set (?:off|out|sail)|bound|making|"
             r"start\w*|depart\w*|flee\w*|fled) for")
# A name after these is a place: "in Vell", "reach Vell", "the train to Vell", "sailed for Ceylon".
_PLACED = re.compile(rf"\b(?:in|into|inside|near|reach\w*|arrived? in|(?:travel\w*|sail\w*|fl[yi]\w*|flew|dr[oi]ve\w*|"
                     rf"r[io]de|train|road|way|trip|journey|ticket|bound) to) ({_NAME})\b(?!['’])")
# "went to Vell", but also "I go to Niamh first": a place unless the name has a person's evidence
_GONE_TO = re.compile(rf"\b(?:go|goes|going|went|come|came|coming|head\w*|return\w*|mov\w+|walk\w*|back) to "
                      rf"({_NAME})\b(?!['’])")
# "Hiya, Niamh.": someone spoken to
_ADDRESSED = re.compile(rf"\b(?:Hi|Hiya|Hello|Hey|Thanks|Thank you|Sorry|Morning|Evening|Goodnight|Goodbye|Bye|"
                        rf"Cheers|Welcome|Congratulations),? ({_NAME})[.!?]")
# "look at Ada": a person after "at"; "at Greyhold" with no such verb, or "rode for Greyhold", a place
# unless the name has other evidence of a person ("a note left for Mira" when Mira speaks).
LOOK_AT = re.compile(r"\b(?:look|stare|glance|smile|nod|laugh|point|shout|wave|grin|frown|glare|peer|wink|"
                     r"snap|yell|scowl)(?:s|es|ed|d|ing|ped|ted|ned)? $")
# "the chimneys of Cogsgate", "the tin roofs of Shiloh Gap": what a town or district has.
OF_PLACE = re.compile(r"\b(?:streets|roofs?|rooftops|chimneys|lamps|gates|walls|docks|wharves|outskirts|edge|heart|"
                       r"centre|center|alleys|lights|slums|markets|harbou?r|skyline|towers|spires|quarter|district|"
                       r"outskirts|mud|fog|smoke|people|folk|mayor|sheriff|council|shutters|thatch|taproom|"
                       r"common room|cellar|landlord|landlady|innkeeper|bar|doors?) of (?:the )?([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+(?: [A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+)?)\b")
_AT = re.compile(rf"\b(?:at|{LEFT_FOR}) ({_NAME})\b(?!['’])")
_TAG_LIST = re.compile(r"^\W*[\w ]{1,30}[:：]\s*[A-Z][\w-]*(?:\s*[,/|、]\s*[A-Z][\w-]*)+\W*$")
# A Latin name with a Chinese title after it: Vivian姐, Kevin总, Tony老师.
_ZH_TITLED_LATIN = re.compile(r"(?<![A-Za-z])([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]{2,})(?=姐|哥|总|老师|先生|小姐|女士|经理|主管|同学|学长|学姐)")
_CAPS_SPEAKER = re.compile(r"\b([A-Z]{3,12})(?:,\s)? (?:says|said|replies|replied|asks|asked|answers|answered|"
                           r"announces|announced|whispers|whispered|adds|added|repeats|repeated)\b")
_DOUBLE = re.compile(r"[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+-[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+")
# What a tavern or a kitchen measures out, and what it serves: a name so used is a drink or a dish.
_MEASURES = (r"half|pint|mug|cup|glass|bottle|barrel|jug|flagon|tankard|keg|cask|bowl|plate|slice|dram|shot|"
             r"jar|tin|crate|sack|loaf|wheel|helping|portion|serving")
_FARE = (r"ale|stout|beer|cider|wine|mead|whisky|whiskey|brandy|rum|gin|porter|lager|bitter|brew|drink|"
         r"pie|pudding|stew|cake|tart|bread|cheese|dish|soup|roast|special")
_SERVED = re.compile(rf"\b(?:{_MEASURES})s? of (?:the )?({_NAME})(?<!['’]s)\b|"
                     rf"\b({_NAME})(?: is|['’]s) the (?:[a-z]+ ){{0,2}}(?:{_FARE})\b")
# An animal, a vehicle or a weapon said beside a name ("Gus the dog", "Bessie, the truck", "my dog
# Gus", "a horse called Grani", "his sword Ember"): the name is that thing's, no person's.
_BEAST = (r"dog|hound|puppy|pup|cat|kitten|tomcat|horse|mare|stallion|pony|mule|donkey|goat|cow|ox|bull|pig|"
          r"sheep|ram|wolf|fox|parrot|raven|crow|hawk|falcon|owl|rabbit|hamster|ferret|snake|lizard|"
          r"truck|pickup|car|van|bus|jeep|tractor|wagon|cart|motorcycle|bike|boat|ship|ferry|barge|yacht|"
          r"plane|sword|blade|axe|spear|bow|rifle|pistol|gun")
_A_BEAST = re.compile(rf"\b(?:[Tt]he|[Mm]y|[Hh]is|[Hh]er|[Oo]ur|[Tt]heir|[Yy]our|[Aa]n?|[Oo]ld) (?:[a-z0-9'’]+[ -]){{0,2}}?"
                      rf"(?:{_BEAST}),? (?:(?:named|called|name of) )?({_NAME})\b|"
                      rf"\b({_NAME}),? (?:the|my|his|her|our|their|your|a|an|an old|old) (?:[a-z0-9'’]+[ -]){{0,2}}?(?:{_BEAST})\b")
_OWNED = re.compile(r"\b(?:[Hh]is|[Hh]er|[Tt]heir|[Ii]ts)\s+$")
_ARTICLE = re.compile(r"\b(?:[Tt]he|[Aa]n?)\s+$")
ONLY_A_PERSON = re.compile(rf" (?:{_SPEECH_AND_FACE})\b")
# "Vessaline the Pale smiles": an epithet of the name before it, not a name of its own.
_EPITHET = re.compile(r"\b[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+ the\s+$")
_OWNERS = frozenset("His Her Their Its".split())
_DETERMINER = re.compile(r"(?:\b(?:the|a|an|this|that|these|those|every|no|any|some|my|your|his|her|our|"
                         r"their|its)\s+)$", re.I)


_ABBREVIATIONS = frozenset(("St", "Mt", "Ft", "Ave", "Rd", "Blvd",   # St. Cyprian's: a saint's name, a street's
                            # feast days, which a story dates by ("since Michaelmas")
                            "Christmas", "Michaelmas", "Candlemas", "Lammas", "Martinmas", "Hallowmas"))
_CONTRACTION = re.compile(r"'(?:ll|d|re|ve|m)$|n't$")
_NOBODY = frozenset("everybody everyone somebody someone nobody anybody anyone everything something nothing "
                    "anything info".split())


def not_a_name(word: str) -> bool:
    """A capitalised word that never names a person on its own."""
    w = word.replace("’", "'").removesuffix("'s")
    bare = _CONTRACTION.sub("", w)   # "She'll", "They'd": a pronoun
    return (w in COMMON_CAPS or w in LANGUAGES or w.lower() in FOREIGN_WORDS or w in TITLES
            or w.lower() in EN_STOPWORDS or bare.lower() in EN_STOPWORDS or w.lower() in _NOBODY
            or len(w) < 2 or w.isupper() or w in _ABBREVIATIONS)


_NOT_SPEAKER = re.compile(r"(?:system|narrator|旁白|系统|assistant|user|unused|\{\{|[#\d<>\[\]{}|@])", re.I)


def is_person_speaker(name: str) -> bool:
    """A speaker name that can be a character: not a system, narrator or title card ("# 沪上旧梦1946"),
    nor a card named after a village or a town (王家湾)."""
    return bool(name.strip()) and not _NOT_SPEAKER.search(name) and not is_settlement_name(name)


def is_foreign(sentence: str) -> bool:
    """A sentence in another Latin-script language: more of its function words than English ones."""
    words = re.findall(r"[^\W\d_]+", sentence.lower())
    foreign = sum(w in FOREIGN_WORDS for w in words)
    return foreign >= 2 and foreign > sum(w in EN_STOPWORDS for w in words)


def _strip(run: str) -> str:
    words = run.replace("’", "'").removesuffix("'s").split()
    while words and (words[0] in COMMON_CAPS or words[0] in TITLES or words[0] in LEADING_PREPOSITIONS):
        words = words[1:]   # ("Behind Sule's voice": a preposition starts the sentence, not the name)
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
        # "His Buick turns up": a thing someone has, not a person acting; "the Combine keeps its
        # offices", "the Cordova has the pods": a thing with an article acting (but "the Warden
        # says", and "the Widow's voice": only a person has a voice)
        found.update(_strip(m.group(1)) for m in pattern.finditer(text)
                     if not _OWNED.search(text, max(0, m.start(1) - 8), m.start(1))
                     and not (pattern is not _POSSESSIVE and _ARTICLE.search(text, max(0, m.start(1) - 5), m.start(1))
                              and m.group(1).split()[0] not in TITLES and not ONLY_A_PERSON.match(text, m.end(1)))
                     and m.group(1).split()[0] not in _OWNERS)
    return {n for n in found if n and not any(not_a_name(w) for w in n.split())}


def _mid_sentence(word: str, text: str) -> bool:
    """Whether `word` is written capitalised somewhere other than at a sentence's start."""
    for m in re.finditer(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text):
        before = text[:m.start()].rstrip()
        if before and before[-1] not in ".!?\"“'‘:*(\n":
            return True
    return False


def _runs(sentences: list[str], lower_words: set[str]) -> tuple[Counter[str], Counter[str]]:
    """Capitalised runs written without an article, counted once per sentence: (mid-sentence,
    at a sentence start only)."""
    inner: Counter[str] = Counter()
    initial: Counter[str] = Counter()
    for s in sentences:
        here: dict[str, bool] = {}
        if _TAG_LIST.match(s):
            continue   # "Categories: Harassment, Hate." labels things, it names nobody
        for m in _CAP_RUN.finditer(s):
            before = s[:m.start()].rstrip()
            if _DETERMINER.search(s[:m.start()]) or s[m.end():m.end() + 1] in (":", "：", "-"):
                continue   # "Combine-built", "Earth-born": a word made of the name, not a mention
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
    return inner, initial


def _known_parts(text: str, known: set[str]) -> set[str]:
    """Two or three capitalised words in a row, the first a known name's first word and the last
    a known name's last ("Elwood Pike", with "Elwood" and "Mr. Pike" known): one person's full name."""
    firsts = {k.split()[0] for k in known if k and k.split()[0] not in TITLES}
    lasts = {k.split()[-1] for k in known if k}
    return {m.group(0) for m in re.finditer(r"\b[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+(?: [A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ'’]+){1,2}\b(?!['’][a-rt-z])", text)
            if m.group(0).split()[0] in firsts and m.group(0).split()[-1] in lasts
            and m.group(0) not in known}


def _mostly_articled(names: Iterable[str], text: str) -> set[str]:
    """One-word names written after "the" or "a" in at least half their mentions: things, as a
    person's name never takes an article ("the Combine", "the Cordova", "a Combine man")."""
    out = set()
    for name in (n for n in names if " " not in n and n[:1].isupper()):
        spots = [m.start() for m in re.finditer(rf"(?<![\w'’-]){re.escape(name)}(?![\w'’-])", text)]
        articled = sum(bool(_ARTICLE.search(text, max(0, at - 5), at)) for at in spots)
        if spots and articled * 2 >= len(spots) and articled >= 1:
            out.add(name)
    return out


def _has_capital(sentence: str) -> bool:
    return any(c.isupper() for c in sentence)


def latin_people(sentences: list[str], new_text: str, known: Iterable[str] = ()) -> list[str]:
    """Latin-script person names of the new text, with evidence from all `sentences`."""
    prose = [s for s in sentences if not is_foreign(s) and not is_cjk(s)]
    text = "\n".join(prose)
    # (a sentence with no capital at all, texting style, says nothing of how a word is written)
    lower_words = set(re.findall(r"(?<![A-Za-z])[a-z][a-z'’]+", "\n".join(s for s in prose if _has_capital(s))))
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
    inner, initial = _runs(prose, lower_words)
    # a run at a sentence start counts only for a name also written mid-sentence
    counts = Counter({n: c + initial[n] for n, c in inner.items()})
    strong |= {n for n in map(_strip, _ADDRESSED.findall(text)) if n and not any(not_a_name(w) for w in n.split())}
    # "in Vell", "reached Vell": a place, whatever its recurrence says; "went to Vell" unless a person's.
    placed = set(_PLACED.findall(text)) | {n for n in _GONE_TO.findall(text) if n not in strong}
    # "the Salt and Sparrow" (an inn), "Tessaract Mining" (a company): parts of other names.
    placed |= {w for m in re.finditer(r"\b[Tt]he ([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+) and ([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+)", text) for w in m.groups()}
    placed |= {m.group(1) for m in ORG_NAMED.finditer(text)}
    # A name known only by recurrence that is also "at Greyhold", "rode for Greyhold" is a place too.
    placed |= {m.group(1) for m in _AT.finditer(text) if m.group(1) not in strong
               and not LOOK_AT.search(text, 0, m.start())}
    placed |= {m.group(1) for m in OF_PLACE.finditer(text) if m.group(1) not in strong}
    placed |= set(IN_REGION.findall(text))
    # "Sublevel 3, the freight lift", "Pier 9": a word before a number names a place or a thing
    numbered = Counter(m.group(1) for m in re.finditer(r"\b([A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+) \d+\b", text))
    placed |= {m.group(0) for m in SPELLED_NUMBER.finditer(text) if m.group(1) in PLACE_NOUNS}
    placed |= {n for n, c in numbered.items() if n not in TITLES
               and c * 2 >= len(re.findall(rf"\b{re.escape(n)}\b", text))}
    # "the Widow's voice", "the Widow says": a person, article or not
    personal = {_strip(m.group(1)) for m in _POSSESSIVE.finditer(text)} | {
        _strip(m.group(1)) for m in _VERB_AFTER.finditer(text) if ONLY_A_PERSON.match(text, m.end(1))
        and not _EPITHET.search(text, max(0, m.start(1) - 20), m.start(1))}
    titled = set(titled_names(text))
    placed |= _mostly_articled({*counts, *strong} - titled - personal, text)
    # "an oath before Saint Hollin", "Saint Hollin's Eve": a saint invoked, unless they speak
    placed |= {n for n in strong if n not in personal and re.search(rf"\b(?:Saint|St\.?) {re.escape(n)}\b", text)
               and not re.search(rf"(?<!Saint )(?<!St )(?<!St\. )\b{re.escape(n)}\b", text)}
    placed |= {n for n in {*counts, *strong} if n.split()[-1] in ORG_NOUNS}   # Kestrel Dynamics: a company
    # "at Halvorsen-Tanaka", "sell it to Helix-Dyne": a double name alone is a firm's; a person's
    # double surname follows a given name or a title ("Mara Halden-Voss", "Dr. Halden-Voss")
    placed |= {n for n in {*counts, *strong} if _DOUBLE.fullmatch(n) and n not in personal and n not in titled
               and not re.search(rf"\b[A-ZÀ-ÖØ-Þ][a-zß-öø-ÿ]+\.? {re.escape(n)}\b", text)}
    # "a half of Grumbletoes", "Black Nell's the stout": a drink or a dish, poured or served
    placed |= {_strip(m.group(1) or m.group(2)) for m in _SERVED.finditer(text)} - personal
    # "Gus the dog", "Bessie, the truck": an animal or a thing, unless it talks
    placed |= {_strip(m.group(1) or m.group(2)) for m in _A_BEAST.finditer(text)} - personal
    # "as Managing Director", "to be General Manager", "the Prime Minister": an office, no one's name
    placed |= {n for n in {*counts, *strong} if " " in n and (n.split()[-1] in TITLES or n.split()[-1] in _OFFICES)}
    names = [n for n, c in counts.most_common() if (n in strong or c >= 2) and n not in placed and not made_like_a_place(n)]
    names += sorted(n for n in strong if n not in names and n not in placed and not made_like_a_place(n))
    # ("the Vantor Relay", "off Vantor Relay": a thing or a place; "relay", written in lower case
    # too: a word, not a surname)
    articled = {r for r in {*counts, *initial} if " " in r and re.search(
        rf"\b(?:[Tt]he|an?|in|at|aboard|inside|near|off|into|onto) {re.escape(r)}\b", text)}
    # (the full name may be written only where a sentence starts: "Tilly. Tilly Monk.")
    runs = [*counts, *initial]
    fuller = _written_fuller(names, runs, placed | articled | {w for w in _words(runs) if w.lower() in lower_words})
    return list(dict.fromkeys(fuller.get(n, n) for n in names
                              if re.search(rf"(?<![A-Za-z]){re.escape(n)}(?![A-Za-z])", new_text)))


def _words(runs: Iterable[str]) -> set[str]:
    return {w for r in runs for w in r.split()}


def _written_fuller(names: list[str], runs: Iterable[str], not_names: set[str]) -> dict[str, str]:
    """A one-word given name -> the one longer name the text writes it in ("Ida" -> "Ida Fenwick",
    seen once in "we meet Ida Fenwick"): a reader lists the person by the full name. Not when
    the run or a word of it is no name (`not_names`), not when two longer names start with it,
    and never for a surname alone ("Kessler" of Harlan and Tom Kessler: a family's).
    (Measured: expanding surnames too cost the held-out chats a wrong character.)"""
    longer = [r for r in runs if 2 <= len(r.split()) <= 3 and r not in not_names and not made_like_a_place(r)
              and not any(w in not_names or w in ORG_NOUNS for w in r.split())]
    out = {}
    for n in names:
        fits = [r for r in longer if r.split()[0] == n] if " " not in n else []
        if len(fits) == 1:
            out[n] = fits[0]
    return out
