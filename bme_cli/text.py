"""Small text helpers shared by every layer: token estimate, language detection, place and person names."""
from __future__ import annotations

import math
import re
from functools import cache, lru_cache

_LATIN = re.compile(r"[A-Za-z]")


@cache
def _cjk() -> re.Pattern[str]:
    """U+4E00..U+9FFF, compiled on first use (the class takes a millisecond to compile, and ASCII
    text, which can hold none, never asks for it)."""
    return re.compile(r"[\u4e00-\u9fff]")


def utf16_len(text: str) -> int:
    """Length as JavaScript counts it, in UTF-16 code units: a character beyond U+FFFF is two."""
    if text.isascii():
        return len(text)
    # surrogatepass: a lone surrogate read from JSON ("\ud83d") is one unit, as in JavaScript
    return len(text.encode("utf-16-le", "surrogatepass")) >> 1


def utf16_prefix(text: str, limit: int) -> str:
    """The longest prefix of text at most `limit` UTF-16 units long, never half a surrogate pair
    (JavaScript's slice(0, limit) can leave a lone high surrogate; no file could hold it)."""
    cut = text[:limit]
    while (over := utf16_len(cut) - limit) > 0:
        cut = cut[:-((over + 1) // 2)]  # at least this many characters must go, each 1 or 2 units
    return cut


def estimate_tokens(text: str) -> int:
    """ST-BME's estimate (spec §5.4): ceil(cjk/2 + other/4), cjk = U+4E00..U+9FFF, the length in
    UTF-16 units as JavaScript's `length` counts it (an emoji is two)."""
    cjk = 0 if text.isascii() else len(_cjk().findall(text))
    return math.ceil(cjk / 2 + (utf16_len(text) - cjk) / 4)


def token_units(text: str) -> int:
    """Quarter-tokens of text, UTF-16 length + CJK count, so estimate_tokens(text) ==
    ceil(token_units / 4); additive over concatenation."""
    return len(text) if text.isascii() else utf16_len(text) + len(_cjk().findall(text))


@lru_cache(maxsize=1024)   # ingest's guards ask again about the same prompt text, field after field
def detect_language(text: str) -> str:
    """'zh' when CJK characters carry at least as much as Latin letters (one CJK ~ four letters)."""
    if text.isascii() or not _cjk().search(text):
        return "en"   # without counting every letter
    cjk = len(_cjk().findall(text))
    latin = len(_LATIN.findall(text))
    return "zh" if cjk * 4 >= latin else "en"


# One character that makes a Chinese name a place: 青石 and 青石城 are one city. (The offline
# extractor's fuller list is in providers/heuristic/places.py; these are the unambiguous ones.)
_ZH_PLACE_CHARS = "城镇村山寺庙府宫谷岛湖港峰洞庄堂阁殿楼街路寨斋潭"


_ZH_SETTLEMENT = re.compile(r"[\u4e00-\u9fff]{1,3}(?:湾|沟|坳|村|屯|寨|镇|县|乡)")


def is_settlement_name(name: str) -> bool:
    """A Chinese village's or town's name (王家湾, 石桥镇): no given name ends so, so a card
    named so is the place, narrating."""
    return _ZH_SETTLEMENT.fullmatch(name.strip()) is not None


def same_place_name(a: str, b: str) -> bool:
    """Whether two normalised place names are one place written two ways: with or without "the",
    "X" for "X of Y" (salt tower / salt tower of ard), 青石 for 青石城. Each batch sees only the
    last few places, so an extractor may well create one again under its other name."""
    a, b = (x.removeprefix("the ") for x in (a, b))
    short, long = sorted((a, b), key=len)
    if not short or short == long:
        return bool(short)
    if long.startswith(short + " of ") or _shortened(short.split(), long.split()):
        return True
    return (len(short) >= 2 and len(long) == len(short) + 1 and long.startswith(short)
            and long[-1] in _ZH_PLACE_CHARS and "\u4e00" <= short[-1] <= "\u9fff")


def place_short_form(short: str, long: str) -> bool:
    """Whether normalised `short` is the last words of the place `long` ("gap" / "shiloh gap",
    "assay office" / "galena territorial assay office"): the way a text goes on naming a place
    it named in full. Only a hint, as a surname is for a person: "station" may end several
    places' names, so the caller takes it only when one stored place fits."""
    a, b = (x.removeprefix("the ").split() for x in (short, long))
    return 0 < len(a) < len(b) and b[-len(a):] == a and all(w.isalpha() for w in a)


def _shortened(short: list[str], long: list[str]) -> bool:
    """Words of a place name cut short in its other form ("med bay" / "medical bay"): as many
    words, the last the same, each other one the same or the first three letters or more."""
    return (len(short) == len(long) >= 2 and short[-1] == long[-1] and short != long
            and all(s == w or (len(s) >= 3 and w.startswith(s) and w.isalpha()) for s, w in zip(short, long)))


_ARTICLES = frozenset("the a an of and".split())
# Words that make the capitalised name after them a person ("Sister Elowen", "Captain Brannoch").
PERSON_TITLES = frozenset("""
sister brother captain lord lady sir king queen prince princess master father mother uncle aunt
dr mr mrs ms miss professor prof general commander sergeant duke duchess count countess baron
elder chief doctor madam mistress saint emperor empress inspector detective officer sheriff ser dame
constable agent nurse judge mister madame reverend guard lieutenant major colonel admiral
commissioner deputy marshal mayor governor senator abbot abbess magister warden pastor bishop
cardinal chancellor baroness marquis marquess viscount corporal private ensign aunty auntie
reeve bailiff alderman squire magistrate provost doc cap'n capt sarge
padre señor señora señorita monsieur mademoiselle herr frau signor signora ma pa
envoy arbiter ambassador consul emissary viceroy
""".split())
_SHE_TITLES = frozenset("sister lady queen princess mother aunt mrs ms miss duchess countess madam mistress "
                        "empress dame madame abbess baroness".split())
_HE_TITLES = frozenset("brother lord sir king prince father uncle mr duke count baron emperor mister ser abbot "
                       "marquis viscount".split())

# Chinese words that follow a surname as a person's title (苏姑娘, 韩主管, 雷叔), longest first
# where one starts another: the offline name rules and the name comparison below share them.
ZH_PERSON_TITLES = (r"先生|小姐|姑娘|公子|大人|师父|师傅|师兄|师姐|师妹|师弟|掌柜|道长|大侠|少侠|将军|殿下|陛下|"
                    r"夫人|老爷|少爷|长老|掌门|前辈|大哥|大姐|老板|大夫|郎中|真人|大师|寨主|捕头|教主|宗主|帮主|老祖|医生|探长|"
                    r"教授|主任|老师|同学|队长|警官|主管|经理|局长|科长|处长|院长|总监|律师|记者|护士|阿姨|叔叔|公公|嬷嬷|姑姑|"
                    r"太医|师爷|捕快|班主|贵妃|贵人|常在|答应|才人|美人|昭仪|婕妤|娘娘|格格|福晋|"
                    r"指挥使|千户|百户|总旗|档头|主事|编修|御史|知县|知府|巡抚|总督|尚书|侍郎|县令|"   # officials of old
                    r"总|队|姐|哥|叔|伯|婶|嫂|爷|姨")


@cache
def _zh_titled() -> re.Pattern[str]:
    """A one-character surname and a title (韩主管, 雷叔); compound surnames are too few to matter."""
    return re.compile(f"([\u4e00-\u9fff])(?:{ZH_PERSON_TITLES})")


def same_person_name(short: str, long: str) -> bool:
    """Whether normalised `short` may be a shorter form of the person `long`: every word of it,
    titles aside, a word of the longer name ("reyes" / "captain elena reyes"), the first three or
    four letters of a longer first name ("wen" / "wendell sikes"), or those letters as a pet
    form ("winnie" / "winifred harker"), a Chinese given name without
    its surname (砚秋 / 沈砚秋, 若雪 / 上官若雪), a familiar form (小陆 / 陆沉, 小夏 / 闻知夏, 夏夏), or a
    surname with a title (韩主管 / 韩铮). Only a hint: a surname is shared by a family, so
    the caller takes it only when one stored name fits."""
    if not short or short == long:
        return False
    if not long.isascii() and _cjk().search(long):
        if len(short) == 2 and len(long) - len(short) in (1, 2) and long.endswith(short):
            return True
        if len(short) == 2 and (short[0] in "老小阿" or short[0] == short[1]) and 2 <= len(long) <= 4 \
                and short[1] in (long[0], long[-1]):
            return True   # 小陆 / 陆沉, 小夏 / 闻知夏, 夏夏: a familiar form of the surname or the given name
        if len(short) == 2 and short[1] == "儿" and 3 <= len(long) <= 4 and short[0] == long[-1]:
            return True   # 宁儿 / 段婉宁: the given name's last character and 儿
        # 韩主管 / 韩铮, 唐队 / 唐队长: a surname with a title, and that surname's fuller name or title
        titled = _zh_titled().fullmatch(short)
        return bool(titled) and long.startswith(titled.group(1)) and 2 <= len(long) <= 5
    # Titles aside ("captain reyes" / "elena reyes", "dr. orlov" / "doctor nadia orlov"), but not
    # Mr. and Mrs. Crane; "the ard" is no fuller name of "ard": the extra words must be names.
    words, part = _name_words(long), _name_words(short)
    first = long.split()[0] if long.split() else ""
    stem = _NICKNAME_END.sub(r"\1", short) if len(short) >= 5 else short
    if " " not in short and short.isascii() and 3 <= len(stem) <= 4 and len(first) >= 5 and first.startswith(stem) \
            and short not in PERSON_TITLES:
        return True   # a nickname: "wen" / "wendell sikes", "mel" / "melanie", "winnie" / "winifred"
    if _pet_of(short.split()[0], first) and short.split()[1:] in ([], long.split()[1:]):
        return True   # "ruthie" / "ruthie coffin" of "ruth coffin", "tommy" / "tom": the given name with -ie, -y
    genders = {g for name in (short, long) for w in name.replace(".", " ").split() for g, titles in
               (("f", _SHE_TITLES), ("m", _HE_TITLES)) if w in titles}
    return bool(part) and part <= words and not (words - part) & _ARTICLES and len(genders) < 2


# A pet form's ending: "winnie" is "win", "junie" "jun", "bobby" "bob" (a doubled letter once).
_NICKNAME_END = re.compile(r"([a-z])\1?(?:ie|y|ey)$")


# English pet forms that are no prefix of the name (Nell is Eleanor, Hal is Henry): the classic
# hypocoristics, any story's, not one chat's.
_PET_NAMES = {
    "nell": ("eleanor", "helen", "ellen"), "nellie": ("eleanor", "helen", "ellen"), "hal": ("henry", "harold"),
    "harry": ("henry", "harold"), "kit": ("christopher", "katherine", "catherine"), "bess": ("elizabeth",),
    "bessie": ("elizabeth",), "betsy": ("elizabeth",), "beth": ("elizabeth",), "liz": ("elizabeth",),
    "lizzie": ("elizabeth",), "peggy": ("margaret",), "meg": ("margaret",), "maggie": ("margaret",),
    "dick": ("richard",), "rick": ("richard", "frederick"), "bill": ("william",), "billy": ("william",),
    "will": ("william",), "bob": ("robert",), "bobby": ("robert",), "rob": ("robert",), "jack": ("john",),
    "johnny": ("john", "jonathan"), "ned": ("edward", "edmund"), "ted": ("edward", "theodore"),
    "teddy": ("edward", "theodore"), "molly": ("mary",), "polly": ("mary",), "sally": ("sarah",),
    "jim": ("james",), "jimmy": ("james",), "kate": ("katherine", "catherine"), "katie": ("katherine", "catherine"),
    "sandy": ("alexander", "alexandra"), "tony": ("anthony",), "georgie": ("georgiana", "georgina", "george"),
    "fanny": ("frances",), "jenny": ("jennifer", "jane"), "dolly": ("dorothy",), "dot": ("dorothy",),
    "sukey": ("susan", "susanna"), "patsy": ("patricia", "martha"), "hank": ("henry",), "chuck": ("charles",),
    "charlie": ("charles", "charlotte"), "lottie": ("charlotte",), "jo": ("josephine", "joanna"),
    "ben": ("benjamin",), "benji": ("benjamin",),
}


def _pet_of(pet: str, given: str) -> bool:
    """Whether `pet` is `given` with a pet form's ending ("ruthie" / "ruth", "tommy" / "tom"),
    or one of its classic pet forms ("nell" / "eleanor", "hal" / "henry")."""
    if given in _PET_NAMES.get(pet, ()):
        return True
    return (pet.isascii() and pet.isalpha() and len(pet) > len(given) >= 3 and pet.startswith(given)
            and _NICKNAME_END.sub(r"\1", pet) == given)


def _name_words(name: str) -> set[str]:
    return {w for w in name.replace(".", " ").split() if w not in PERSON_TITLES}
