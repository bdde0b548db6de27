"""The upkeep guard on written examples: good summaries, synopses, reflections and evolved
contexts (the way a capable model writes them: paraphrased, English and Chinese) pass; a date,
a loop, a prompt copy or text about something else is rejected. The offline heuristic's own
replies over the sample chats are checked in test_upkeep_guard.py and benchmarks/bench_guard.py."""
from __future__ import annotations

import pytest

from bme_cli.memory import guard
from bme_cli.prompts.compress import ColumnSpec, CompressInput, CompressNodeView, build_compress_task
from bme_cli.prompts.evolve import EvolveInput, EvolveNodeView, build_evolve_task
from bme_cli.prompts.reflect import ReflectEntity, ReflectEvent, ReflectInput, build_reflect_task
from bme_cli.prompts.synopsis import CharacterState, SynopsisEvent, SynopsisInput, build_synopsis_task

EN_EVENTS = [
    "Mira buys rope, bread and lamp oil at the east gate market before they leave Saltmere.",
    "Someone follows Rowan and Mira from the gate; Mira recognises the Gray Hand smugglers, twelve of them.",
    "Rowan and Mira cross the river ford at noon and lose their pursuers in the reeds.",
]
ZH_EVENTS = [
    "米拉在东门集市买了绳子、面包和灯油，准备离开盐沼城。",
    "有人从城门一路跟踪他们，米拉认出那是灰手走私团，一共十二人。",
    "中午两人渡过河滩，在芦苇丛里甩掉了追兵。",
]
COLUMNS = [ColumnSpec(name="summary", hint="what happened", required=True),
           ColumnSpec(name="participants", hint="names"), ColumnSpec(name="status", hint="state")]


def compress_task(events: list[str], language: str):
    nodes = [CompressNodeView(seq=i * 2 + 2, seq_range=(i * 2 + 1, i * 2 + 2),
                              fields={"summary": e, "participants": "Mira, Rowan", "status": "resolved"})
             for i, e in enumerate(events)]
    return build_compress_task(CompressInput(type_id="event", type_label="事件", columns=COLUMNS,
                                             instruction="Turn these events into plot milestones.",
                                             language=language, nodes=nodes))


def synopsis_task(events: list[str], language: str):
    return build_synopsis_task(SynopsisInput(
        language=language, current_seq=12, events=[SynopsisEvent(seq=i * 2 + 2, summary=e) for i, e in enumerate(events)],
        characters=[CharacterState(name="Mira" if language == "en" else "米拉",
                                   state="wary" if language == "en" else "警惕")]))


def reflect_task(events: list[str], language: str):
    return build_reflect_task(ReflectInput(
        language=language, events=[ReflectEvent(seq=i * 2 + 2, summary=e, participants="Mira, Rowan")
                                   for i, e in enumerate(events)],
        characters=[ReflectEntity(label="Mira", state="wary, searching for her brother Tobin")]))


def evolve_task():
    new = EvolveNodeView(ref="new", type="event", fields={"summary": "Mira learns the Gray Hand took Tobin north."})
    old = EvolveNodeView(ref="n1", type="character", fields={"name": "Tobin", "state": "missing, went north"})
    return build_evolve_task(EvolveInput(new=new, neighbours=[old]))


def summary(task, text: str) -> str | None:
    return guard.review(task, {"summary": text}, ["summary"])


GOOD_COMPRESS = [
    ("en", "After stocking up at the east gate market, Mira and Rowan are shadowed by twelve Gray Hand "
           "smugglers and shake them off at the river ford at noon."),
    ("en", "Supplies bought, the pair leave Saltmere; the Gray Hand follows until the ford."),
    ("zh", "米拉在东门集市备好物资后，发现灰手走私团一路跟踪，两人中午渡过河滩甩掉了追兵。"),
    ("zh", "离开盐沼城时被灰手走私团尾随，米拉和罗文在芦苇丛中脱身。"),
]
GOOD_SYNOPSIS = [
    ("en", "Rowan and Mira set out from Saltmere to find the Lantern of Vael and her brother. Twelve "
           "Gray Hand smugglers trailed them from the market, but they escaped across the ford; Mira stays wary."),
    ("zh", "米拉与同伴离开盐沼城，遭灰手走私团跟踪，渡过河滩后在芦苇丛中甩掉追兵，米拉依旧警惕。"),
]
GOOD_REFLECTIONS = [
    ("en", "Mira's fear for Tobin makes her reckless: she keeps leading Rowan into danger to find him."),
    ("en", "The Gray Hand is hunting the pair, so every town is a risk from now on."),
    ("zh", "米拉对弟弟的担心让她不顾危险，灰手走私团的追踪说明他们已被盯上。"),
]


@pytest.mark.parametrize("language,text", GOOD_COMPRESS)
def test_good_compression_summaries_pass(language, text):
    assert summary(compress_task(EN_EVENTS if language == "en" else ZH_EVENTS, language), text) is None


@pytest.mark.parametrize("language,text", GOOD_SYNOPSIS)
def test_good_synopses_pass(language, text):
    assert summary(synopsis_task(EN_EVENTS if language == "en" else ZH_EVENTS, language), text) is None


@pytest.mark.parametrize("language,text", GOOD_REFLECTIONS)
def test_good_reflections_pass(language, text):
    task = reflect_task(EN_EVENTS if language == "en" else ZH_EVENTS, language)
    assert guard.review(task, {"insight": text, "trigger": "", "suggestion": ""}, ["insight"]) is None


def test_a_good_evolved_context_passes():
    assert guard.review(evolve_task(), {"newContext": "Tobin was taken north by the Gray Hand."},
                        ["newContext"]) is None


@pytest.mark.parametrize("text", ["16 Mar 2025", "2025-03-16", "Sunday, March 16th, 2025 at 9:30 pm",
                                  "2025年3月16日", "三月十六日 星期日 下午", "messages 3 ~ 10", "   ", "..."])
def test_a_date_or_nothing_is_rejected(text):
    why = summary(compress_task(EN_EVENTS, "en"), text)
    assert why is not None and why.startswith("summary:")


LOOPS = [
    "Mira buys rope. " * 6,
    "The story goes on and on and on and on and on and on and on and on and on and on and on.",
    " ".join(["Rowan and Mira cross the river ford at noon"] * 3),
    "米拉买了绳子。" * 5,
    "哈哈哈哈" * 6,
    "Mira buys rope and Mira buys bread and Mira buys oil and Mira buys rope and Mira buys bread and "
    "Mira buys oil and Mira buys rope and Mira buys bread and Mira buys oil.",
]


@pytest.mark.parametrize("text", LOOPS)
def test_repetition_loops_are_rejected(text):
    assert "repeats itself" in (summary(synopsis_task(EN_EVENTS, "en"), text) or "")


def test_copying_the_instructions_or_the_input_table_is_rejected():
    task = compress_task(EN_EVENTS, "en")
    instructions = task.system.splitlines()[0]
    table = "\n".join(task.user.splitlines()[:4])
    assert "copies the prompt" in (summary(task, instructions) or "")
    assert summary(task, table) is not None
    syn = synopsis_task(EN_EVENTS, "en")
    assert summary(syn, "\n".join(syn.user.splitlines()[:3])) is not None
    assert "copies the prompt" in (summary(syn, "Keep it to at most about 120 words; do not invent facts.") or "")


def test_copying_one_input_text_is_not_a_prompt_copy():
    # the heuristic keeps the input's own sentences: that is summarising, not copying the prompt
    assert summary(compress_task(EN_EVENTS, "en"), EN_EVENTS[1]) is None


@pytest.mark.parametrize("language,text", [
    ("en", "To bake sourdough bread, feed the starter twice a day and bake it in a hot cast-iron pot."),
    ("en", "The importance of friendship and trust in difficult times is a lesson we all must learn."),
    ("zh", "制作酸面包需要每天喂养酵头两次，再放进预热好的铸铁锅烘烤四十分钟。"),
])
def test_text_about_something_else_is_rejected(language, text):
    events = EN_EVENTS if language == "en" else ZH_EVENTS
    for task in (compress_task(events, language), synopsis_task(events, language)):
        assert "shares too little" in (summary(task, text) or "")
    reflection = guard.review(reflect_task(events, language), {"insight": text}, ["insight"])
    assert reflection is not None and "shares too little" in reflection


def test_an_invented_evolved_context_is_rejected():
    assert guard.review(evolve_task(), {"newContext": "The weather in the capital was pleasant all summer."},
                        ["newContext"]) is not None


def test_an_optional_field_may_be_short_but_may_not_loop():
    task = compress_task(EN_EVENTS, "en")
    good = "After the market the Gray Hand follows Mira and Rowan to the ford."
    assert guard.review(task, {"summary": good, "status": "resolved"}, ["summary"]) is None
    assert guard.review(task, {"summary": good, "status": "resolved " * 20}, ["summary"]) is not None


def test_rejected_replies_are_invalid_replies_naming_the_task():
    err = guard.rejected(compress_task(EN_EVENTS, "en"), "summary: repeats itself")
    assert isinstance(err, guard.InvalidReplyError) and "compress reply was rejected" in str(err)
