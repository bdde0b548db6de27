"""Chinese person names with evidence, for the offline extractor.

Surname + one or two characters before an honorific or a speech verb, after an introduction
(我叫 / 在下) or a kin word, or recurring (three times); a segmenter-tagged name before an
honorific (玄真道长); a court rank after a name character (德妃, 桂嬷嬷); a master introduced as
one (师父清虚真人); always only where the candidate cuts no dictionary word (zh.py: 何应对 in
如何应对 is no name), and never a place (在云渺峰) or a company (蓝鲸游戏).
"""
from __future__ import annotations

import re
from collections import Counter

from ...text import ZH_PERSON_TITLES
from .ja_names import JA_TITLE, ja_surname_re, ja_surnames
from .nlp import CJK
from .zh import GLUED_VERBS, PROPER_TAGS, Segmentation, segment

ZH_SURNAMES = ("欧阳 上官 司马 诸葛 慕容 南宫 令狐 东方 独孤 西门 皇甫 长孙 宇文 司徒 夏侯 "
               "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶"
               "程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾"
               "毛郝龚邵万钱严覃武戴莫孔向汤柳楚萧温云凌沐洛阮燕秋厉聂祝纪舒屈项卓蓝颜宁左裴岳骆易俞甘景"
               "包冷花管房申符阎柯祁闻葛齐康伍乔翟施殷庞樊麦饶季欧霍傅连尤岑倪耿苗鲁褚卫喻柏窦奚郎鲍费廉滕毕"
               "邬卞穆湛禹狄贝臧伏谈茅闵席娄刁虞缪郁洪诸邢荣翁荀惠甄芮储靳巫栾詹蒲邰鄂赖蔺屠胥党姬冉桑濮扈冀"
               "晏瞿慕茹庾匡寇阙蔚巩晁敖辛阚鞠竺")
SURNAME_RE = "|".join(sorted(ZH_SURNAMES.split(" ")[:-1], key=len, reverse=True) + list(ZH_SURNAMES.split(" ")[-1]))
ZH_NAME_STOP = "的了在是我你他她它们这那个和与把被让给着过吗呢吧啊呀么不有没就都又还很也地得说"
NAME_CHAR = f"(?:(?![{ZH_NAME_STOP}])[{CJK}])"
# A name starts after a non-CJK character or a particle, or at a word boundary (checked in code).
_START = f"(?:(?<![{CJK}])|(?<=[的和与对向是见找问叫请给跟被把让将说道]))"
SPEECH = r"(?:说道|笑道|问道|答道|喊道|叹道|冷笑|微笑|点头|摇头|说|道|笑|问|答|喊|叫|叹|看着|望着|转身|皱眉)"
HONORIFIC = f"(?:{ZH_PERSON_TITLES})"
# What a person has (邵峰的声音, 沈砚秋的手): a possessive that names a person, as "Mira's shoulder" does.
ZH_BODY = (r"声音|眼睛|眼神|目光|脸色|脸|手腕|手指|手|肩膀|背影|嘴角|嘴唇|头发|额头|眉头|呼吸|心跳|"
            r"母亲|父亲|妹妹|哥哥|姐姐|弟弟|女儿|儿子|妻子|丈夫|师父|徒弟")
_INTRO = r"(?:我叫|我是|在下|名叫|叫做|本名|名为|我名)"
# Kin or a companion before a name introduce it, as "my brother Tobin" does (你弟弟沈砚书).
_ZH_KIN = (r"(?:弟弟|哥哥|姐姐|妹妹|父亲|母亲|儿子|女儿|丈夫|妻子|未婚夫|未婚妻|表哥|表姐|表弟|表妹|堂兄|堂弟|"
           r"师兄|师姐|师弟|师妹|朋友|同学|室友|搭档|同事|徒弟|侄子|侄女|外甥)")
# An office or a post said before the name of who holds it (刺史元琰, 戍主赵五郎, 队长李强), as a
# kin word is (弟弟沈砚书).
_OFFICE = (r"(?:刺史|都护|都督|校尉|将军|县令|知县|知府|太守|长史|主簿|捕头|总兵|参将|节度使|戍主|掌柜|账房|管家|管事|"
           r"侍卫|护卫|丫鬟|侍女|队长|局长|所长|院长|科长|处长|主任|经理|总监|教授|医生|律师|记者|秘书|助理|警官)")
# Honorifics that follow a Daoist, Buddhist or sect name rather than a surname (清风道长, 无尘大师).
_SENIOR = r"(?:前辈|学姐|学长|学妹|学弟)"
_DAO_TITLE = r"(?:真人|老祖|道长|大师|长老|掌门|仙子|上人|居士|法师|禅师|道人|散人|尊者|圣女)"
# A company after its name (蓝鲸游戏, 鹭岛互动科技): the name is no person's.
_ZH_ORG = r"(?:游戏|公司|集团|科技|传媒|互动|工作室|有限|股份|控股|银行|影业|文化)"
_MASTER = r"(?:师父|师尊|师傅|师叔|师伯|师祖|恩师|家师)"
# Second characters that make surname + one character a sect, clan or place (唐门, 林家), or a
# noun (叶子, 林子: the dictionary tags them names), not a person.
_NOT_GIVEN = "门派帮寨宗教会府城山家氏族国州县村镇子"
NAME_TAGS = frozenset({"nr", "nrt", "nrfg"})
# A kin word after a surname is the kin, not a given name (孙媳妇, 孙女).
_KIN_WORD = r"(?:媳妇|媳|女婿|孙女|孙子|儿子|女儿|儿媳|侄子|侄女|外孙|外甥)"
# Institutions, not people: 卫生院, 卫健局, 派出所.
_INSTITUTION_END = "院局所厅署"
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
        if name[0] == name[1:2] or re.fullmatch(_KIN_WORD, name[1:]) or seg.tag_at(start, end) == "nt" \
                or re.fullmatch(SPEECH, name):   # 冷笑|道: a sneer, though the dictionary tags it a name
            return   # 谢谢|许医生 ("thank you"), 孙|媳妇 (kin), 卫生院说 (an organisation the dictionary knows)
        if start > 0 and text[start - 1] in TRANSLIT and all(c in TRANSLIT for c in name):
            return   # 加|雷斯说: the end of a foreign name (加雷斯), not 雷 as a surname
        if start not in taken and _clean_name(seg, start, end) and _ok_start(seg, text, start):
            out[name] += 1
            taken.add(start)

    for m in re.finditer(f"(?:{SURNAME_RE})({NAME_CHAR}{{0,2}}?)({HONORIFIC})", text):
        if m.group(1):
            add(m.group(0)[:m.start(2) - m.start()], m.start(), m.start(2))
        elif not seg.guessed_name_beyond(m.start(), m.end()):   # 闻伯年 is no 闻伯 ("uncle Wen")
            add(m.group(0), m.start(), m.end())
    for m in re.finditer(f"((?:{SURNAME_RE}){NAME_CHAR}{{1,2}}?)(?:{SPEECH}|的(?:{ZH_BODY}))", text):
        add(m.group(1), m.start(), m.end(1))   # 邵峰说, 邵峰的声音: a person speaking, a person's body
    for m in re.finditer(f"{_INTRO}((?:{SURNAME_RE}){NAME_CHAR}{{1,2}})(?=[^{CJK}]|$)", text):
        add(m.group(1), m.start(1), m.end(1))
    for m in re.finditer(f"(?:{_ZH_KIN}|{_OFFICE})((?:{SURNAME_RE}){NAME_CHAR}{{1,2}})", text):
        # the name's end is where the words say: 沈砚书|三个 (the longer clean cut first)
        for end in range(m.end(1), m.start(1) + 1, -1):
            if _clean_name(seg, m.start(1), end):
                add(text[m.start(1):end], m.start(1), end)
                break
    for tok, nxt in zip(seg.tokens, seg.tokens[1:]):
        # 玄真道长: a word the segmenter tags as a name, before an honorific; one its model
        # guessed must be made of name characters and not start with a word (看向|宸贵妃, 夏和葛|师傅).
        # Nor may it be a verb glued to a surname (再见|见周|掌柜: "see 周掌柜"); 周掌柜 is found above.
        if tok.tag in NAME_TAGS and 2 <= len(tok.word) <= 3 and re.fullmatch(HONORIFIC, nxt.word) and (
                tok.known or re.fullmatch(f"{NAME_CHAR}+", tok.word) and not seg.starts_with_word(tok)
                and not (tok.word[0] in GLUED_VERBS and re.match(f"(?:{SURNAME_RE})", tok.word[1:]))):
            add(tok.word, tok.start, tok.end)
    # 玄火老祖 twice: a Daoist or sect name has no surname, but recurs before its honorific; so
    # does a Japanese surname before a school senior's title (九条前辈, 桐谷学姐).
    titled = Counter(m.group(1) for m in re.finditer(f"(?=({NAME_CHAR}{{2}})(?:{_DAO_TITLE}|{_SENIOR}))", text))
    for name in (n for n, c in titled.items() if c >= 2):
        for m in re.finditer(f"{re.escape(name)}(?={_DAO_TITLE}|{_SENIOR})", text):
            add(name, m.start(), m.end())
    # 师父清虚真人: a master introduced as one, once is enough, even where the name is also a
    # word (清虚, "pure and empty"): it cuts no word, and the title follows.
    for m in re.finditer(f"{_MASTER}({NAME_CHAR}{{2}})(?={_DAO_TITLE})", text):
        if m.start(1) not in taken and not seg.cuts_word(m.start(1), m.end(1)):
            out[m.group(1)] += 1
            taken.add(m.start(1))
    _add_court_names(text, seg, out, taken)
    if ja_surname_re().search(text):
        _add_japanese(text, seg, out, taken)
    _add_recurring(text, seg, out)
    dotted = _add_dotted(text, out)
    # 云渺峰 recurs like a name, but "在云渺峰" makes it a place; 蓝鲸游戏, 蓝鲸公司 make 蓝鲸 a company;
    # surname + 记 names a shop (陆记丝行), a name in 院 or 局 an institution (卫健局).
    return Counter({n: c for n, c in out.items()
                    if not (n[-1] in _PLACE_END and re.search(f"{_AT_PLACE}{re.escape(n)}", text))
                    and not re.search(f"{re.escape(n)}{_ZH_ORG}", text)
                    and n[1:2] != "记" and n[-1] not in _INSTITUTION_END
                    and not _title_of_longer(n, out, text) and not inside_dotted(n, dotted, text)
                    and not _where_or_tongue(n)})


def _where_or_tongue(name: str) -> bool:
    """包里, 马背上, 包门口: "in the yurt", "on horseback", "at the yurt's door", a word and a
    locative the dictionary may tag as a name; 马来话: a language. (皇上 is a title.)"""
    return (len(name) == 2 and name[1] in "里上下内外边" and not re.fullmatch(_SOLE_TITLES, name)
            or name.endswith(("背上", "门口")) or len(name) == 3 and name[2] == "话")


# Characters Chinese writes foreign names with (the usual transliteration set: 莱昂哈德, 玛格丽特,
# 布莱克伍德, 冯 and 德 of von and de); a run of them joined by the name dot is one person's name.
TRANSLIT = ("阿埃艾爱安昂奥巴拜班邦鲍贝本比彼毕宾波伯博布查达戴丹道德登迪蒂丁东杜多厄恩法范菲费芬丰弗"
            "福盖甘冈高戈格贡古圭哈海汉豪赫亨洪胡华霍基吉加贾杰金卡凯坎康考柯科克肯库夸奎拉莱兰朗劳勒雷"
            "黎里理利丽莉连列林琳留卢鲁路伦罗洛马玛迈麦曼芒梅蒙米密明莫墨穆纳娜奈南内尼妮纽诺欧帕潘佩彭"
            "皮珀普奇恰乔琴丘萨塞桑瑟森沙莎什舍圣施史斯松苏索塔泰坦汤唐特提托瓦万威韦维温沃乌伍西希锡夏"
            "谢辛休雅亚扬耶伊因英尤约泽扎詹珍朱卓佐冯芙茜薇蕾娅黛瑞露琪姆尔赛蒂妲")
_DOTTED = re.compile(f"(?<![{TRANSLIT}])[{TRANSLIT}]{{2,6}}(?:[·・•][{TRANSLIT}]{{1,6}}){{1,3}}(?![{TRANSLIT}])")
# A title right after a dotted name, whose first character the run may have taken (伯 of 伯爵).
_TITLE_AFTER = re.compile(f"(?:{HONORIFIC}|伯爵|侯爵|子爵|男爵|爵士|主教|大主教|骑士)")


def _add_dotted(text: str, out: Counter[str]) -> list[str]:
    """Foreign names written in Chinese with the name dot (莱昂哈德·冯·瓦尔登, 伊芙·格林), counted."""
    found = []
    for m in _DOTTED.finditer(text):
        name = m.group(0)
        if _TITLE_AFTER.match(text, m.end() - 1):
            name = name[:-1]   # 维克多·德·蒙特罗斯|伯爵: 伯 starts the title
        if not name.endswith("·"):
            found.append(name.replace("・", "·").replace("•", "·"))
    out.update(found)
    return list(dict.fromkeys(found))


def inside_dotted(name: str, dotted: list[str], text: str) -> bool:
    """Whether a name is only ever a piece of a dotted name's part (雷斯 of 加雷斯, 西莉亚 of
    塞西莉亚): the segmenter cut the foreign name, no one is called so."""
    parts = {p for d in dotted for p in d.split("·") if len(p) > len(name) and name in p}
    if not parts or name in dotted:
        return False
    inside = {m.start() + p.index(name) for p in parts for m in re.finditer(re.escape(p), text)}
    return all(m.start() in inside for m in re.finditer(re.escape(name), text))


def _title_of_longer(name: str, found: Counter[str], text: str) -> bool:
    """Whether a surname + title (云姑娘) is the end of a longer name found with that title
    (巧云姑娘: the title is 巧云's, and 云 no surname here)."""
    titled = re.fullmatch(f"((?:{SURNAME_RE}))({HONORIFIC})", name)
    return bool(titled) and any(o != name and len(o) >= 2 and o.endswith(titled.group(1))
                                and o + titled.group(2) in text for o in found)


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


def _add_japanese(text: str, seg: Segmentation, out: Counter[str], taken: set[int]) -> None:
    """Japanese names (ja_names.py): a family name and a given name before a title or a verb of
    speech (藤原千夏老师, 佐伯悠人说), and a family name alone before a title, seen twice
    (神崎同学 ... 神崎君): a Japanese setting calls people so."""
    family = ja_surname_re().pattern
    for m in re.finditer(f"({family})({NAME_CHAR}{{1,3}}?)(?={JA_TITLE}|{HONORIFIC}|{SPEECH}|的(?:{ZH_BODY}))", text):
        start, end = m.start(), m.end()
        if start not in taken and _ok_start(seg, text, start) and not seg.cuts_word(start, end):
            out[m.group(0)] += 1
            taken.add(start)
    titled = Counter(m.group(1) for m in re.finditer(f"({family})(?={JA_TITLE})", text))
    for name, count in titled.items():
        if count < 2:
            continue
        for m in re.finditer(f"{re.escape(name)}(?={JA_TITLE})", text):
            if m.start() not in taken and _ok_start(seg, text, m.start()) and not seg.cuts_word(m.start(), m.end()):
                out[name] += 1
                taken.add(m.start())


def ja_family_of(name: str, others: list[str]) -> str | None:
    """The one fuller name a Japanese family name stands for, alone or with a title (神崎,
    藤原老师 -> 神崎莲, 藤原千夏); None when no other name, or more than one, has it."""
    titled = re.fullmatch(f"(.+?)(?:{JA_TITLE}|{HONORIFIC})", name)
    family = titled.group(1) if titled and titled.group(1) in ja_surnames() else name
    if family not in ja_surnames():
        return None
    fits = {o for o in others if o.startswith(family) and len(o) > len(family) and o != name
            and not re.fullmatch(f"{re.escape(family)}(?:{JA_TITLE}|{HONORIFIC})", o)}
    return fits.pop() if len(fits) == 1 else None


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
