"""Real places a reader knows (providers/heuristic/gazetteer.py) and foreign names written in
Chinese with the name dot (zh_names.py)."""
from __future__ import annotations

from bme_cli.graph.schema import Schema
from bme_cli.prompts.extract import CreateOp, DialogueMessage, ExtractInput
from bme_cli.prompts.extract_input import schema_types
from bme_cli.providers.heuristic.extract import answer
from bme_cli.providers.heuristic.gazetteer import _names, is_known_place, latin_known_places, zh_known_places
from bme_cli.providers.heuristic.places import places
from bme_cli.providers.heuristic.zh_names import cjk_names


def _created(lines, type_id, language="en"):
    msgs = [DialogueMessage(seq=i, role="user" if user else "assistant", name=name, text=text)
            for i, (name, user, text) in enumerate(lines)]
    reply = answer(ExtractInput(messages=msgs, start_seq=0, end_seq=len(msgs) - 1, overview=[],
                                types=schema_types(Schema.default()), language=language))
    return [op.fields["name"] for op in reply.operations if isinstance(op, CreateOp) and op.type == type_id]


def test_the_lists_are_read_from_the_package_and_hold_no_comment_or_blank():
    for language in ("en", "zh"):
        names = _names(language)
        assert len(names) > 500
        assert not any(n.startswith("#") or not n.strip() or n != n.strip() for n in names)
    assert is_known_place("Missouri") and is_known_place("the Missouri") is True
    assert not is_known_place("Florence") and not is_known_place("Nice")   # a given name, a word


def test_a_listed_place_said_in_passing_is_a_place():
    assert "Missouri" in places("Thomas Mercer, late of Missouri, was found dead below the bluff.")
    assert latin_known_places("Missouri's rivers run high.") == [(0, "Missouri")]
    assert [n for _, n in latin_known_places("On New York and St. Louis the rain fell.")] == ["New York", "St. Louis"]
    assert [n for _, n in latin_known_places("Trinidad and Tobago")] == ["Trinidad and Tobago"]


def test_inside_a_longer_name_a_listed_place_is_that_names_part():
    for text in ("He rode with the Army of the Tennessee.", "The Western Pacific survey stakes.",
                 "She applied to Johnson & Wales University.", "Snow on the San Francisco Peaks."):
        assert latin_known_places(text) == [], text


def test_a_listed_name_the_text_uses_for_a_person_is_no_place():
    assert latin_known_places("Boston says nothing. We drove to Boston.") == []
    assert latin_known_places("Lady Boston smiled.") == []


def test_the_texts_own_places_come_before_listed_ones():
    found = places("Ohio folk are kind, my cousin wrote. We reached the Saltmere Harbor at dusk.")
    assert found.index("Saltmere Harbor") < found.index("Ohio")


def test_a_listed_place_is_no_character_however_it_is_written():
    lines = [("Narrator", False, "Boston people always think they know the sea. Boston people smile at "
                                 "Mira. Boston folks arrived on the morning boat.")]
    assert "Boston" not in _created(lines, "character")


def test_chinese_listed_places_are_whole_words_and_never_a_person():
    assert [n for _, n in zh_known_places("上海的大老板在外滩看黄浦江。")] == ["上海", "外滩", "黄浦江"]
    assert zh_known_places("让江南把日志拉出来。江南说：好。我们去江南。") == []
    assert "上海" in places("上海的大老板要来。")


def test_a_dotted_foreign_name_in_chinese_is_one_person_and_its_pieces_no_one():
    text = ("我是玛格丽特·布朗。奥托·冯·瓦尔登公爵抬起手，看着加雷斯·布莱克伍德。塞西莉亚小姐走来，"
            "塞西莉亚·德·蒙特罗斯行礼。银枫庄园·温室里，伊芙·格林说。")
    found = cjk_names(text)
    assert set(found) == {"玛格丽特·布朗", "奥托·冯·瓦尔登", "加雷斯·布莱克伍德", "塞西莉亚·德·蒙特罗斯", "伊芙·格林"}
    lines = [("旁白", False, text + "莱昂哈德·冯·瓦尔登转身。莱昂哈德说：走吧。")]
    people = _created(lines, "character", "zh")
    assert "莱昂哈德·冯·瓦尔登" in people and "莱昂哈德" not in people and "雷斯" not in people


def test_a_chinese_place_cut_from_a_foreign_name_is_the_whole_name_or_none():
    assert places("塞西莉亚来庄园小住。我们去洛伦萨港。在洛伦萨港的码头。") == ["洛伦萨港"]


def test_a_dotted_name_whose_given_name_speaks_is_that_speaker():
    lines = [("伊芙", True, "我是伊芙。"),
             ("旁白", False, "管家说：伊芙·格林，你去厨房。伊芙·格林点点头。格林小姐走了。")]
    people = _created(lines, "character", "zh")
    assert "伊芙·格林" not in people


def test_a_noun_in_zi_the_dictionary_tags_a_name_is_no_one():
    assert cjk_names("树上的叶子落了。叶子黄了。叶子很多。林子里很黑，林子很深。") == {}
