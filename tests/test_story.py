"""Story text (bme_cli.story): what of a message's `mes` memory reads, case by case."""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings, strategies as st

from bme_cli.story import StoryOptions, StoryReader, is_person_name, story_text
from bme_cli.story.tags import Tags, TagRules

READER = StoryReader(user_name="Kai", character_name="Mira")


def story(raw: str, *, is_user: bool = False, speaker: str = "Mira", **options: object) -> str:
    """The story text of one message, names Kai (user) and Mira (character)."""
    reader = StoryReader(StoryOptions(**options), user_name="Kai", character_name="Mira") \
        if options else READER
    return reader.clean(raw, is_user=is_user, speaker=speaker)


# ---------------------------------------------------------------- reasoning blocks

@pytest.mark.parametrize("raw, text", [
    ("<think>plan</think>The door opens.", "The door opens."),
    ("<thinking>plan</thinking>The door opens.", "The door opens."),
    ("<THINKING>plan</THINKING>The door opens.", "The door opens."),
    ("<reasoning>plan</reasoning>The door opens.", "The door opens."),
    ("<Reasoning type='brief'>plan</Reasoning>The door opens.", "The door opens."),
    ("<analysis>the user wants</analysis>\nThe door opens.", "The door opens."),
    ("reasoning that began before mes</think>The door opens.", "The door opens."),
    ("The door opens.<think>cut off mid-thought", "The door opens."),
    ("<think>a <think>nested</think> The door opens.", "The door opens."),   # no nesting in custom tags
    ("<think>one</think>The door <think>two</think>opens.", "The door opens."),
])
def test_reasoning_blocks_in_every_form_are_dropped(raw: str, text: str) -> None:
    assert story(raw) == text


def test_a_message_that_is_all_reasoning_reads_as_empty() -> None:
    assert story("<think>I should greet them warmly.</think>") == ""
    assert story("<think>still thinking when the generation stopped") == ""


# ---------------------------------------------------------------- other tag blocks

@pytest.mark.parametrize("raw, text", [
    ("<safety_check>Harassment: none\nHate: none</safety_check>\nShe waves.", "She waves."),
    ("<status>HP: 30\nMP: 10</status>\nShe waves.", "She waves."),
    ("<StatusBlock>Time: dusk</StatusBlock>She waves.", "She waves."),
    ("<status_block>Time: dusk</status_block>She waves.", "She waves."),      # spellings are one name
    ("<details><summary>Status</summary>HP: 3</details>She waves.", "She waves."),
    ("<style>.panel{color:red}</style>She waves.", "She waves."),
    ("<script>alert(1)</script>She waves.", "She waves."),
    ("<!-- preset v3 -->She waves.", "She waves."),
    ("She waves.<!-- never closed", "She waves."),
    ("<plot><main_plot><event>Next: a duel</event></main_plot></plot>She waves.", "She waves."),
    ("<summary>So far: they met.</summary>She waves.", "She waves."),
    ("<options>1. Run\n2. Hide</options>She waves.", "She waves."),
    ("<reminder>Keep it PG.</reminder>She waves.", "She waves."),
    ("Harassment: none\nHate: none\n</safety_check>\nShe waves.", "She waves."),  # prefilled opener
])
def test_tag_blocks_that_hold_no_story_are_dropped(raw: str, text: str) -> None:
    assert story(raw) == text


def test_an_unclosed_block_never_swallows_the_story_after_it() -> None:
    raw = "<safety_check>Harassment: none\nHate: none\n<content>She waves.</content>"
    assert story(raw) == "She waves."


@pytest.mark.parametrize("raw, text", [
    # the closer forgotten: the story starts at the first paragraph that opens like a reply
    ("<think>\nThe user told her. Next: tension.\n\nPlan the scene in the bay.\n\n\"God,\" Imani says.",
     "\"God,\" Imani says."),
    ("<think>\n用户要去找雷叔。注意控制篇幅。\n\n【第二章·铁锈】\n\n洪崖洞早就不是游客打卡的地方了。",
     "【第二章·铁锈】\n\n洪崖洞早就不是游客打卡的地方了。"),
    ("<thinking>\nDay two.\n\n*By mid-morning the ground ends.*", "*By mid-morning the ground ends.*"),
    # plain narration before that paragraph is story too; the plan's notes are not
    ("<thinking>\nTime skip to Friday night. Let Ivy talk about Nonna.\n\n"
     "The kitchen at ten at night is a different country from the café at seven in the morning. "
     "The radio is on low.\n\n\"Oh,\" she says.",
     "The kitchen at ten at night is a different country from the café at seven in the morning. "
     "The radio is on low.\n\n\"Oh,\" she says."),
    ("<thinking>\nMorning after.\n\nRuthie knows everything already. Let her tease.\n\n"
     "Ivy should be cool and fail at it, and the whole town will know by noon.\n\n\"Oh,\" she says.",
     "\"Oh,\" she says."),
    ("<think>\n用户要去找雷叔。\n\n段督军低头看着女儿。婉宁跪得笔直，哭过的眼睛红红的，下巴却跟她哥哥一模一样地倔。\n\n"
     "“不嫁吴家？”", "段督军低头看着女儿。婉宁跪得笔直，哭过的眼睛红红的，下巴却跟她哥哥一模一样地倔。\n\n“不嫁吴家？”"),
    ("<think>\n用户要去找雷叔。\n\n接下来让雷叔出场，他应该先不认账，铺垫后面的冲突和线索。\n\n“雷叔？”",
     "“雷叔？”"),
    # with no paragraph that opens like a reply, a tail of narration of some length is the story
    ("<thinking>\nShe should wave.\n\nThe harbour wakes slowly under a grey sky, gulls circling the "
     "boats. Ivy unlocks the café and the smell of coffee spills into the street before she does. "
     "By seven the counter is full and the radio is on.",
     "The harbour wakes slowly under a grey sky, gulls circling the boats. Ivy unlocks the café and "
     "the smell of coffee spills into the street before she does. By seven the counter is full and "
     "the radio is on."),
    # a cut-off generation: reasoning to the end; a planning label is no story's start
    ("<think>\n到达蓬莱岛。需要描写蓬莱岛的环境：终年雾气、", ""),
    ("<think>\nShe should wave.\n\n**Plan:** a wave, then a nod.", ""),
    # a closer, a story tag, or a block that is no reasoning: the tag rules as they are
    ("<think>\nplan\n\n\"Hi.\"\n</think>\nShe waves.", "She waves."),
    ("<think>\nplan\n\n\"Hi.\"\n<content>She waves.</content>", "She waves."),
])
def test_an_unclosed_reasoning_block_ends_where_the_reply_begins(raw: str, text: str) -> None:
    assert story(raw) == text


# ---------------------------------------------------------------- <content> and what surrounds it

@pytest.mark.parametrize("raw, text", [
    ("「Chapter 3」\n<content>She waves.</content>\n<StatusBlock>HP: 3</StatusBlock>", "She waves."),
    ("Plan: wave.\n<content>She waves.</content>\nSummary: she waved.", "She waves."),
    ("<content>She waves.</content> between <content>He nods.</content>", "She waves.\n\nHe nods."),
    ("<content>She waves. <thinking>too cheerful?</thinking>He nods.</content>", "She waves. He nods."),
    ("<content>She waves.\n<status>HP: 3", "She waves."),                       # unclosed inside
    ("She waves.</content><StatusBlock>HP: 3</StatusBlock>", "She waves."),      # prefilled <content>
    ("<thinking>plan</thinking><content>She waves.", "She waves."),             # cut off, unclosed
    ("<thinking><content>draft</content></thinking><content>She waves.</content>", "She waves."),
    ("<CONTENT>She waves.</CONTENT>", "She waves."),
])
def test_with_content_tags_only_their_inside_is_story(raw: str, text: str) -> None:
    assert story(raw) == text


@pytest.mark.parametrize("raw, text", [
    ("「雨夜·百乐门」\n<content>她来了。</content>\n<summary>她来了。</summary>", "「雨夜·百乐门」\n\n她来了。"),
    ("Plan: go.\n[Dusk · The Old Mill]\n<content>We wait.</content>", "[Dusk · The Old Mill]\n\nWe wait."),
    # a bracketed title with one part, or a line with a sentence in it, is no scene heading
    ("【校园状态】\n<content>她来了。</content>", "她来了。"),
    ("「她说：走吧·快点。」\n<content>她来了。</content>", "她来了。"),
])
def test_a_scene_heading_before_the_story_says_where_it_is_and_is_kept(raw: str, text: str) -> None:
    assert story(raw) == text


# ---------------------------------------------------------------- HTML

@pytest.mark.parametrize("raw, text", [
    ("<p>She waves.</p><p>He <i>nods</i>.</p>", "She waves.\n\nHe nods."),
    ("She waves.<br>He nods.<br/>They part.", "She waves.\nHe nods.\nThey part."),
    ("<b>Run</b>, she <em>says</em>. <span style='color:red'>Now.</span>", "Run, she says. Now."),
    ('<div style="text-align:center">The end of the first day.</div>', "The end of the first day."),
    ('<div style="border:1px solid"><span>HP</span><span>30</span><br><span>MP</span>'
     '<span>10</span></div>She waves.', "She waves."),
    ('<div class="status"><div>HP</div><div>30</div><div>MP</div><div>10</div></div>She waves.',
     "She waves."),
    ("<table><tr><td>HP</td><td>30</td></tr></table>She waves.", "She waves."),
    ("Tom &amp; Jerry&nbsp;wave.", "Tom & Jerry\xa0wave."),
    ("<scene>The rain falls on the harbour.</scene>", "The rain falls on the harbour."),
    ("<scene>HP: 3\nMP: 4\nGold: 5</scene>She waves.", "She waves."),       # unknown tag, a panel
])
def test_html_prose_keeps_its_text_and_html_panels_go(raw: str, text: str) -> None:
    assert story(raw) == text


# ---------------------------------------------------------------- panels, fences, titles by shape

@pytest.mark.parametrize("raw, text", [
    ("She waves.\nTime: dusk\nPlace: the harbour\nCoins: 12\nMood: calm", "She waves."),
    ("她挥了挥手。\n\n时间：黄昏\n地点：码头\n金钱：12元\n心情：平静", "她挥了挥手。"),
    ("She waves.\n\n| Time | Place |\n|---|---|\n| dusk | harbour |", "She waves."),
    ("She waves.\n┌──────────┐\n│ HP 30/40 │\n└──────────┘", "She waves."),
    ("She waves.\n时间：黄昏 | 地点：码头 | 天气：晴", "She waves."),
    ("```\nTime: dusk\nPlace: harbour\n```\nShe waves.", "She waves."),
    ("```status\nHP 30\n```\nShe waves.", "She waves."),
    ("```\nThe letter read: come home, all is forgiven.\n```\nShe waves.",
     "The letter read: come home, all is forgiven.\nShe waves."),               # fenced prose stays
    ("# Nightfall Station\n\nShe waves.", "She waves."),
    ("She waves.\n\n---\n\nHe nods.", "She waves.\n\nHe nods."),
    ("She waves.\n* * *\nHe nods.", "She waves.\nHe nods."),
])
def test_panels_boards_titles_and_separators_go_by_their_shape(raw: str, text: str) -> None:
    assert story(raw) == text


# ---------------------------------------------------------------- notes

@pytest.mark.parametrize("raw, text", [
    ("Plan:\n1. Advance the plot\n2. Show her fear\n\nThe rain falls.", "The rain falls."),
    ("Okay, I'll continue the story from here.\n\nThe rain falls.", "The rain falls."),
    ("Sure, I will write the next scene.\nThe rain falls.", "The rain falls."),
    ("1. Advance the main plot\n2. Describe the harbour\n\nThe rain falls.", "The rain falls."),
    ("根据要求，本轮需要推进主线。\n1. 推进主线\n2. 描写码头\n\n雨落下来。", "雨落下来。"),
    ("好的，我将继续推进剧情。\n雨落下来。", "雨落下来。"),
    ("思考：用户想离开。\n\n雨落下来。", "雨落下来。"),
    ("The rain falls. (OOC: please write longer) She waves.", "The rain falls. She waves."),
    ("The rain falls. （OOC：回复长一点）", "The rain falls."),
    ("The rain falls. [OOC: slower pacing] She waves.", "The rain falls. She waves."),
    ("The rain falls. *OOC: note to self* She waves.", "The rain falls. She waves."),
    ("The rain falls. ((brb, dinner)) She waves.", "The rain falls. She waves."),
    ("The rain falls.\nOOC: can we skip ahead?", "The rain falls."),
    ("(OOC: this (really) matters) The rain falls.", "The rain falls."),
    ("(Got it. Notes for this beat: keep the reveal for later, it's her story.)\n\n---\n\nThe rain falls.",
     "The rain falls."),                                   # an aside about the writing, then a separator
    ("(Three days later.)\n\n---\n\nThe rain falls.", "(Three days later.)\n\nThe rain falls."),
    ("(Notes for this beat: the story turns.)\nThe rain falls.",
     "(Notes for this beat: the story turns.)\nThe rain falls."),   # no separator: not shown to be an aside
])
def test_planning_and_out_of_character_notes_go(raw: str, text: str) -> None:
    assert story(raw) == text


# ---------------------------------------------------------------- macros

@pytest.mark.parametrize("raw, text", [
    ("Hello {{user}}.", "Hello Kai."),
    ("Hello {{USER}}.", "Hello Kai."),
    ("Hello {{ user }}.", "Hello Kai."),
    ("Hello <USER>.", "Hello Kai."),
    ("Hello <user>.", "Hello Kai."),
    ("I am {{char}}.", "I am Mira."),
    ("I am {{Char}}.", "I am Mira."),
    ("I am <BOT>.", "I am Mira."),
    ("I am <CHAR>.", "I am Mira."),
    ("I am {{charIfNotGroup}}.", "I am Mira."),
    ("Roll{{random::1::2}} done.{{// a comment}}", "Roll done."),
    ("Line one{{newline}}line two", "Line one\nline two"),
])
def test_macros_in_every_spelling_become_the_names(raw: str, text: str) -> None:
    assert story(raw) == text


def test_char_in_a_group_is_the_speaker_and_unknown_names_leave_no_macro() -> None:
    assert story("I am {{char}}.", speaker="Pip") == "I am Pip."
    assert story("Hi {{char}}.", is_user=True, speaker="Kai") == "Hi Mira."
    nameless = StoryReader()
    assert nameless.clean("Hello {{user}}, I am {{char}}.") == "Hello , I am ."
    card = StoryReader(user_name="# Fog Harbour", character_name="unused")
    assert "#" not in card.clean("Hi {{user}} and {{char}}.")


# ---------------------------------------------------------------- what must survive

@pytest.mark.parametrize("raw", [
    'He said: run. "Now!"',
    "Remember: the key is under the mat.",
    '"Run!" "Where?" "Anywhere!"',
    "Alice: Run!\nBob: Where?\nAlice: Anywhere, just go!",
    "Mira: We leave at dawn\nKai: And the horses\nMira: Saddled tonight",
    '"We need three things," she says.\n- rope,\n- a lantern,\n- and luck.',
    "a < b > c, and x<y and y>z",
    "I <3 this place.",
    "The ratio was 3:2 and the time 08:30.",
    "时间过得真快。她说：“走吧。”",
    "“Halt! Papiere, bitte.” Der Offizier sah ihn an.",
    "Beware <the door> on the left.",
    "1. I remember the lake.\n2. I remember the fire.",
])
def test_ordinary_prose_is_kept_as_written(raw: str) -> None:
    assert story(raw) == raw
    assert story(raw, is_user=True, speaker="Kai") == raw


def test_a_user_message_with_a_list_or_a_plan_word_is_never_dropped() -> None:
    raw = "Plan: we sneak in at night.\n1. I take the left door\n2. you take the right"
    assert story(raw, is_user=True, speaker="Kai") == raw


def test_shape_rules_never_empty_a_message_that_had_text() -> None:
    panel = "HP: 30\nMP: 10\nGold: 5\nLevel: 3"
    assert story(panel) == panel
    assert story(panel, is_user=True) == panel
    assert story("<scene>HP: 3\nMP: 4</scene>") == "HP: 3\nMP: 4"


def test_text_is_the_raw_string_itself_when_nothing_is_cleaned() -> None:
    raw = "She waves and walks on."
    assert READER.clean(raw) is raw


# ---------------------------------------------------------------- options

def test_drop_tags_and_keep_tags_change_what_is_story() -> None:
    raw = "<memo>Bought bread.</memo><summary>They met.</summary>She waves."
    assert story(raw) == "She waves."
    assert story(raw, keep_tags=("summary",)) == "They met.\nShe waves."
    assert story(raw, keep_tags=("summary", "memo")) == "Bought bread.\n\nThey met.\nShe waves."
    assert story("<aside_note>x</aside_note>She waves.", drop_tags=("aside-note",)) == "She waves."


def test_keep_tags_are_story_beside_the_content_tags() -> None:
    raw = "<summary>They met.</summary><content>She waves.</content><status>HP 3</status>"
    assert story(raw, keep_tags=("summary",)) == "They met.\n\nShe waves."


def test_story_tags_can_be_other_names_or_none() -> None:
    raw = "Notes.\n<main_text>She waves.</main_text>"
    assert story(raw, story_tags=("main_text",)) == "She waves."
    assert story("<content>She waves.</content> after", story_tags=()) == "She waves. after"


def test_panels_and_notes_can_be_kept() -> None:
    panel = "She waves.\nTime: dusk\nPlace: harbour\nCoins: 12"
    assert story(panel, drop_panels=False) == panel
    note = "Plan: wave.\n\nShe waves. (OOC: longer)"
    assert story(note, drop_notes=False) == note


# ---------------------------------------------------------------- names

@pytest.mark.parametrize("name, person", [
    ("Mira", True), ("苏晚晴", True), ("Dr. Nadia Orlov", True), ("🐱", True),
    ("", False), ("unused", False), ("# Nightfall Station", False), ("#雾港", False),
    ("---", False), ("═══", False), ("《雾都往事》", False), ("【旁白】", False),
])
def test_card_titles_and_separators_are_not_people(name: str, person: bool) -> None:
    assert is_person_name(name) is person


def test_notes_say_what_was_dropped() -> None:
    notes: list[str] = []
    raw = "<think>x</think>Plan: go.\n<content>She waves. (OOC: hi)</content><StatusBlock>a</StatusBlock>"
    assert READER.clean(raw, notes=notes) == "She waves."
    assert notes == ["<think>", "text outside the story tags", "<StatusBlock>", "OOC note"]


# ---------------------------------------------------------------- hostile input stays linear

HOSTILE = ["<think>", "<thinking>", "</think>", "<content>", "</content>", "<status>", "<div>",
           "<div><i>", "<x>", "<x></y>", "<p>x</p>", "<a ", "<", "{{", "{{user", "<!--", "(OOC",
           "((", "*OOC: ", "```\n", "a: b\n", "时间：x\n", "|a|b|\n", "---\n", "# t\n",
           "1. plan the reply\n", "<content><think>", "<div style='a'>HP: 1\n"]


@pytest.mark.parametrize("pattern", HOSTILE)
def test_a_megabyte_of_openers_cleans_in_linear_time(pattern: str) -> None:
    # A quadratic step takes minutes on a megabyte; the bound is generous for a loaded machine.
    raw = "before " + pattern * (1_000_000 // len(pattern)) + " after"
    started = time.process_time()
    READER.clean(raw)
    assert time.process_time() - started < 5, f"cleaning {pattern!r} x 1 MB went quadratic"


def test_deep_html_nesting_costs_one_step_per_tag() -> None:
    for tag in ("div", "i", "span"):
        raw = f"<{tag}>" * 100_000 + "She waves." + f"</{tag}>" * 100_000
        started = time.process_time()
        assert READER.clean(raw) == "She waves."
        assert time.process_time() - started < 5


def test_formatting_tags_are_removed_before_the_walk() -> None:
    tags = Tags("<p>a</p><span>b</span><div>c</div><content>d</content>",
                TagRules(story=frozenset({"content"}), keep=frozenset(), drop=frozenset()))
    assert tags.name == ["div", "div", "content", "content"]  # only what shapes the story
    assert tags.text == "\na\nb<div>c</div><content>d</content>"
    assert [tags.text[s:e] for s, e in zip(tags.start, tags.end)] == [
        "<div>", "</div>", "<content>", "</content>"]


def test_scripted_dialogue_in_double_bar_cells_is_speech_not_a_panel() -> None:
    # A renderer format seen in a public project (not used to write the rules above).
    lines = ("[[character||角色名：程北极||场景：家中||动作：抱胸||表情：生气||台词：你怎么这样！]]\n"
             "[[narration||场景：家中||旁白：窗外下起了雨。]]\n[[user||场景：家中||台词：对不起。]]")
    raw = f"<content>\n程北极推开门。\n{lines}\n</content>\n<StatusBlock>时间：晚上\n地点：家中</StatusBlock>"
    assert story(raw) == f"程北极推开门。\n{lines}"


SOUP = ["<think>", "</think>", "<status>", "</status>", "<content>", "</content>", "<div>",
        "</div>", "<div style='x'>", "<i>", "</i>", "<br>", "<x>", "</x>", "<!--", "-->", "```",
        "(OOC: ", ")", "Plan: ", "1. ", "HP: 3", "|a|b|", "---", "# T", "\n", "\n\n", " ", "She",
        "waves.", "时间：夜", "“走吧。”", "a < b", "{{user}}", "<USER>"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(SOUP), max_size=40).map("".join))
def test_any_tag_soup_cleans_without_error_and_leaves_no_drop_tag(raw: str) -> None:
    text = READER.clean(raw)
    assert "<think>" not in text and "</think>" not in text
    assert "<status>" not in text and "</status>" not in text
    assert "{{user}}" not in text and "<USER>" not in text
    assert len(text) <= len(raw) + 2 * raw.count("{{user}}") + raw.count("<USER>") * 3
    assert READER.clean(raw) == text   # deterministic


def test_a_skit_marked_as_one_is_no_story():
    assert story_text("她笑了。\n（小剧场：小禄子偷偷数炭。）\n他走了。") == "她笑了。\n\n他走了。"
    assert story_text("【番外】小禄子偷吃了糕。\n正文继续。") == "正文继续。"
    assert story_text("他说（小声）：走吧。") == "他说（小声）：走吧。"


def test_a_panel_entry_with_a_note_in_brackets_is_still_an_entry() -> None:
    raw = ("他清了清嗓子：“御花园的鱼，朕替你喂过了。”\n\n【状态栏】\n📅 日期：景和三年 三月十三 戌时\n"
           "📍 所在：永寿宫·揽月轩\n👑 位分：才人 → 贵人（封号：昭）\n💗 好感度：皇上 25→35｜青黛 25→60\n💭 心情：百感交集")
    assert story(raw) == "他清了清嗓子：“御花园的鱼，朕替你喂过了。”"


def test_a_panel_entry_whose_value_is_a_note_in_brackets_is_still_an_entry() -> None:
    raw = "他走了。\n\n【状态栏】\n地点：天台\n时间：3月19日 23:05\n心情：（不写了，你懂的）\n好感度：周砚 83→88"
    assert story(raw) == "他走了。"
    raw = "She grins.\n\n```\n[Location: Murphy's, back booth] [Time: Fri 10:04 PM] [Party: Jess, Dex]\n```"
    assert story(raw) == "She grins."


def test_a_panel_entry_marked_with_a_symbol_is_an_entry_though_it_reads_like_a_sentence() -> None:
    raw = ("远处，鼓浪屿的灯火一盏一盏熄了。\n\n【状态栏】\n地点：环岛路\n时间：9月17日 周三 21:00\n"
           "好感度：季深 85/100｜余小鱼 ∞\n心情：甜\n📌 下章预告：季妈妈出院；蓝鲸那边，曹总似乎并不打算就此罢休……")
    assert story(raw) == "远处，鼓浪屿的灯火一盏一盏熄了。"
    # unmarked, a line like it is prose someone wrote with a colon (but 下章预告 is a plan's label)
    assert "曹总" in story("他想了想。\n他心里清楚：季妈妈出院；蓝鲸那边，曹总似乎并不打算就此罢休……")
    assert "曹总" not in story("他想了想。\n下章预告：季妈妈出院；蓝鲸那边，曹总似乎并不打算就此罢休……")


@pytest.mark.parametrize("raw, text", [
    ("她走了。\n\n【剧情规划】\n- 撤离当日：光头一伙抢占操场\n- 邵峰亲自随机", "她走了。"),
    ("She left.\n\n**Plan**\n- he returns at dawn\n- Mira hides", "She left."),
    # a label with a qualifier, and a preview of the next chapter
    # a panel right above the plan's label: the panel goes, and the plan with its list
    ("段承霖的脸色白得吓人。\n\n【地点：福顺码头·三号货栈｜时辰：冬月廿二 子时二刻】\n"
     "【证物：翡翠镯子，内刻“凤仪”——二姨太金凤仪之物】\n"
     "【真相：二姨太金凤仪欠胡三赌债一万二千元，偷听到私奔计划后，勾结胡三绑票勒索五万大洋】\n\n"
     "【剧情规划】\n- 下一回：回段公馆，当着督军的面对质二姨太。二姨太先哭闹，后认罪。\n"
     "- 督军的处置：把二姨太送回保定娘家，永不许进天津。\n- 最后一回：婉宁退婚；少帅和谭明珠在海河边。",
     "段承霖的脸色白得吓人。"),
    ("且听下回分解。\n\n【剧情规划·第二案预告】\n- 法租界马赛尔探长收黑钱的事被人捅了出来。\n- 天津卫要变天了。", "且听下回分解。"),
    ("“我只是想听一听。”\n下一步剧情：阿福登场；孙有道察觉账本被带走。", "“我只是想听一听。”"),
    ("She left.\n\nNext steps: he returns at dawn; Mira hides.", "She left."),
    ("他们也还活着。\n\n【第一卷·完】\n\n【下章预告】第二卷·归途：陈默伤愈，带队重返城北。", "他们也还活着。\n\n【第一卷·完】"),
    # a label with story after it is no trailing note
    ("She left.\n\nNotes\n- he returns\n\nShe came back and said hi.", "She left.\n\nNotes\n- he returns\n\nShe came back and said hi."),
])
def test_a_planning_note_after_the_story_is_dropped(raw: str, text: str) -> None:
    assert story(raw) == text


@pytest.mark.parametrize("raw, text", [
    ("🎲 Insight: 17 + 2 = 19\n*I watch the reeve.*", "*I watch the reeve.*"),
    ("*The reeve buried his wife.*\n\n🎲 *Insight check, anyone who wants*", "*The reeve buried his wife.*"),
    ("Roll: d20 = 14\nShe jumps.", "She jumps."),
    ("d6 = 4\nShe jumps.", "She jumps."),            # any die, not only a d20
    # a roll of the story's own is story
    ("They rolled into town at dawn.", "They rolled into town at dawn."),
    ("He rolls the barrel down to the dock, 3 + 4 barrels.", "He rolls the barrel down to the dock, 3 + 4 barrels."),
])
def test_a_dice_roll_is_no_story(raw: str, text: str) -> None:
    assert story(raw) == text
