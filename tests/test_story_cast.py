"""A status panel's affection, relationship or characters-present entry lists the story's
people (story/cast.py); the offline extractor takes a listed name as a person where the story
names them, and stores nothing of the panel."""
from __future__ import annotations

import pytest

from bme_cli.graph.schema import Schema
from bme_cli.prompts.extract import CreateOp, DialogueMessage, ExtractInput, schema_types
from bme_cli.providers.heuristic.extract import answer
from bme_cli.story.cast import panel_people


@pytest.mark.parametrize("raw, expected", [
    ("💗 好感度：皇上 25→35｜青黛 25→60｜小禄子 20", ["皇上", "青黛", "小禄子"]),
    ("在场人物：萧寒、苏晚晴", ["萧寒", "苏晚晴"]),
    ("Affection: Mira 30 / Kael 10", ["Mira", "Kael"]),
    ("- **Characters present**: Mira, Old Pell (asleep)", ["Mira", "Old Pell"]),
    ("时间：黄昏 | 地点：码头 | 好感度：阿蛮 +5 | 天气：晴", ["阿蛮"]),   # a one-line bar: only its cast entry
    ("<b>关系</b>：宜嫔（敌对）<br>\n<b>关系</b>：宜嫔（敌对）", ["宜嫔"]),
])
def test_a_panels_cast_entry_lists_its_people(raw, expected):
    assert panel_people(raw) == expected


@pytest.mark.parametrize("raw", [
    "Relationship: 30/100", "HP: 30/40", "人物：无", "Present: unknown",
    "I have a good relationship with her: it was fine.",   # prose with a colon is no entry
    "The cast: a play of three acts",
])
def test_what_lists_nobody_gives_none(raw):
    assert panel_people(raw) == []


def _batch(panel: str, story: str) -> ExtractInput:
    raw = f"{story}\n{panel}"
    msgs = [DialogueMessage(seq=0, role="user", name="姜蘅", text="我去看看。", new=True),
            DialogueMessage(seq=1, role="assistant", name="旁白", text=story, new=True,
                            panel_people=panel_people(raw))]
    return ExtractInput(messages=msgs, start_seq=0, end_seq=1, types=schema_types(Schema.default()),
                        language="zh", user_name="姜蘅", character_name="旁白")


def _people(reply) -> list[str]:
    return [op.fields["name"] for op in reply.operations if isinstance(op, CreateOp) and op.type == "character"]


def test_a_listed_name_the_story_names_is_a_character():
    story = "青黛回来了。她蜷在西厢房的角落里，一句话也不说。"
    assert "青黛" not in _people(answer(_batch("", story)))     # no rule finds a name without a surname
    assert "青黛" in _people(answer(_batch("💗 好感度：青黛 25→60｜小禄子 20", story)))
    # a listed name the story does not name this time is not created from the panel alone
    assert "小禄子" not in _people(answer(_batch("💗 好感度：青黛 25→60｜小禄子 20", story)))
