"""A status panel's location entry is evidence of the scene's place (story/scene.py), and
the offline extractor makes it the event's place, while nothing else of the panel is stored."""
from __future__ import annotations

import pytest

from bme_cli.graph.schema import Schema
from bme_cli.prompts.extract import CreateOp, DialogueMessage, ExtractInput, schema_types
from bme_cli.providers.heuristic.extract import answer
from bme_cli.story.scene import panel_locations


@pytest.mark.parametrize("raw, expected", [
    ("Date: Tuesday\nLocation: The Salt and Sparrow, common room\nWeather: rain", [("Salt and Sparrow", "common room")]),
    ("<status>\n<b>地点</b>：学生会办公室<br>\n<b>时间</b>：夜</status>", [("学生会办公室",)]),
    ("地点：学生会办公室 → 东区宿舍", [("东区宿舍",)]),          # a move: where the scene ends up
    ("场景：东区宿舍 值班室", [("东区宿舍", "值班室")]),          # a place, then its room
    ("时间：黄昏 | 地点：码头 | 天气：晴", [("码头",)]),          # a one-line status bar
    ("[Location: Murphy's, back booth] [Time: Fri 10:04 PM] [Party: Jess]", [("Murphy's", "back booth")]),
    ("- **Location**: Old Mill\n- HP: 30/40", [("Old Mill",)]),
    ("📍 Current location: Pier 9 / east side", [("Pier 9",)]),
    ("Location: Old Mill\n...\nLocation: Old Mill", [("Old Mill",)]),
    ("Location: Paget Ward, St. Jude's Infirmary", [("Paget Ward", "St. Jude's Infirmary")]),
    ("Location: a hansom on Tinker's Bridge", [("Tinker's Bridge",)]),
    # off a place; a place and what it is doing
    ("📍 Location: off Port Anselm, Fort Clement firing", [("Port Anselm", "Fort Clement")]),
    ("Location: The Ring building", [("Ring building",)]),
    ("<div>❤️ HP 12/20 | 🗺️ Brindlemoor, the Drowsy Wyvern</div>", [("Brindlemoor", "Drowsy Wyvern")]),   # a map key
    ("🗺️ Stillmere shore", [("Stillmere",)]),                          # which side of it
    # the parts of a path, without what only locates the scene inside one
    ("📍 所在：永寿宫·揽月轩（院门内）", [("永寿宫", "揽月轩")]),
    ("地点：下城区·十八梯·陆氏调查事务所", [("下城区", "十八梯", "陆氏调查事务所")]),
    ("<b>📍</b> 枫林苑7栋1602<br>", [("枫林苑",)]),                 # the pin is the key; a flat's number
    ("📍地点：青澜大学·知远楼B302<br>", [("青澜大学", "知远楼")]),     # a room's number
    ("📍 实验楼3F 化学实验室", [("实验楼", "化学实验室")]),           # a floor
    ("📍 地点：百乐门 二楼包厢", [("百乐门", "包厢")]),
    ("📍 地点礼查饭店", [("礼查饭店",)]),                          # the key, with no colon after it
    ("📍 地点：福开森路十七号 魏伯诊所", [("福开森路", "魏伯诊所")]),   # a house number after its street
    ("📍 地点：十六铺码头 七号仓库外", [("十六铺码头", "七号仓库")]),     # outside it
    ("地点：苏州·玄妙观前·玉成茶楼", [("苏州", "玄妙观", "玉成茶楼")]),     # in front of it
    ("地点：苏州·阊门内专诸巷·葛家机坊", [("苏州", "阊门", "专诸巷", "葛家机坊")]),   # a gate, the lane inside it
])
def test_a_panels_location_entry_names_the_place(raw, expected):
    assert panel_locations(raw) == expected


@pytest.mark.parametrize("raw", [
    "Where: unknown", "地点：未知", "Location: ?",
    "I looked at the place: it was empty.",          # prose with a colon is no entry
    "She said: \"Meet me at the docks.\"",
    "Location: " + "x" * 60,                         # too long to be a name
])
def test_what_names_no_place_gives_none(raw):
    assert panel_locations(raw) == []


def _panel_batch(panel: str, story: str, language: str = "en") -> ExtractInput:
    raw = f"{story}\n{panel}"
    msgs = [DialogueMessage(seq=0, role="user", name="Rowan", text="I follow her.", new=True),
            DialogueMessage(seq=1, role="assistant", name="Mira", text=story, new=True,
                            panel_places=panel_locations(raw))]
    return ExtractInput(messages=msgs, start_seq=0, end_seq=1, types=schema_types(Schema.default()),
                        language=language, user_name="Rowan", character_name="Mira")


def _places(reply) -> list[str]:
    return [op.fields["name"] for op in reply.operations if isinstance(op, CreateOp) and op.type == "location"]


def test_the_panels_place_is_where_the_event_happened():
    reply = answer(_panel_batch("Location: The Old Mill, outside\nMood: tense",
                                "Mira lifts the lamp. Someone has been here tonight."))
    assert _places(reply) == ["Old Mill"]
    (event,) = [op for op in reply.operations if isinstance(op, CreateOp) and op.type == "event"]
    assert ("loc0", "occurred_at") in {(link.target_ref, link.relation) for link in event.links}
    assert "Mood" not in event.fields["summary"] and "outside" not in event.fields["summary"]


def test_the_panels_place_adds_to_the_places_the_text_names():
    reply = answer(_panel_batch("Location: The Old Mill",
                                "Mira points across the marsh. \"The Ruined Tower of Vael is where they took "
                                "him, and the Silver Harbor is where we meet.\""))
    assert _places(reply)[0] == "Old Mill"
    assert {"Ruined Tower of Vael", "Silver Harbor"} <= set(_places(reply))


@pytest.mark.parametrize("panel", ["Location: Mira", "Location: night", "Location: the door", "地点：三楼"])
def test_a_panel_value_that_is_no_place_is_not_stored(panel):
    language = "zh" if "地点" in panel else "en"
    assert _places(answer(_panel_batch(panel, "Mira waits by the window." if language == "en" else "她在窗边等着。",
                                       language))) == []


def test_a_tables_location_column_names_the_place():
    table = ("| 时间 | 地点 | 在场 |\n|---|---|---|\n| 10月14日 16:40 | 闻记茶铺·二楼雅间 | 闻知夏 |\n"
             "| 10月14日 18:00 | 后厨 | 葛师傅 |")
    assert panel_locations(table) == [("闻记茶铺", "雅间"), ("后厨",)]
    assert panel_locations("| Location | The Old Mill |\n| Mood | tense |") == [("Old Mill",)]
    assert panel_locations("| a | b |\n| 地点 | 码头 |") == [("码头",)]
    assert panel_locations("| 时间 | 地点 |\n| 早上 | 码头 |") == []   # no rule row, no key | value row
    assert panel_locations("| 地点 | 人物 |\n|---|---|\n| 码头 | 阿坤 |") == [("码头",)]   # a header, not a key


def test_a_panel_may_state_a_place_the_text_rules_would_doubt():
    # a title, a numeral or a locative first: the panel's key says it is a place
    for panel, place in [("Location: Saint Ebba's House", "Saint Ebba's House"), ("地点：7号泊位", "7号泊位"),
                         ("地点：下城区", "下城区"), ("Location: path above the Needle's Eye", "Needle's Eye")]:
        language = "zh" if "地点" in panel else "en"
        assert _places(answer(_panel_batch(panel, "她在窗边等着。" if language == "zh" else "Mira waits.",
                                           language)))[0] == place


def test_a_time_is_no_place():
    from bme_cli.providers.heuristic.places import places
    assert places("One magister would come up the pass in the Thawing Month with six swords.") == []


@pytest.mark.parametrize("panel, places", [
    ("📍 所在：永寿宫·揽月轩", ["揽月轩", "永寿宫"]),           # Chinese goes from the largest place down
    ("📍 所在：永寿宫·正殿", ["永寿宫"]),                      # an everyday word: a room of the palace
    ("📍 地点：华联超市 · 后仓库", ["华联超市"]),                 # words that only say which room
    ("地点：吴江·震泽镇·永昌丝行", ["永昌丝行", "震泽镇", "吴江"]),    # a town, though the dictionary has it as a word
    ("地点：段公馆门口·老槐树下", ["段公馆"]),                       # a spot under a tree in front of it
    ("📍 地点：解放大道 · 一家药店", ["解放大道"]),                     # "a pharmacy": no name
    ("📍地点：县人民医院·三楼病房外走廊", ["县人民医院"]),              # the corridor outside a ward
    ("地点：下城区·十八梯·陆氏调查事务所", ["陆氏调查事务所", "十八梯", "下城区"]),
    ("Location: Paget Ward, St. Jude's Infirmary", ["Paget Ward", "St. Jude's Infirmary"]),
    ("Location: Saint Ebba's House, the guest hall", ["Saint Ebba's House"]),   # lower case: its room
    ("Location: back stair, St. Jude's Infirmary", ["St. Jude's Infirmary"]),
])
def test_each_part_of_a_panels_path_that_names_a_place_is_one_the_scene_first(panel, places):
    language = "zh" if "：" in panel else "en"
    reply = answer(_panel_batch(panel, "她在窗边等着。" if language == "zh" else "Mira waits.", language))
    assert _places(reply) == places
    (event,) = [op for op in reply.operations if isinstance(op, CreateOp) and op.type == "event"]
    assert ("loc0", "occurred_at") in {(link.target_ref, link.relation) for link in event.links}


def test_a_possessive_place_is_the_place_it_is_short_for():
    from bme_cli.providers.heuristic.places import _one_place
    assert _one_place("St. Jude's", "St. Jude's Infirmary") and _one_place("Saint Ebba's House", "Saint Ebba's")
    assert not _one_place("Vell", "Vell Infirmary") and not _one_place("St. Jude's", "St. Jude's Day")
