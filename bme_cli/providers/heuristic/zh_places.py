"""Chinese place names for the offline extractor (places.py has the English ones and the rules
both share).

A name with a place suffix after a movement verb or preposition (来到青云山, 在临安城), a word
the segmenter's dictionary tags as a place name after one (去上海), a name with an unambiguous
suffix (悦来客栈), or one seen twice (聚宝斋, 黑风寨); each must cut no dictionary word, be more
than one everyday word (在相关部门, 到顶峰 are no places) and be made of name-like words (no
pronoun, numeral, adverb or preposition inside). A bare room or building word (茶楼, 病房) is a
place where the scene goes there and the text says it twice.
"""
from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from .gazetteer import is_known_place
from .zh import GLUED_VERBS, LOCATIVES, PROPER_TAGS, segment
from .zh_names import NAME_CHAR, SURNAME_RE

# Generic place-type words of Chinese (buildings, rooms, streets); the long ones end few other words.
_ZH_LONG_SUFFIX = (r"(?:客栈|酒楼|茶馆|学院|山庄|王国|帝国|衙门|码头|诊所|仓库|宿舍楼|宿舍|办公室|图书馆|天文台|舞厅|戏院|"
                   r"银行|饭店|公园|广场|大厦|商场|会馆|书院|祠堂|胡同|弄堂|酒吧|咖啡馆|医馆|药铺|当铺|钱庄|镖局|"
                   r"赌坊|戏台|剧院|教堂|礼堂|工厂|病房|药房|急诊室|手术室|实验室|会议室|值班室|派出所|警察局|巡捕房|"
                   r"大酒店|酒店|宾馆|茶铺|茶社|茶庄|会所|书店|书局|报社|警局|公安局|事务所|研究所|基地|泊位|网吧|饭馆|"
                   r"面馆|餐厅|超市|小区|公寓|别墅|庄园|农场|工作室|影院|体育馆|寺院|道观|王府|驿站|酒肆|茶肆|青楼|赌场|"
                   r"夜总会|俱乐部|诊室|车站|机场|医院|公馆)")
ZH_SUFFIX = (rf"(?:{_ZH_LONG_SUFFIX[3:-1]}|山谷|医院|公司|大学|中学|车站|机场|酒店|宾馆|茶楼|"
             r"城|镇|村|山|寺|庙|观|府|宫|谷|岛|湖|港|林|峰|洞|庄|堂|阁|殿|楼|街|路|市|省|国|关|塔|寨|斋|潭|海|江|河|巷|坊|"
             r"轩|庵|亭|湾|岭|洲|苑|区|站|铺|院|店|馆|厅|渡|崖)")
# A name seen twice needs no preposition, but these suffixes end too many other words (盘尼西林, 大门,
# 大海, 长江): with them a name needs two characters before the suffix.
_WEAK_SUFFIX = "林国关楼市街路海江河巷坊区站铺院店馆厅湾洲苑崖"
# Suffixes that end few words but place names: two characters before one make a name anywhere.
_ZH_NAMED_SUFFIX = "(?:路|街|湖|阁|寺|庙|宫|峰|岛|港|塔|大学|中学|公园|广场)"
# A floor (三楼, 五层) is part of a building, not a place of its own.
FLOOR = re.compile(r"[一二三四五六七八九十\d]+[楼层]")
# A numbered place (三号仓库) or a proper noun that starts with a numeral (the dictionary's 十三陵).
_NUMBERED = re.compile(r"[一二三四五六七八九十百\d]+号")
# A dictionary word after a movement verb is a place when it ends in a place suffix (来到<X>路), but
# these end everyday words (世界观), and these are everyday words that end in a place suffix.
_WORD_SUFFIX_NOT = "观"
_NOT_PLACES = frozenset("江湖 江山 天堂 地狱 人间 世间 心湖".split())
# 见到, 看到, 想到 …: 到 completes a verb of seeing or thinking, and what follows is what was
# seen (见到邵峰之前), not where anyone went.
ZH_PREP = (r"(?:来到|回到|前往|离开|进入|走进|抵达|住在|赶到|返回|路过|逃到|逃往|到达|上了|藏于|赶回|冲进|跑进|躲进|闯进|"
            r"奔向|走向|在|喺|(?<![见看听想得收感受提做办])到|去|从|往)了?")   # 喺: Cantonese 在
# Bare 到 is left out here: 到天黑 is "until dark".
# 进 enters (进天津, 踏进, 开进), but not in 改进, 促进, 先进, 引进, 前进, 推进 ("improve", "advance").
# (and the verbs of holding or taking ground: 回守樊城, 攻下江陵, 屯兵汉水)
_ZH_PLACE_VERB = re.compile(r"(?:来到|回到|前往|离开|进入|走进|抵达|住在|赶到|返回|路过|逃到|逃往|到达|在|喺|去|从|往|"
                            r"攻打|进攻|攻下|攻占|驻守|镇守|退守|回守|守住|夺回|收复|占领|兵临|屯兵|驻扎|"
                            r"(?<![改促先引前推增跟精上演])进)了?$")
# What follows 站 where it means "stand" (站在, 站着, 站起来), not a station.
_STANDS = frozenset("在着起住了立定稳好出不")
# A compass direction (东南, 西北方), where the dictionary tags it a place name.
_DIRECTION = re.compile("[东南西北]{1,2}[方边面侧]?")
# Parts of speech no word of a place name has: pronoun, numeral, measure, preposition, adverb,
# conjunction, particles, locative, time.
_MOVES = frozenset("去 到 来 回 往 进 出 走 跑 逃 来到 回到 前往 赶到 走进 进入 离开 住在".split())
NOT_IN_PLACE = frozenset({"r", "m", "q", "p", "d", "c", "u", "uj", "ul", "uz", "ug", "ud", "uv", "f", "t", "y"})


def zh_building(name: str) -> bool:
    """Whether a Chinese name ends in a building's or an institution's word (段公馆, 悦来客栈):
    a place's name, never a person's."""
    return len(name) >= 3 and _zh_long_suffix_end().search(name) is not None


@lru_cache(maxsize=1)
def _zh_long_suffix_end() -> re.Pattern[str]:
    return re.compile(f"{_ZH_LONG_SUFFIX}$")


def _zh_ok(text: str, start: int, end: int, suffix_len: int, after_verb: bool = False) -> bool:
    """A suffixed candidate that cuts no word, is no everyday word (unless a movement verb brings
    one of three characters or more there: 来到<X>路) and holds no pronoun, adverb, ... (nor a
    numeral, except in a number: 三号仓库)."""
    seg = segment(text)
    word = seg.common_word(start, end)
    if seg.cuts_word(start, end) or end - start - suffix_len < 1 or FLOOR.fullmatch(text[start:end]) \
            or text[start:end] in _NOT_PLACES:
        return False
    if word and not (after_verb and end - start >= 3 and text[end - 1] not in _WORD_SUFFIX_NOT):
        return False
    numbered = _NUMBERED.match(text, start)
    head = next((t for t in seg.tokens if t.start == start), None)
    proper = head is not None and head.known and head.tag in PROPER_TAGS
    inside = [t for t in seg.tokens if t.start < end - suffix_len and t.end > start
              and not (numbered and t.end <= numbered.end() and t.tag == "m")]
    if any(t.tag.startswith("v") and t.word in _MOVES for t in inside):
        return False   # 程朗|去|派出所: someone going there, not a name
    counted = re.match(r"[一二三四五六七八九十几这那每各某此哪第]", text[start]) and not numbered and not proper
    if end - start >= 3 and seg.in_dictionary(start, end) and not counted:
        return True    # 太医院: a word of the dictionary, though the segmenter split it 太|医院
    return not any(t.tag in NOT_IN_PLACE for t in inside) and not counted


def _nouns_before_suffix(seg, start: int, stem_end: int, end: int) -> bool:
    """Whether the name [start, end) is one proper noun (南山路), or whole nouns up to `stem_end`
    with the suffix a word of its own (临江|大学): not 回去|路, 伸手|开|阁门."""
    whole = seg.tag_at(start, end)
    if whole is not None:
        return whole in PROPER_TAGS
    inside = [t for t in seg.tokens if t.start < stem_end and t.end > start]
    return (bool(inside) and inside[0].start == start and inside[-1].end == stem_end
            and all(t.tag[:1] in ("n", "s", "j") for t in inside))


def _shop_mark(word: str) -> bool:
    """祥记, 荣记: a shop's name (its owner's character and 记), which the segmenter may read as a
    verb ("remember")."""
    return len(word) == 2 and word[1] == "记" and word[0] not in "日笔登标印牢忘惦铭"


def _suffix_ok(seg, start: int, end: int, suffix_len: int, after_verb: bool) -> bool:
    """The suffix is a place word here and the name starts like one: not 门口|站 ("stand at the
    door"), 楼|化学实验室 or 宫|正殿 (a suffix cut from the word before), 揭示|基地 (a verb first,
    except where a movement verb brings a name: 到回春堂)."""
    at = end - suffix_len
    if seg.text[start] in "楼层" and start and seg.text[start - 1] in "一二三四五六七八九十0123456789":
        return False   # 三楼|化学实验室: the floor, then the room
    tail = next((t for t in seg.tokens if t.start <= at < t.end), None)
    if tail is not None and tail.tag.startswith("v") and (len(tail.word) == 1 or tail.start < at) \
            and not (tail.word == "渡" and at - start >= 2):
        return False   # the suffix is a verb, or ends one: 带|进宫 ("brought into the palace"); but 白鹭|渡, a ferry
    stem = next((t for t in seg.tokens if t.end == at), None)
    if tail is not None and tail.start == at and tail.end > end and tail.tag in ("s", "f") \
            and stem is not None and stem.known and stem.tag not in PROPER_TAGS:
        return False   # 诊所|楼上: "upstairs of the clinic" (but 山塘|街上 is on 山塘街)
    if tail is not None and tail.start == at and tail.end > end and not tail.known \
            and not re.fullmatch(f"(?:{ZH_SUFFIX})+", tail.word):   # (文昌|路站 is the road's station)
        return False   # the suffix starts a word the segmenter's model found: 嫁祸|宫嫔 (but 延安|路口)
    head = next((t for t in seg.tokens if t.start == start), None)
    if head is None:
        return True
    if len(head.word) == 1 and head.end < at and re.fullmatch(ZH_SUFFIX, head.word):
        return False
    # a movement verb may bring a name whose first word is a verb before a one-character suffix;
    # elsewhere a verb or an adverb in the stem makes the suffix its object (闲钱|坐|茶馆, 张家|欠|银行)
    if after_verb and suffix_len == 1 or seg.in_dictionary(start, end):
        return True   # (太|医院 is the dictionary's 太医院, though 太 reads as "too")
    return not any((t.tag.startswith("v") or t.tag in ("ad", "d")) and t.start >= start and t.end <= at
                   and not _shop_mark(t.word) for t in seg.tokens)


def _dictionary_places(text: str) -> list[tuple[int, str]]:
    """Words the dictionary knows as place names, after a movement verb or preposition (去上海),
    unless a place suffix follows (青云|山: the longer name is found by the suffix rules). Said
    without one they are not taken: the dictionary tags too many everyday words as places
    (东西, 壶底, 焦黑)."""
    found: list[tuple[int, str]] = []
    for t in segment(text).tokens:
        # 在襄阳、樊城: a place listed after one found is one too
        listed = bool(found) and text[found[-1][0] + len(found[-1][1]):t.start] in _LISTING
        if t.tag == "ns" and (listed or _ZH_PLACE_VERB.search(text, 0, t.start)) and _dictionary_place(text, t):
            found.append((t.start, t.word))
    return found


_LISTING = frozenset("、 和 与 及 或 或是".split())


def _dictionary_place(text: str, t) -> bool:  # noqa: ANN001 - a segmenter token
    return (t.known and len(t.word) > 1
            and not (len(t.word) == 2 and t.word[1] in LOCATIVES)   # 在雾里: "in the fog"
            and not _DIRECTION.fullmatch(t.word)   # 往东南走: a heading, no place
            and not (text[t.end:t.end + 1] in "里中下底" and not is_known_place(t.word))   # 在夕阳里, 在太阳底下
            and not FLOOR.fullmatch(t.word) and t.word not in _NOT_PLACES
            and not re.match(ZH_SUFFIX, text[t.end:t.end + 2]))


def _old_shops(text: str) -> list[tuple[int, str]]:
    """An old-style shop: a family's name, 记 or 家, what it sells and its kind (陆记丝行, 刘家酱园,
    余记盐栈), a place wherever it stands, where it cuts no word."""
    if "记" not in text and "家" not in text:
        return []
    seg = segment(text)
    return [(m.start(), m.group(0)) for m in re.finditer(f"(?:{SURNAME_RE})[记家]{NAME_CHAR}{{1,2}}?(?:行|栈|园|号|铺|坊)", text)
            if any(t.start == m.start() for t in seg.tokens) and not any(t.start < m.end() < t.end for t in seg.tokens)
            and not any(t.tag.startswith("v") and m.start() + 2 <= t.start < m.end() - 1 for t in seg.tokens)]   # 张家|欠|银行


def zh_places(text: str) -> list[tuple[int, str]]:
    found = _dictionary_places(text) + _old_shops(text)
    if not re.search(ZH_SUFFIX, text):
        return found

    titles = [m.span() for m in re.finditer(r"《[^》]*》", text)]   # 《珍珠塔》: a book or an opera

    def consider(start: int, end: int, after_verb: bool = False) -> None:
        if any(a <= start < b for a, b in titles):
            return
        seg = segment(text)
        mark = next((t for t in seg.tokens if t.start < start < t.end), None)
        if mark is not None and mark.end == start + 1 and _shop_mark(mark.word):
            start = mark.start   # 祥|记茶餐厅: the shop's name is 祥记
        while start < end - 2 and (text[start] == "喺" or text[start] == "间" and end - start >= 5):
            start += 1   # Cantonese: 喺 is 在 ("at"); 间 before a shop is "that" (北河街间福记茶庄)
        head = next((t for t in seg.tokens if t.start == start), None)
        suffix_len = len(re.search(f"{ZH_SUFFIX}$", text[start:end]).group(0))
        while head is not None and head.end < end and not seg.in_dictionary(start, end) and (
                head.tag[:1] in ("v", "p", "d") and len(head.word) == 1
                                                        or head.tag == "ns" and len(head.word) > 1
                                                        and end - head.end >= max(2, suffix_len + 1)):
            # 想去码头 / 去魏伯诊所: the verb is no part of the name; 虹口汇山码头: 虹口 is a place of its own
            # (but in 南区宿舍楼 the rest is a suffix alone).
            start = head.end
            head = next((t for t in seg.tokens if t.start == start), None)
        if head is not None and not head.known and text[start] in GLUED_VERBS and head.end - start >= 3:
            start += 1   # 说|六宫: the segmenter's model glued a verb of speech to the word after it
        elif head is None and text[start] in "去到来回往进" and any(t.start < start < t.end for t in seg.tokens):
            start += 1   # 推去|三楼病房: the end of a verb ("pushed to"), not the name's first character
        floor = FLOOR.match(text, start)
        if floor and text[floor.end():end] in ZH_ROOMS:
            return   # 三楼|病房: a room on a floor, no named place
        elif text[start] in "回去到往进" and re.match(f"(?:{SURNAME_RE})", text[start + 1:end]) and \
                zh_building(text[start + 1:end]):
            start += 1   # 回段|公馆: going back to the Duan mansion
        suffix = re.search(f"{ZH_SUFFIX}$", text[start:end])
        if suffix and suffix.group(0) in _WEAK_SUFFIX and end - start < 3:
            return   # 半路, 大门: one character before a weak suffix is an everyday word
        if not suffix or not _suffix_ok(seg, start, end, len(suffix.group(0)), after_verb):
            return
        if text[end:end + 1] == "站" and (seg.tag_at(end, end + 1) != "v" or (
                text[end - 1] in "路街道" and text[end + 1:end + 2] not in _STANDS)):
            end += 1   # 滨河路|站: the station of the road (the segmenter may read 站 as "stand")
        if _zh_ok(text, start, end, len(suffix.group(0)), after_verb):
            found.append((start, text[start:end]))

    seg = segment(text)
    for m in re.finditer(f"{ZH_PREP}({NAME_CHAR}{{1,4}}?{ZH_SUFFIX})", text):
        first = next((t for t in seg.tokens if t.start == m.start(1)), None)
        # 在打听藏剑阁: 打听 is no part of the name; but a verb of two characters right before the
        # suffix is the name's first word (到回春堂: 回春 + 堂).
        if first is None or not first.tag.startswith("v") or (
                len(first.word) >= 2 and re.fullmatch(ZH_SUFFIX, text[first.end:m.end(1)])):
            consider(m.start(1), m.end(1), after_verb=True)
    for m in re.finditer(f"(?=({NAME_CHAR}{{2,3}}{_ZH_LONG_SUFFIX}))", text):   # overlapping: 那个|三号仓库
        consider(m.start(1), m.end(1))
    # Two characters and a suffix that names a place (南山路, 知行湖, 城隍阁), where they stand whole.
    for m in re.finditer(f"(?=({NAME_CHAR}{{2}}{_ZH_NAMED_SUFFIX}))", text):
        at, end = m.start(1), m.end(1)
        if _nouns_before_suffix(seg, at, at + 2, end) and text[at:at + 2] not in _NOT_PLACES:   # not 回去|路
            consider(at, end)
    # A name seen twice needs no preposition (聚宝斋, 黑风寨).
    counts = Counter(m.group(1) for m in re.finditer(f"(?=({NAME_CHAR}{{2,3}}{ZH_SUFFIX}))", text))
    for name in (n for n, c in counts.items() if c >= 2 and n[-1] not in _WEAK_SUFFIX):
        for m in re.finditer(re.escape(name), text):
            consider(m.start(), m.end())
    return found


# Chinese words for a room or a building that a scene happens in (茶楼, 病房, 后台), written bare:
# a place, like "the chapel", when the text goes there or is there twice (ZH_SUFFIX ends names).
ZH_ROOMS = frozenset("""
茶楼 酒楼 客栈 茶馆 诊所 医馆 药铺 当铺 病房 药房 后台 戏台 书房 厨房 后院 柴房 大堂 地下室 阁楼 天台
走廊 仓库 码头 医院 车站 静室 密室 牢房 地牢 大牢 山洞 祠堂 院子 宿舍 教室 实验室 会议室 值班室 办公室
图书馆 食堂 礼堂 急诊室 手术室 护士站 停尸房 档案室 审讯室 酒吧 舞厅 戏院 剧场 庙里 破庙 船舱 甲板 渔村
后厨 雅间 包间 包厢 前厅 大厅 客厅 卧室 储藏室 机房 控制室 驾驶舱 休息室 更衣室 阳台 地窖 酒窖 暗室 石室
禅房 厢房 前院 庭院 天井 楼顶 屋顶 营帐 诊室 病区 候诊室 监控室 实验楼 宿舍楼 教学楼
图书室 阅览室 体育馆 操场 音乐室 美术室 保健室 医务室 活动室 社团教室 教员室 职员室 小卖部 游泳馆 球场
篮球场 足球场 停车场 车库 地下车库 楼梯间 电梯间 会客室 接待室 候车室 候机厅 停尸间 太平间 解剖室 法医室
便利店 咖啡店 咖啡厅 面包店 书店 花店 网吧 KTV 包房
""".split())


def zh_rooms(text: str, context: str) -> list[tuple[int, str]]:
    """Bare room and building words after a movement verb or preposition (在茶楼会合), when the
    word stands whole and is no modifier (not 茶楼老板) and the batch with its context says it twice."""
    seg = segment(text)
    # 茶楼|老板: another noun after it makes the word a modifier (the owner of the teahouse)
    words = {t.start: t.word for t, nxt in zip(seg.tokens, [*seg.tokens[1:], None])
             if t.word in ZH_ROOMS and not (nxt and nxt.tag.startswith("n") and nxt.word not in ZH_ROOMS)}
    rooms = "|".join(sorted(ZH_ROOMS, key=len, reverse=True))
    hits = [(m.start(1), m.group(1)) for m in re.finditer(f"{ZH_PREP}({rooms})", text) if words.get(m.start(1)) == m.group(1)]
    seen = Counter(t.word for t in segment(f"{context}\n{text}").tokens if t.word in ZH_ROOMS)
    return [(i, w) for i, w in hits if seen[w] >= 2]
