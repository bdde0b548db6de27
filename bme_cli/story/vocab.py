"""The built-in tag names and phrases the story cleaner knows, by what they hold.

Tag names are compared normalised (`norm`): lower case, with `_`, `-`, `.` and `:` removed,
so `StatusBlock`, `status_block` and `status-block` are one name. Only generic names are
listed: what reasoning models, role-play presets and HTML status panels use, never a
word from one particular chat.
"""
from __future__ import annotations

import re
from functools import cache


def norm(tag: str) -> str:
    """A tag name as the cleaner compares it: lower case, without _ - . and :."""
    return re.sub(r"[_\-.:]", "", tag).lower()


def _names(text: str) -> frozenset[str]:
    return frozenset(norm(t) for t in text.split())


# The model reasoning about its reply: never story.
REASONING = _names("think thinking thought thoughts reasoning reason analysis analyse analyze cot "
                   "scratchpad reflection plan planning draft")
# Policy checks and instructions the model repeats to itself.
POLICY = _names("safety_check safety check self_check reminder reminders rules rule instruction "
                "instructions guidelines disclaimer system jailbreak")
# The model's running summary and plans for the plot: events that may not have happened.
PLOT = _names("plot plot_summary main_plot parallel_plots sub_plot subplot event events sub_event "
              "summary outline foreshadowing foreshadow recap memory memo branch branches "
              "next_plot plot_control")
# Status panels, choices, variables and HTML that decorates rather than tells.
PANEL = _names("status status_block status_bar statusbar state stats panel status_panel dashboard "
               "hud infobox info_box sidebar options option choices choice details "
               "update_variable variable variables vars "
               "style script head title meta link svg canvas button input select textarea "
               "iframe audio video img image table thead tbody tfoot tr td th caption colgroup col")
DROP = REASONING | POLICY | PLOT | PANEL

# HTML that only formats prose: the tags go, the text stays.
PROSE = _names("p i b em strong u s strike del ins mark small big sub sup span font a q cite abbr "
               "center ruby rt rp label code tt kbd nobr h1 h2 h3 h4 h5 h6 blockquote")
# HTML blocks judged by what they hold: prose is kept, a panel is dropped.
BLOCK = _names("div section article aside main header footer nav ul ol li dl dt dd pre fieldset "
               "legend figure figcaption form body html")
# Elements that never have content.
VOID = _names("br hr wbr img input meta link col area base source track embed")
LINE_BREAKS = _names("br hr p div li tr h1 h2 h3 h4 h5 h6 blockquote pre section article ul ol "
                     "dl dt dd header footer figure")
# HTML nests tags of one name (<div><div>..</div></div>); a custom tag does not: a second
# <think> inside an open one is text, so the first opener pairs with the next closer.
HTML = PROSE | BLOCK | VOID | _names("table thead tbody tfoot tr td th caption colgroup details "
                                     "summary style script head title svg button select textarea "
                                     "iframe audio video canvas option")

# A planning note before or after the story. Labels end with a colon or stand as a line of their
# own (【剧情规划】, **Plan**); openers are the phrases a model
# starts a reply-about-the-reply with; a list item is planning when it talks about the writing.
_PLAN_LABEL = (
    r"^[\[【(（*#>\s]*(?:plan|planning|plot plan|outline|thinking|analysis|reasoning|notes?|"
    r"思考|分析|计划|规划|大纲|剧情规划|剧情推进|剧情控制|剧情走向|本轮目标|本轮任务|写作要点|"
    r"要点|注意事项|思路|预告|下章预告|下回预告|下一步剧情|下一步|后续剧情|后续发展|后续安排|后续走向|"
    r"剧情发展|剧情方向|剧情安排|剧情建议|剧情提示|剧情预告|剧情伏笔|接下来的剧情|下一幕|下一章|"
    r"next time|preview|next steps?|next scene|next beat|next chapter|plot direction|story direction)"
    r"(?:[·・|｜—-][^\]】)）\n:：]{1,20})?(?:[\]】)）*\s]*(?:[:：]|$)|[\]】](?=\S))")   # 【剧情规划·第二案预告】, 【下章预告】第二卷…
_PLAN_OPENER = (
    r"^[\s*]*(?:"
    r"(?:okay|ok|sure|alright|understood|got it|certainly|of course)\b[\s,.!]*"
    r"(?:i will|i'll|i am going to|i'm going to|let me|here)\b"
    r"|(?:i will|i'll|i'm going to|let me) (?:now )?(?:continue|write|describe|advance|portray|"
    r"proceed|generate|craft|follow|start the)\b"
    r"|(?:here is|here's) (?:the|a|my) (?:next|continuation|reply|response|story|scene|part)\b"
    r"|as requested\b|per (?:the|your) (?:instructions|request)\b"
    r"|according to (?:the|your) (?:instructions|requirements|rules|setting)\b"
    r"|following (?:the|your) (?:instructions|requirements)\b"
    r"|(?:好的|好|明白|收到|了解|遵命)[\s，,。！!]*(?:我将|我会|接下来|下面|现在)"
    r"|(?:根据|按照|遵循)(?:要求|设定|指示|规则|用户|你的|您的|上文|剧情|前文)"
    r"|(?:接下来|下面|现在)(?:我将|我会|将为|为你|为您)"
    r"|(?:本轮|本次|这次)(?:回复|输出|剧情|需要|将|要)"
    r"|我(?:将|会)(?:按照|根据|为你|为您|继续(?:推进|描写|创作|撰写|输出|剧情|故事)))")
_PLAN_WORDS = (
    r"\b(?:reply|response|story|plot|scene|narrat\w*|user|character|continu\w*|instruction\w*|"
    r"requirement\w*|pacing|tone|foreshadow\w*|word count|perspective|pov|advance|describe|"
    r"portray|depict|highlight|emphasi[sz]e|introduce|ensure)\b"
    r"|剧情|回复|要求|描写|续写|创作|输出|角色|用户|设定|主线|支线|推进|扮演|字数|情节|叙事|刻画|"
    r"铺垫|伏笔|节奏|文风|视角|突出|体现|确保|避免")


@cache
def plan_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The label, opener and list-item patterns of a planning note (case-blind), compiled on
    first use: they take milliseconds to compile and only the preamble check needs them."""
    label, opener, words = (re.compile(p, re.IGNORECASE) for p in (_PLAN_LABEL, _PLAN_OPENER, _PLAN_WORDS))
    return label, opener, words
