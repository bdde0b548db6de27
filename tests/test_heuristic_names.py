"""Evidence for names and places, first person with agreement, states, rules and threads (offline)."""
from __future__ import annotations

import pytest

from bme_cli.graph.schema import Schema
from bme_cli.prompts.extract import (CreateOp, DialogueMessage, ExtractInput, OverviewGroup, OverviewNode,
                                     UpdateOp, schema_types)
from bme_cli.providers.heuristic.extract import addressees, answer
from bme_cli.providers.heuristic.names import latin_people, with_title
from bme_cli.providers.heuristic.zh_names import cjk_names
from bme_cli.providers.heuristic.person import spoken_to, third_person
from bme_cli.providers.heuristic.places import path_places, places
from bme_cli.providers.heuristic.rules import completes, is_rule, threads
from bme_cli.providers.heuristic.states import Referents, state_changes


def _reply(lines, language="en", overview=()):
    msgs = [DialogueMessage(seq=i, role="user" if user else "assistant", name=name, text=text)
            for i, (name, user, text) in enumerate(lines)]
    return answer(ExtractInput(messages=msgs, start_seq=0, end_seq=len(msgs) - 1, overview=list(overview),
                               types=schema_types(Schema.default()), language=language))


def _created(reply, type_id):
    return [op.fields for op in reply.operations if isinstance(op, CreateOp) and op.type == type_id]


# -- Latin names -------------------------------------------------------------------------------
def test_capitalised_words_without_evidence_are_not_people():
    text = ["Please answer in English, not in English slang.", "Sie sagte: Ich habe die Karte, und Sie?",
            "Ich weiß nicht, wo die Karte ist.", "Harassment: none. Hate: none.", "Categories: Harassment, Hate.",
            "The Lantern glows; I lift the Lantern and the lantern hums."]
    assert latin_people(text, "\n".join(text)) == []


def test_names_with_evidence_are_people():
    text = ["My name is Rowan.", "Captain Brannoch sold the crew.", "The Widow says nothing and fires.",
            "A bolt slams into Mira's shoulder.", "My brother Tobin vanished.", "Then we ask Oswin.", "Oswin agrees."]
    assert set(latin_people(text, "\n".join(text))) == {"Rowan", "Brannoch", "Widow", "Mira", "Tobin", "Oswin"}


def test_a_thing_with_an_article_is_no_person_unless_it_does_what_only_a_person_does():
    text = ["The Admiralty turned him out.", "Then the Admiralty wrote again.", "The Cordova arrives at dawn.",
            "We wait for the Cordova.", "Fourth-generation, Combine-built.", "It is Combine-owned, Combine-run."]
    assert latin_people(text, "\n".join(text)) == []
    text = ["The Widow says nothing.", "The Widow spins.", "Her lieutenant bows to the Widow.", "The Widow's voice is cold."]
    assert latin_people(text, "\n".join(text)) == ["Widow"]


def test_a_shop_called_by_its_owners_name_and_a_name_joined_by_an_ampersand_are_places():
    assert places("At noon Delphine and I walk into Mulcahy's. Bev from Mulcahy's sent us.") == ["Mulcahy's"]
    assert places("We had supper at Mira's house.") == []        # what follows is Mira's: her house
    assert places("He applied to Johnson & Wales University in Providence.") == [
        "Johnson & Wales University", "Providence"]
    text = ["On November ninth, 1979, St. Cyprian's burned.", "The nurses of St. Cyprian's told it."]
    assert latin_people(text, "\n".join(text)) == []              # St: an abbreviation, no one


def test_names_with_accents_are_whole_and_spanish_or_french_titles_make_people():
    assert places("We rode to Santa Inés, then on to Zürich.") == ["Santa Inés", "Zürich"]
    text = ["José Ortega smiled.", "Padre Anselmo nods.", "I sent it south to Señor Rafael."]
    assert set(latin_people(text, "\n".join(text))) == {"José Ortega", "Anselmo", "Rafael"}
    assert places("I sent it south to Señor Rafael.", people=["Rafael"]) == []


def test_landscape_words_head_places_and_ma_is_a_title():
    text = ['"They found him at the foot of Cutter\'s Rock," I said.', "Below Cutter's Rock the creek ran dry.",
            "Ma Hollis poured the whiskey.", "Ma Hollis nods."]
    assert latin_people(text, "\n".join(text)) == ["Hollis"]
    assert places("We rode out past Cutter's Rock to the Bitter Springs Ranch.") == ["Cutter's Rock", "Bitter Springs Ranch"]


def test_a_company_or_a_numbered_thing_is_no_person():
    text = ["Kestrel Dynamics wants a file.", "Kestrel Dynamics pays well.", "Sublevel 3, the freight lift.",
            "We meet at Sublevel 3.", "Sublevel 3 floods."]
    assert latin_people(text, "\n".join(text)) == []
    assert places("We could sell it to Kestrel. Kestrel Dynamics pays well.") == []   # the company, said short
    # yards, arms makers and travelling shows are firms too
    text = ["Haldane Yards built her.", "Haldane Yards wants the hull back.", "Beckett's Greater Shows beat us."]
    assert latin_people(text, "\n".join(text)) == []


def test_a_place_kind_with_a_spelled_number_or_a_place_word_at_its_end_is_no_person():
    assert places("We meet on Deck Nine. The sled waits on Deck Nine.") == ["Deck Nine"]
    assert places("We crossed at Crane's Ferry and slept in the Long Gallery.") == ["Crane's Ferry", "Long Gallery"]
    text = ["Deck Nine is quiet.", "Deck Nine hums.", "Calder's Rest waits.", "Calder's Rest sleeps.",
            "Stillwater Chamber echoes.", "We enter the Stillwater Chamber."]
    assert latin_people(text, "\n".join(text)) == []


def test_a_town_named_like_a_town_is_no_person_and_outside_it_is_a_place():
    text = ["We'll never make Galesburg.", "Galesburg is five weeks off.", "Eddyville sleeps.",
            "I lived outside Eddyville.", "Neville waved.", "Neville laughed."]
    assert latin_people(text, "\n".join(text)) == ["Neville"]
    assert places("My uncle has a place outside Eddyville.") == ["Eddyville"]


def test_a_compass_word_that_starts_a_place_is_its_name_and_an_apostrophe_cuts_no_name():
    assert places("We drove down North Main Road to the East Wing.") == ["North Main Road", "East Wing"]
    assert places("Go North, then West.") == []
    assert places("We waited by the Kesh'val's lock, near the Kesh'val.") == []   # no "Kesh"


def test_a_diplomats_title_alone_is_no_person_and_names_whom_it_titles():
    text = ["The Envoy waits.", "Envoy Castellan bows.", "The Arbiter speaks.", "Castellan smiles."]
    assert latin_people(text, "\n".join(text)) == ["Castellan"]


def test_someone_gone_to_and_greeted_is_a_person_not_a_place():
    text = ["I go to Niamh first and hold her.", '"Hiya, Niamh."', "The sun is up."]
    assert latin_people(text, "\n".join(text)) == ["Niamh"]
    text = ["We went to Vell at dawn.", "Vell was quiet.", "Vell slept."]
    assert latin_people(text, "\n".join(text)) == []   # gone to, and nothing says a person


def test_a_word_and_a_locative_or_a_language_is_no_chinese_name():
    from bme_cli.providers.heuristic.zh_names import cjk_names
    text = "斯琴坐在包里。包里没人。她把他接进包里。马背上横着羊。马背上的人。马背上很冷。他会讲马来话。马来话说得好。马来话是他学的。"
    assert not set(cjk_names(text)) & {"包里", "马背上", "马来话"}
    assert "皇上" in cjk_names("皇上说：“退下。”皇上笑了。皇上走了。")


def test_an_officials_title_of_old_follows_a_surname_whole():
    from bme_cli.providers.heuristic.zh_names import cjk_names
    text = "韩指挥使点头。韩指挥使说：“到此为止。”"
    assert cjk_names(text) == {"韩指挥使": 2}          # not 韩指挥, cut before 使


def test_the_sun_and_an_adverb_before_a_place_name_are_no_places():
    assert places("勺里的蜜在太阳底下透着光。") == []
    assert places("他七十六了，耳朵比谁都灵。") == [] and places("他去都灵读书。") == ["都灵"]


def test_a_card_named_after_a_village_is_no_speaking_person():
    from bme_cli.providers.heuristic.names import is_person_speaker
    assert not is_person_speaker("王家湾") and not is_person_speaker("石桥镇")
    assert is_person_speaker("李守仁") and is_person_speaker("苏晴")


def test_a_saint_sworn_by_is_no_character_unless_they_speak():
    text = ["He has sworn an oath before Saint Hollin.", "Nobody has crossed since Saint Hollin's Eve."]
    assert latin_people(text, "\n".join(text)) == []
    text = ["Saint Hollin says nothing.", "Saint Hollin smiles."]
    assert latin_people(text, "\n".join(text)) == ["Hollin"]
    assert places("Her mother died at Candlemas, and he went to Kingsport.") == ["Kingsport"]   # a feast day
    text = ["The rents fall due at Michaelmas.", "Since Michaelmas nobody has paid.", "Then Thomas says he paid."]
    assert latin_people(text, "\n".join(text)) == ["Thomas"]                       # a feast day is no one


def test_a_place_after_a_motion_word_is_not_a_person_however_often_it_recurs():
    text = ["The night train to Vell leaves.", "I'm going to Vell to work.", "We reach Vell by dawn."]
    assert latin_people(text, "\n".join(text)) == []


def test_a_name_only_recurring_is_a_place_where_it_is_somewhere_to_be_or_go():
    text = ["Ser Aldous has business at Quellmoor.", "At dawn Quellmoor was quiet.",
            "He sailed for Tarn Isle.", "Then Tarn Isle burned."]
    assert latin_people(text, "\n".join(text)) == ["Aldous"]
    # "look at", or a name with a person's evidence, stays a person
    text = ["I look at Oswin.", "Oswin waits.", "A note was left for Mira.", "Mira nods."]
    assert set(latin_people(text, "\n".join(text))) == {"Oswin", "Mira"}
    assert places("He sailed for Tarn Isle after the funeral; she rode for Quellmoor.") == ["Tarn Isle", "Quellmoor"]


def test_a_surname_the_text_titles_is_named_with_its_commonest_title():
    text = "Miss Carter, sit down. Thank you, Miss Carter. Dr Carter is away. Carter nods."
    assert with_title("Carter", text) == "Miss Carter"
    assert with_title("Rowan", text) == "Rowan" and with_title("Nell Carter", text) == "Nell Carter"


def test_latin_words_inside_chinese_text_need_more_than_recurrence():
    text = ["他用English说了一句。", "她也用English回答。", "Mira点头。"]
    assert latin_people(text, "\n".join(text)) == []
    assert latin_people(text, "\n".join(text), known=["Mira"]) == ["Mira"]


# -- Chinese names and places --------------------------------------------------------------------
def test_chinese_names_never_cut_a_word():
    text = ("如何应对双方达成的协议？如何应对汪伪政权？双方达成一致。汪伪政权倒台。龙会即将到来，龙会即将开始，"
            "龙会即将结束。如何应对？双方达成了。汪伪政权。")
    assert cjk_names(text) == {}


def test_chinese_names_from_honorifics_speech_introductions_and_recurrence():
    text = "我叫苏晚晴。玄真道长点头。林大夫笑道：好。厉天行来了。厉天行走了。厉天行又来了。唐七笑了。"
    assert set(cjk_names(text)) == {"苏晚晴", "玄真", "林大夫", "厉天行", "唐七"}


def test_a_chinese_name_after_kin_is_introduced_and_ends_where_the_words_do():
    assert set(cjk_names("你弟弟沈砚书三个星期前给报社寄过一封信。")) == {"沈砚书"}
    assert set(cjk_names("她哥哥林风受了伤。")) == {"林风"}
    assert set(cjk_names("我师父张口就骂。她的同学周末来了。")) == set()   # 张口, 周末 are words


def test_chinese_names_with_a_compound_surname_or_a_daoist_title():
    # 上官 and 司徒 are also everyday words (officials); a Daoist name has no surname at all
    assert set(cjk_names("她姓上官，叫上官映雪。上官映雪抱琴而下。上官映雪淡淡地说。")) == {"上官映雪"}
    assert set(cjk_names("玄火老祖冷笑一声。玄火老祖转身便走。")) == {"玄火"}
    assert set(cjk_names("那位道长来了。那位道长又走了。")) == set()   # 那位 is "that one"
    # a familiar form is a name even where the dictionary has it as a word (老周 is tagged a time)
    assert set(cjk_names("您就是老周？我老周有个规矩。老周拉得不紧不慢。")) == {"老周"}
    assert set(cjk_names("老毛病又犯了。老毛病。老毛病。")) == set()


def test_what_looks_like_surname_and_title_but_is_no_person():
    assert set(cjk_names("“谢谢许医生。”她说。")) == set()               # 谢谢: "thank you"
    assert set(cjk_names("不是我一个孙媳妇说了算。")) == set()            # 孙 + 媳妇: kin
    assert set(cjk_names("镇卫生院说是支气管炎。")) == set()              # an organisation the dictionary knows
    assert set(cjk_names("陆记丝行的伙计散了。陆记丝行的掌柜跑了。转给了陆记丝行。")) == set()   # a firm
    assert set(cjk_names("“巧云姑娘，”她说。巧云笑道：“放心。”")) == {"巧云"}   # not 云姑娘
    assert set(cjk_names("先看看铺面，再见见周掌柜和孙先生。")) == {"周掌柜", "孙先生"}   # not 见周
    assert set(cjk_names("张少棠把笔一搁，冷笑道：“不知道。”")) == set()          # 冷笑: a sneer
    assert set(cjk_names("这消息要是登上申报，莫说孔经理的饭碗。")) == {"孔经理"}   # not 莫说孔


def test_chinese_places_are_whole_names_not_common_words():
    assert places("在相关部门工作，他在一旁观看，终于登上顶峰。") == []
    assert places("我们来到青云山，又到了临安城的聚宝斋。聚宝斋的掌柜在。") == ["青云山", "临安城", "聚宝斋"]
    assert places("你就是那个在打听藏剑阁的人？藏剑阁在山顶。") == ["藏剑阁"]
    # the dictionary's place names after a movement verb; 到 alone may mean "until"
    assert places("我们明天去上海，再从南京回来。") == ["上海", "南京"]
    assert places("等到天黑再走，他回到青云山。") == ["青云山"]
    assert places("他在江湖上闯荡多年，如今又回到江湖。") == []          # an everyday word, not a place
    assert places("我们来到青石路，又摸到十三号仓库，在四楼歇脚。") == ["青石路", "十三号仓库"]
    # place-type words of buildings and rooms; a two-character verb before the suffix is the name's
    # first word (回春 + 堂), a verb before a whole name is not (打听 + 藏剑阁)
    assert places("我们赶回回春堂，又去了城南的汇通银行。") == ["回春堂", "城南", "汇通银行"]


def test_chinese_places_where_the_segmenter_cuts_or_glues_the_wrong_way():
    # 太医院 is a dictionary word, though the text is segmented 太|医院 ("too" + hospital)
    assert places("姑姑急得不行，连夜去太医院请了贺太医。") == ["太医院"]
    assert places("他从第三站下车。") == []                       # a count, whatever the dictionary says
    # a suffix that is a verb's end, or the start of a word the model guessed, ends no place
    assert places("这是我从娘家带进宫的东西。") == []             # 带|进宫: brought into the palace
    assert places("宜嫔谋害皇嗣，嫁祸宫嫔。宜嫔谋害皇嗣，嫁祸宫嫔。") == []   # 嫁祸|宫嫔
    assert places("太后说六宫不能一日无主。太后说六宫不能一日无主。") == []   # 说|六宫, glued
    # but a road's station (文昌|路站) and a road before its crossing (延安路|口) stay
    assert places("从滨河路站走到文昌路站。") == ["滨河路站", "文昌路站"]   # though the segmenter reads 站 as "stand"
    assert places("他在南山路站着等她。") == ["南山路"]                    # where it means "stand"
    assert places("我们来到了白鹭渡，芦苇荡里很冷。") == ["白鹭渡"]         # a ferry, though 渡 reads as "cross"
    assert places("他们来到断魂崖。到了山崖下面。") == ["断魂崖"]          # a named cliff, not "the cliff"
    assert places("他们坐船渡河。") == []
    assert places("几个黑衣人抬起轿子，消失在雾里。") == []                 # 雾里: "in the fog"
    # a verb or adverb before the suffix makes it the verb's object; a title in 《》 is a book's
    assert places("有闲钱坐茶馆的人不多。有闲钱坐茶馆的人不多。") == []
    assert places("张家欠银行两千块。张家欠银行的钱。") == []
    assert places("请湖州顾先生说《珍珠塔》。《珍珠塔》刚开了个头。") == []
    # a verb's end is no name's start, a room on a floor no named place, and 楼上 "upstairs"
    assert places("老张被推去三楼病房以后，我才想起来。") == []
    assert places("你住在诊所楼上的小阁楼里。") == []
    assert places("山塘街上谁不听曲子？山塘街上的人都知道。") == ["山塘街"]   # but on 山塘街
    # 进 enters a place the dictionary knows (进天津, 踏进), but 改进 and 推进 improve and advance
    assert places("老爷说了，这辈子不许再踏进天津一步。") == ["天津"]
    assert places("这辈子不许再踏进密云一步。") == ["密云"] and places("他们改进密云的办法。") == []
    assert places("他们改进上海的办法。") == ["上海"]   # a place the lists know, wherever it is named


def test_a_bare_chinese_room_or_building_is_a_place_when_the_scene_is_there_twice():
    assert places("半个时辰后在茶楼会合。", context="我们先去对面的茶楼坐坐。") == ["茶楼"]
    assert places("半个时辰后在茶楼会合。") == []                 # once: mostly scenery
    assert places("他在茶楼老板那里。茶楼很吵。") == []           # 茶楼老板 is a person


def test_a_scene_heading_names_its_places_but_not_its_time_or_a_floor():
    assert places("「雨夜·百乐门」\n她来了。") == ["百乐门"]
    assert places("「百乐门·二楼包厢」\n「三日后·长安西市」") == ["百乐门", "长安西市"]
    assert places("[Dusk · The Old Mill]\nWe wait.") == ["Old Mill"]
    # the heading's first place only (the rest are its rooms), after the places the text names
    assert places("「百乐门·后台」\n我们来到霞飞路。") == ["霞飞路", "百乐门"]
    assert places("[Night · Day 3]\n【校园状态】\n「沈砚秋·林默」", people=["沈砚秋", "林默"]) == []
    assert places("「第一章·暗号」\n[Chapter 2 · The Lost Key]") == []   # a chapter's title


def test_english_places_keep_inn_names_and_leave_out_newspapers():
    assert places("Sam Reyes, from the Vell Courier. You buy the next round at the Gull and Anchor.") == [
        "Gull and Anchor"]
    assert places("We talked to Rowan and Mira in Vell, near the Vell Infirmary.", ["Rowan", "Mira"]) == [
        "Vell", "Vell Infirmary"]


def test_english_places_written_as_common_nouns_need_a_setting():
    # a modifier, a possessive or a number makes one mention enough; a bare head needs two
    assert places("She hurries down to the boiler room, then into Harlan's workshop.") == [
        "boiler room", "Harlan's workshop"]
    assert places("Knock on cabin nine.") == ["cabin nine"]
    assert places("They meet at the stables. Later, at the stables again, it rains.") == ["stables"]
    assert places("Dust drifts through the gloomy north tower stairs.") == []   # another noun follows
    assert places("He sits in the kitchen.") == []
    assert places("He walks into the kitchen.") == []
    assert places("Back into the caves! The caves are cold.", known=["cave"]) == ["cave"]
    assert places("I wait in the kitchen.", context="The kitchen smells of bread.") == ["kitchen"]
    # gone there in the batch before, and there again now: the scene is there
    assert places("The ossuary is a long vault.", context="That goes down to the ossuary.") == ["ossuary"]
    assert places("The ossuary is a long vault.", context="They speak of the ossuary.") == []
    assert places("It is a long vault.", context="That goes down to the ossuary.") == []
    assert places("A cave, a beach and a room: none of them is one place.") == []
    assert places("They reach the room.") == []                 # a room is only one with a modifier
    assert places("the crew of the harbour two nights later") == []   # "harbour two" counts nights


def test_a_mention_of_a_known_place_is_given_its_known_name():
    assert places("They ride back to Dunmarrow.", known=["Dunmarrow Keep"]) == ["Dunmarrow"]   # the town
    assert places("他们回到青石。", known=["青石城"]) == ["青石城"]
    assert places("Back to the keep, quickly!", known=["Dunmarrow Keep"]) == ["Dunmarrow Keep"]
    assert places("We climb towards the tower.", ["Ada"], known=["the Salt Tower"]) == ["the Salt Tower"]
    # a person's name after "at" or "near" is that person
    assert places("I look at Ada. Then we stand near Quell.", people=["Ada Quell"]) == []


# -- first person --------------------------------------------------------------------------------
@pytest.mark.parametrize("text, told", [
    ("I shake her hand.", "Rowan shakes her hand."),
    ("I am tired.", "Rowan is tired."),
    ("I have a map.", "Rowan has a map."),
    ("I was there.", "Rowan was there."),
    ("I don't know.", "Rowan doesn't know."),
    ("I haven't slept.", "Rowan hasn't slept."),
    ("I can go now.", "Rowan can go now."),
    ("I must leave.", "Rowan must leave."),
    ("I went home.", "Rowan went home."),
    ("I also have this.", "Rowan also has this."),
    ("I watch the door and try again.", "Rowan watches the door and try again."),
    ("I try again.", "Rowan tries again."),
    ("I go first.", "Rowan goes first."),
    ("I do the sleepers.", "Rowan does the sleepers."),
    ("I'm looking for the Lantern.", "Rowan is looking for the Lantern."),
    ("Tobin and I slip through.", "Tobin and Rowan slip through."),
    ("I think so, and I know it.", "Rowan thinks so, and they know it."),
    ("'Let them run. The boy did what I needed.'", "'Let them run. The boy did what I needed.'"),
    ("Nobody goes in 'cept me.", "Nobody goes in 'cept Rowan."),
    ("I wanna go home.", "Rowan wants to go home."),
    ("I gotta run.", "Rowan has to run."),
    ("I kinda like it.", "Rowan kinda likes it."),
])
def test_english_first_person_keeps_agreement(text, told):
    assert third_person(text, "Rowan", pronouns=True) == told


def test_a_verb_whose_past_is_its_present_follows_the_message_tense():
    assert third_person("I set the compass down.", "Rowan") == "Rowan sets the compass down."
    assert third_person("I set the compass down.", "Rowan", tense="past") == "Rowan set the compass down."


@pytest.mark.parametrize("text, told", [
    ("我娘带我逃出黑风寨。", "苏晚晴的娘带苏晚晴逃出黑风寨。"),
    ("这一路凶险，你我素不相识。", "这一路凶险，你我素不相识。"),
    ("我们同路。", "我们同路。"),
    ("我要寻仇。", "苏晚晴要寻仇。"),
    ("自我介绍一下。", "自我介绍一下。"),
    ("我等到天黑。", "苏晚晴等到天黑。"),
    ("我等皆是凡人。", "我等皆是凡人。"),
    ("他帮我拿了令牌。", "他帮苏晚晴拿了令牌。"),
    ("‘我只能保她三天。’", "‘我只能保她三天。’"),
])
def test_chinese_first_person_only_where_it_stands_alone(text, told):
    assert third_person(text, "苏晚晴", cjk=True) == told


# -- second person -------------------------------------------------------------------------------
@pytest.mark.parametrize("text, told", [
    ("She sits beside you.", "She sits beside Rowan."),
    ("You walk into the tavern.", "Rowan walks into the tavern."),
    ("You feel the wind and you are tired.", "Rowan feels the wind and Rowan is tired."),
    ("Are you hurt?", "Is Rowan hurt?"),
    ("If you want, you can go.", "If Rowan wants, Rowan can go."),
    ("I told you so.", "Mira told Rowan so."),
    ("You're the one asking, aren't you?", "Rowan is the one asking, isn't Rowan?"),
    ("Did you see your brother?", "Did Rowan see Rowan's brother?"),
    ("You two should rest.", "You two should rest."),
    ("'You will never find it,' the Widow says.", "'You will never find it,' the Widow says."),
])
def test_english_second_person_becomes_the_one_spoken_to(text, told):
    assert third_person(text, "Mira", addressee="Rowan") == told


@pytest.mark.parametrize("text, told", [
    ("你推开门，看见她。", "陈默推开门，看见她。"),
    ("我把信交给你。", "沈青把信交给陈默。"),
    ("你娘还好吗？", "陈默的娘还好吗？"),
    ("你们先走。", "你们先走。"),
    ("你好，陈先生。", "你好，陈先生。"),
])
def test_chinese_second_person_only_where_it_stands_alone(text, told):
    assert third_person(text, "沈青", cjk=True, addressee="陈默") == told


def test_without_an_addressee_or_speaking_to_oneself_you_stays():
    assert third_person("You walk in.", "Mira") == "You walk in."
    assert third_person("You walk in.", "Mira", addressee="Mira") == "You walk in."


def test_a_name_called_out_is_the_one_spoken_to_and_a_title_is_no_one_known():
    people = ["Tobin", "Mira"]
    assert spoken_to("Tobin, you were with the Gray Hand for days.", people, "Rowan") == "Tobin"
    assert spoken_to("Are you hurt, Mira?", people, "Rowan") == "Mira"
    assert spoken_to("沈青，你先走。", ["沈青"], "陈默") == "沈青"
    assert spoken_to("Mira walks in, and Tobin follows.", people, "Rowan") == "Rowan"
    assert spoken_to("Doctor, you might keep your bag close tonight.", people, "Rowan") is None
    assert spoken_to("Tea for you, sir.", people, "Rowan") is None
    assert spoken_to("Well, you found it.", people, "Rowan") == "Rowan"


def test_the_characters_you_is_the_user_and_the_users_you_stays():
    from bme_cli.prompts.extract import DialogueMessage as M
    two = [M(seq=0, role="assistant", name="Mira"), M(seq=1, role="user", name="Rowan")]
    assert addressees(two, "Rowan") == {"assistant": "Rowan", "user": None}
    assert addressees(two, None) == {"assistant": "Rowan", "user": None}   # the one user speaker
    two_users = [*two, M(seq=2, role="user", name="Kai")]
    assert addressees(two_users, None) == {"assistant": None, "user": None}


@pytest.mark.parametrize("text, told", [
    ("Really glad to have you as a friend.", "Really glad to have Rowan as a friend."),
    ("Have you seen it?", "Has Rowan seen it?"),
    ("So what do you think?", "So what does Rowan think?"),
    ("I know what you want.", "Mira knows what Rowan wants."),
    ("He owes Brannoch more than you do.", "He owes Brannoch more than Rowan does."),
])
def test_a_question_inverts_only_at_a_clause_start(text, told):
    assert third_person(text, "Mira", addressee="Rowan") == told


# -- states --------------------------------------------------------------------------------------
def test_a_state_goes_to_the_subject_of_its_clause_not_to_an_object():
    assert state_changes("她一路帮我，还为我中了毒。", "萧寒", ["萧寒", "苏晚晴"]) == []
    assert state_changes("苏晚晴中了毒。", "萧寒", ["萧寒", "苏晚晴"]) == [("苏晚晴", "中了毒")]


def test_a_state_of_you_is_the_one_spoken_to_and_nobodys_in_a_quote_or_without_one():
    people = ["Mira", "Rowan"]
    said = "An arrow hits you in the shoulder. You are wounded, and Mira drags you away."
    assert state_changes(said, "Mira", people, addressee="Rowan") == [("Rowan", "is wounded")]
    assert state_changes("You're poisoned.", "Mira", people, addressee="Rowan") == [("Rowan", "is poisoned")]
    assert state_changes("You were captured.", "Mira", people, addressee="Rowan") == [("Rowan", "was captured")]
    assert state_changes("'You are cursed,' the Widow says.", "Mira", people, addressee="Rowan") == []
    assert state_changes("You are wounded.", "Mira", people) == []
    assert state_changes("你中了毒。", "沈青", ["沈青", "陈默"], addressee="陈默") == [("陈默", "中了毒")]


def test_she_is_the_latest_person_of_her_gender_and_not_someone_spoken_to():
    refs = Referents(["Mira", "Elowen"])
    refs.start_message()
    refs.read("I carry Mira inside and lay her on a cot.", "Rowan", narrator=False)
    refs.read("Sister Elowen?", "Rowan", narrator=False)
    assert state_changes("She was shot with a bolt.", "Rowan", ["Mira", "Elowen"], refs) == [
        ("Mira", "was shot with a bolt")]
    assert state_changes("He was shot.", "Rowan", ["Mira", "Elowen"], refs) == []   # nobody known is "he"


def test_extraction_updates_the_poisoned_character_not_the_speaker():
    overview = [OverviewGroup(type="character", label="角色", count=2,
                              nodes=[OverviewNode(id="c-x", label="萧寒"), OverviewNode(id="c-s", label="苏晚晴")])]
    reply = _reply([("苏晚晴", False, "*她靠在你肩上，气息微弱。*城南……回春堂……"),
                    ("萧寒", True, "*我背着她一路狂奔到回春堂。*林大夫！救人！她中了唐门的断肠针！")], "zh", overview)
    updates = {op.node_id: op.fields for op in reply.operations if isinstance(op, UpdateOp)}
    assert updates == {"c-s": {"state": "中了唐门的断肠针"}}


# -- rules and threads ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, zh", [
    ("The spirits can't cross salt.", False), ("Never answer a voice off the path.", False),
    ("Whoever holds the Lantern must not lie.", False), ("Only a warden can open the door.", False),
    ("只有持令牌者才能进入。", True), ("每天最多用三次。", True), ("规矩是一人一件。", True), ("持令牌者方可入阁。", True),
])
def test_rules_are_recognised(text, zh):
    assert is_rule(text, zh)


@pytest.mark.parametrize("text, zh", [
    ("I can't go tonight.", False), ("Don't look into its eyes.", False), ("Never been inside alone.", False),
    ("Can spirits cross salt?", False), ("We can't stay here forever.", False), ("别离他三步之内。", True),
    ("若遇危险，你就吹这个。", True),
])
def test_ordinary_sentences_are_not_rules(text, zh):
    assert not is_rule(text, zh)


def test_threads_are_stated_goals_and_close_when_reached():
    (t,) = threads("We must find the Sunken Archive before the Widow does.", False)
    assert (t.title, t.key) == ("find the Sunken Archive", "Sunken Archive")
    assert threads("We must hurry.", False) == [] and threads("Must we find it?", False) == []
    (z,) = threads("下一步去归墟岛。", True)
    assert z.key == "归墟岛"
    assert completes("We found the Sunken Archive at last.", "Sunken Archive", False)
    assert not completes("We still haven't found the Sunken Archive.", "Sunken Archive", False)
    assert completes("他们终于找到了归墟岛。", "归墟岛", True) and not completes("还没找到归墟岛。", "归墟岛", True)


def test_extraction_makes_rule_and_thread_nodes_and_completes_a_thread():
    reply = _reply([("Rowan", True, "What now?"),
                    ("Mira", False, "The forest spirits won't cross a line of salt. We must find the Sunken Archive.")])
    (rule,) = _created(reply, "rule")
    assert rule["constraint"] == "The forest spirits won't cross a line of salt." and rule["status"] == "active"
    (thread,) = _created(reply, "thread")
    assert thread["title"] == "find the Sunken Archive" and thread["status"] == "active"
    overview = [OverviewGroup(type="thread", label="主线", count=1,
                              nodes=[OverviewNode(id="t-1", label="find the Sunken Archive", detail="status: active")])]
    later = _reply([("Mira", False, "At last we reached the Sunken Archive.")], overview=overview)
    assert [(op.node_id, op.fields["status"]) for op in later.operations if isinstance(op, UpdateOp)] == [
        ("t-1", "completed")]


def test_a_chinese_name_is_no_place_before_a_person_and_no_surname_before_an_adverb():
    from bme_cli.providers.heuristic.zh_names import cjk_names
    found = cjk_names("苏州孟掌柜来了。孟掌柜说道：好。小夏终于笑了。小夏终于点头。小夏终于走了。欧阳靖说道：走。")
    assert "苏州孟" not in found and "夏终于" not in found   # a place before 孟掌柜; 终于 is "at last"
    assert "孟掌柜" in found and "欧阳靖" in found           # 欧阳: a compound surname the dictionary calls a place


def test_someone_going_somewhere_is_no_place_name():
    from bme_cli.providers.heuristic.places import places
    assert places("程朗去派出所报了案。") == []          # not "程朗去派出所"


def test_a_surname_with_a_title_is_a_shorter_form_of_that_persons_name():
    from bme_cli.text import same_person_name
    assert same_person_name("韩主管", "韩铮") and same_person_name("唐队", "唐队长") and same_person_name("雷叔", "雷震")
    assert not same_person_name("韩主管", "李铮") and not same_person_name("韩铮", "韩主管")
    assert same_person_name("wen", "wendell sikes") and not same_person_name("sir", "sirius black")
    # a familiar form of the surname or of the given name
    assert same_person_name("小陆", "陆沉") and same_person_name("小夏", "闻知夏") and same_person_name("老葛", "葛长庚")
    assert same_person_name("夏夏", "闻知夏") and not same_person_name("夏夏", "陆沉")
    assert not same_person_name("小陆", "祁鸢") and not same_person_name("小陆", "陆氏调查事务所")


def test_a_family_or_a_sect_before_a_title_is_no_person():
    from bme_cli.providers.heuristic.zh_names import cjk_names
    found = cjk_names("沈家少爷来了。雷叔说道：坐。秦姐笑了。")
    assert "沈家" not in found and "雷叔" in found and "秦姐" in found


def test_two_characters_and_a_place_suffix_name_a_place_where_they_stand_whole():
    from bme_cli.providers.heuristic.places import places
    assert "南山路" in places("沿着南山路一直走，就到了。")
    assert places("他转身回去路上买了烟。") == [] and "江湖路" not in places("江湖路远，后会有期。")


def test_court_ranks_name_people_without_a_surname():
    from bme_cli.providers.heuristic.zh_names import cjk_names
    found = cjk_names("德妃冷笑一声。宸贵妃说道：好。桂嬷嬷端来茶。小禄子跑了。小禄子又回来了。"
                      "太后说道：罢了。太后起身。王妃来了。这位公公请。她被封为才人。")
    assert {"德妃", "宸贵妃", "桂嬷嬷", "小禄子", "太后"} <= set(found)
    assert not {"王妃", "位公公", "为才人", "皇贵妃"} & set(found)


def test_a_floor_a_days_count_and_the_weather_are_no_places():
    from bme_cli.providers.heuristic.places import places
    assert places("我们去实验楼三楼化学实验室拿试剂。") == ["实验楼", "化学实验室"]
    assert places("【末世第七天 · 灰雾】\n他醒了。") == []
    assert places("「雨夜·百乐门」\n她唱歌。") == ["百乐门"]


def test_a_persons_body_or_kin_after_their_name_makes_it_one():
    from bme_cli.providers.heuristic.zh_names import cjk_names
    assert "邵峰" in cjk_names("邵峰的声音一下子变得很轻。")


def test_whom_someone_sees_is_no_place():
    from bme_cli.providers.heuristic.places import places
    assert places("见到邵峰之前，别让人知道你能做什么。") == []     # 见到: seeing someone
    assert places("我们明天到邵峰会合。") == ["邵峰"]                # 到: going there


def test_a_known_first_name_and_a_known_surname_together_are_one_person():
    # "Elwood" and "Mr. Pike" are stored; "Elwood Pike" at a sentence's start, with a verb no
    # rule knows, is that person's full name, not two words to skip.
    text = ["Elwood Pike sees the three of them come through his door."]
    assert "Elwood Pike" in latin_people(text, text[0], known=["Elwood", "Mr. Pike"])
    # neither word known: no evidence; the given name known: that name written in full
    assert latin_people(text, text[0]) == []
    assert latin_people(text, text[0], known=["Elwood"]) == ["Elwood Pike"]
    assert latin_people(text, text[0], known=["Pike"]) == ["Pike"]   # a surname may be a family's
    # words of two different people listed side by side stay two people
    text = ["Juniper, Elwood and Pike wait."]
    assert "Elwood Pike" not in latin_people(text, text[0], known=["Elwood", "Mr. Pike", "Juniper"])


def test_a_guessed_name_before_an_honorific_is_made_of_name_characters_and_starts_with_no_word():
    # the segmenter's model glues 看向 to 宸 and 夏和葛 across 和: neither is a name
    assert cjk_names("她挣扎着回过头，看向宸贵妃，嘴唇哆嗦着。") == {}
    assert "夏和葛" not in cjk_names("闻知夏和葛师傅几乎是跑着进的店。")
    assert cjk_names("玄真道长点头。") == {"玄真": 1} and "李慕白" in cjk_names("李慕白公子来了。")


def test_a_surname_and_title_is_no_name_where_the_segmenter_saw_a_longer_one():
    assert "闻伯" not in cjk_names("信封上是闻伯年苍劲的毛笔字：知夏亲启。")   # 闻伯年, not "uncle Wen"
    assert cjk_names("雷叔点点头。") == {"雷叔": 1}


def test_a_master_introduced_as_one_is_named_once():
    # 清虚 is also a word ("pure and empty"); after 师父 and before 真人 it is the master's name
    assert cjk_names("门内，师父清虚真人盘膝而坐。") == {"清虚": 1}
    assert cjk_names("清虚真人盘膝而坐。") == {}          # once, with no more evidence: not yet
    assert cjk_names("师父真人在此。") == {}


def test_a_name_after_his_or_her_is_a_thing_someone_has():
    text = ['"His Buick turns up at Lock 14 the next morning."', "Her Colt sings twice."]
    assert latin_people(text, "\n".join(text)) == []
    text = ["Mira turns up at Lock 14.", "Then Mira sings."]
    assert latin_people(text, "\n".join(text)) == ["Mira"]


def test_a_name_in_capitals_that_speaks_twice_is_a_person():
    text = ['"Flag set, Doctor," ARGUS replies.', '"Suppression active," ARGUS says.']
    assert latin_people(text, "\n".join(text)) == ["ARGUS"]
    # once, or capitals that do not speak (a tag, an acronym): no one
    assert latin_people(text[:1], text[0]) == []
    text = ["The ICU is full.", "NSFW content ahead.", "The ICU says nothing."]
    assert latin_people(text, "\n".join(text)) == []


def test_a_name_made_like_a_place_is_no_person():
    text = ["You can hear the carpenters on Gallows Quay hammering.", "The gulls wheel over Gallows Quay.",
            "Torre Blanca stands on the hill.", "They climb to Torre Blanca."]
    assert latin_people(text, "\n".join(text)) == []
    # being no person leaves them free to be places where the text says so
    assert places("All the way up the bald hill to Torre Blanca, he climbs.") == ["Torre Blanca"]
    # what a place has: the thatch of an inn, the roof of a tavern
    assert places("Rain on the thatch of the Drowsy Wyvern. The fire is low.") == ["Drowsy Wyvern"]
    assert places("Rain drums on the roof of the Bent Nail.") == ["Bent Nail"]
    # a possessive inside a place's name, before its last word
    assert places("We anchor over Dead Man's Shoal.") == ["Dead Man's Shoal"]
    assert places("She walks to Mira's house.") == []


def test_a_latin_name_with_a_chinese_title_is_a_person_and_a_company_is_none():
    text = ["人事Vivian姐把你领到美术组，一路上说个不停。"]
    assert latin_people(text, text[0]) == ["Vivian"]
    assert latin_people(["他用English说了一句。"], "他用English说了一句。") == []
    # 蓝鲸 speaks and recurs, but 蓝鲸游戏 names a company
    assert cjk_names("是蓝鲸游戏凌晨发布的新作。蓝鲸那边又来了。蓝鲸的人说了。蓝鲸说道：好。") == {}


def test_a_title_alone_is_no_name_and_a_name_after_it_is_a_titled_person():
    text = ["Cap'n nods at the chart.", "Doc sighs over the wound.", "The reeve sighs."]
    assert latin_people(text, "\n".join(text)) == []
    text = ["Reeve Odo Talbot nods.", "Later, Odo Talbot sighs."]
    assert "Reeve" not in {w for n in latin_people(text, "\n".join(text)) for w in n.split()[:1]}


def test_a_pronoun_with_its_contraction_or_an_indefinite_pronoun_is_no_name():
    text = ["She'll be back soon.", "She'll laugh about it.", "Everybody knows the Coffins.", "Everybody laughs."]
    assert latin_people(text, "\n".join(text)) == []


def test_a_panel_cast_entry_gives_the_name_without_its_title():
    from bme_cli.providers.heuristic.extract import _listed_name
    assert [_listed_name(x) for x in ["马赛尔探长", "二姨太金凤仪", "少帅段承霖", "青黛", "贺太医", "高三二班学生"]] == [
        "马赛尔", "金凤仪", "段承霖", "青黛", "贺太医", None]
    # a rank in the household has no name in it
    assert [_listed_name(x) for x in ["二少爷", "大少奶奶", "三姨太"]] == [None, None, None]


def test_a_town_then_its_state_or_country_is_a_place():
    text = ["Scranbury, Pennsylvania. Late November.", "It is a cold one out there tonight, Scranbury.",
            "Thanks for keeping warm, Scranbury."]
    assert latin_people(text, " ".join(text)) == []
    assert places(" ".join(text)) == ["Scranbury", "Pennsylvania"]   # the state a reader knows, after the town


def test_a_chinese_name_that_ends_in_a_buildings_word_is_a_place_not_a_person():
    from bme_cli.providers.heuristic.zh_places import zh_building
    assert zh_building("段公馆") and zh_building("悦来客栈") and not zh_building("段承霖") and not zh_building("李山")
    assert places("回段公馆的路上，我一直在想。") == ["段公馆"]


def test_a_drink_or_a_dish_poured_or_served_is_no_person():
    text = ["Old Grumbletoes is the brown ale on the left, and Black Nell's the stout.",
            "He will want a half of Grumbletoes, then Black Nell.", "Grumbletoes first, always.",
            "Black Nell, and give him a minute.", "She pours a cup of Mira's tea. Mira smiles at Black Nell."]
    assert latin_people(text, " ".join(text)) == ["Mira"]   # Mira's tea: hers, she is no drink


def test_a_form_of_address_or_a_holiday_is_no_person():
    text = ["Your Majesty, the envoy waits.", "His Majesty will not see him, Your Highness.",
            "Majesty, please.", "We drove home for Thanksgiving.", "Thanksgiving was quiet, Thanksgiving always is."]
    assert latin_people(text, " ".join(text)) == []


def test_a_room_or_dock_with_its_number_or_code_is_that_one_place():
    assert places("We moved to Cabin B-22 and then to Hangar 4.") == ["Cabin B-22", "Hangar 4"]
    assert places("The seal failed near Airlock 9-East at 09:40.") == ["Airlock 9-East"]


def test_a_heading_or_the_light_is_no_chinese_place():
    assert places("卷起一阵黄沙，往西南去了。") == [] and places("出城往东南走了四十里。") == []
    assert places("中间一汪泉水，在夕阳里亮得像一面镜子。") == []
    assert places("我们在西湖里划船。") == ["西湖"]   # a place the lists know, 里 or not


def test_a_school_room_is_a_chinese_place_and_a_path_part_loses_its_floor_and_side():
    assert places("和日和一起去图书室。我在图书室等她。") == ["图书室"]
    assert places("把音箱和鼓搬到体育馆。体育馆里人很多。") == ["体育馆"]
    assert path_places(["白鹭学园", "旧校舍三楼", "文艺部活动室前"]) == ["文艺部活动室", "白鹭学园"]


def test_a_double_name_alone_is_a_firm_and_after_a_given_name_a_person():
    text = ["She was an architect at Halvorsen-Tanaka, years ago.", "Halvorsen-Tanaka wants us dead.",
            "I meant to sell it to Helix-Dyne.", "Helix-Dyne would buy it.", "Mara Halden-Voss smiles.",
            "Later Halden-Voss nods at me.", "Anne-Marie laughs."]
    found = latin_people(text, " ".join(text))
    assert "Mara Halden-Voss" in found and "Anne-Marie" in found
    assert not {"Halvorsen-Tanaka", "Helix-Dyne", "Tanaka", "Voss", "Later Halden-Voss"} & set(found)


def test_an_office_before_a_chinese_name_makes_it_a_person():
    found = cjk_names("给安西都护崔昭远送信。队长李强走进来。经理说明情况。")
    assert set(found) == {"崔昭远", "李强"}


def test_a_us_town_with_its_state_code_is_the_town():
    assert places("We reached Tucumcari NM at dusk. Then on to Amarillo, TX.") == ["Tucumcari", "Amarillo"]
    assert places("", stated=["Flagstaff AZ"]) == ["Flagstaff"]


def test_a_name_written_once_in_full_is_the_person_by_that_full_name():
    text = ['Tomorrow we meet Iris Wendover at her shop.', 'Iris said she would be there early.',
            'Iris smiled at the door.']
    assert latin_people(text, "\n".join(text)) == ["Iris Wendover"]
    # a surname alone stays as it is: it may be a family's
    text = ['Then Harlan Quist and Tom Quist came in.', 'Quist said nothing.', 'Quist nodded.']
    assert "Quist" in latin_people(text, "\n".join(text))
    # a thing written with an article, or a word the text writes in lower case, is no surname
    text = ['Corvid said nothing.', 'We saw Corvid Array flicker, then docked at the Corvid Array.', 'Corvid nodded.']
    assert "Corvid Array" not in latin_people(text, "\n".join(text))
    text = ['Tamsin said nothing.', 'We saw Tamsin Relay flicker; the relay was dark.', 'Tamsin nodded.']
    assert latin_people(text, "\n".join(text)) == ["Tamsin"]
    # the full name said only where a sentence starts ("Tilly. Tilly Monk.") is written in full too
    text = ['"Tilly.', 'Tilly Monk."', 'She looked at Tilly again.', '"Where is she, Tilly?"']
    assert latin_people(text, "\n".join(text)) == ["Tilly Monk"]
    text = ['"Tilly.', 'Tilly Says nothing."', 'She looked at Tilly again.', 'Nobody says a word.']
    assert latin_people(text, "\n".join(text)) == ["Tilly"]   # "says" is a word, no surname


def test_a_word_a_number_follows_after_a_place_word_is_one_numbered_place():
    assert places("Dusty waits at Mile 40, and we park at Mile 40 on Route 9.") == ["Mile 40", "Route 9"]
    assert places("We cross at Exit 12 and go north.") == ["Exit 12"]
    assert places("She lives in Paris 2 days a week.") == ["Paris"]      # the number counts days


def test_cantonese_place_words_and_shop_names_are_read_whole():
    assert places("我喺天星码头等你。") == ["天星码头"]                  # 喺: Cantonese 在
    assert places("他走进祥记茶餐厅。") == ["祥记茶餐厅"]                # 祥记: a shop named 记 after its owner
    assert places("我想亲眼睇下北河街间福记茶庄。") == ["福记茶庄"]        # 间 before a shop: "that"
    assert places("他记得茶馆。") == []


def test_a_preposition_that_starts_a_sentence_is_no_part_of_the_name_after_it():
    text = ["Behind Sule's voice there are lorries.", "Sule laughs.", "Then Sule hangs up."]
    assert latin_people(text, "\n".join(text)) == ["Sule"]


def test_an_office_written_in_capitals_is_no_person():
    text = ["She has been Managing Director for a month.", "You sign as Managing Director.", "Ada nods."]
    assert latin_people(text, "\n".join(text)) == ["Ada"]


def test_languages_peoples_and_firms_named_by_their_trade_are_no_people():
    text = ["Hausa fills the yard.", "He answers in Hausa.", "Okafor Haulage wants the route.",
            "Tell Okafor Haulage no.", "Kemi laughs."]
    assert latin_people(text, "\n".join(text)) == ["Kemi"]


def test_aunty_is_a_title_and_yule_a_feast():
    assert places("We drove to Aunty Funmi and then to Ikoyi.") == ["Ikoyi"]
    assert places("They feast at Yule in the hall at Hedeby.") == ["Hedeby"]


def test_a_road_said_with_its_direction_and_a_city_with_its_suffix_are_the_place_itself():
    assert places("We drove Route 9 westbound to Mile 40.") == ["Route 9", "Mile 40"]
    assert places("", stated=["Route 9 southbound"]) == ["Route 9"]
    assert places("她回到上海市。") == ["上海"]


def test_no_place_is_cut_out_of_a_hyphenated_name():
    assert places("I swore my sword to Hallvard Grey-Cloak when I was fifteen.") == []
    assert places("We sold the cores to Helix-Dyne and went home.") == []


def test_an_animal_a_vehicle_or_a_weapon_named_beside_its_name_is_no_person():
    for text in (["Gus the dog barks at the door.", "Then Gus wags his tail.", "Riley pats Gus."],
                 ["Bessie, the truck, coughs.", "We load Bessie up.", "Then Bessie starts on the third try."],
                 ["He polished his father's sword Ember.", "Ember shone.", "Kol lifted Ember."],
                 ["An old '79 truck name of Bessie.", "Dusty eases Bessie down.", "Bessie rattles."]):
        assert latin_people(text, "\n".join(text)) == [], text
    text = ["Mira the cook says hi.", "Mira laughs."]
    assert latin_people(text, "\n".join(text)) == ["Mira"]


def test_a_chinese_place_listed_after_one_or_held_in_war_is_a_place():
    assert places("曹子孝的兵马屯在襄阳、樊城一线。") == ["襄阳", "樊城"]
    assert places("就得分兵回守樊城。") == ["樊城"]
    assert places("我们去东西。") == []


def test_a_user_typing_in_lower_case_does_not_make_a_name_a_word():
    text = ["kunle dey there o, tell am make e wait", "Then Kunle jumps down.", "She pays Kunle in coins."]
    assert latin_people(text, "\n".join(text)) == ["Kunle"]


def test_japanese_names_written_in_chinese_are_people():
    found = cjk_names("藤原千夏老师推了推眼镜。佐藤同学来了。佐藤君笑了。")
    assert {"藤原千夏", "佐藤"} <= set(found)
    assert cjk_names("他在山下等着。") == {}                 # a listed name is never an everyday word
    from bme_cli.providers.heuristic.zh_names import ja_family_of
    assert ja_family_of("佐藤", ["佐藤莲", "佐伯悠人"]) == "佐藤莲"
    assert ja_family_of("藤原老师", ["藤原千夏", "藤原老师"]) == "藤原千夏"
    assert ja_family_of("田中", ["田中一郎", "田中花子"]) is None   # two of the family


def test_an_old_style_chinese_shop_is_a_place_wherever_it_stands():
    assert places("他走进陆记丝行。") == ["陆记丝行"]
    assert places("刘家酱园的伙计说话了。") == ["刘家酱园"]
    assert places("刘家行不行？") == []


def test_a_river_or_a_road_up_or_down_which_one_goes_is_a_place():
    assert places("Runs the mill, up the Wend.") == ["Wend"]
    assert places("The wind comes straight down the Penobscot.") == ["Penobscot"]
    assert places("He picked up Ada at noon.") == []
