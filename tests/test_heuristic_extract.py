"""The offline extraction heuristic and its text helpers, on small English and Chinese dialogues."""
from __future__ import annotations

from datetime import date

from bme_cli.graph.schema import Schema
from bme_cli.prompts.extract import (CreateOp, DialogueMessage, ExtractInput, OverviewGroup, OverviewNode,
                                     UpdateOp, schema_types)
from bme_cli.providers.heuristic import condense, names, nlp, person, places, states, zh_names
from bme_cli.providers.heuristic.extract import SUMMARY_CHARS, SUMMARY_CHARS_ZH, answer


def inp(lines, *, language="en", overview=(), start=None, date_=None) -> ExtractInput:
    msgs = [DialogueMessage(seq=i, role="user" if user else "assistant", name=name, text=text,
                            date=date_, new=new)
            for i, (name, user, text, new) in enumerate(lines)]
    first_new = min(m.seq for m in msgs if m.new)
    return ExtractInput(messages=msgs, start_seq=start if start is not None else first_new,
                        end_seq=msgs[-1].seq, overview=list(overview),
                        types=schema_types(Schema.default()), language=language,
                        user_name="Rowan", character_name="Mira")


def by_type(reply, type_id):
    return [op for op in reply.operations if isinstance(op, CreateOp) and op.type == type_id]


EN = [
    ("Mira", False, "Old news: the baker sold stale bread on Tuesday.", False),
    ("Rowan", True, "I need a guide to the Ruined Tower. I have 40 silver coins.", True),
    ("Mira", False, "*Mira nods.* My brother Tobin vanished there. Tobin carried "
                    "a brass compass. Meet me at the Silver Harbor at dawn. Wow!", True),
]


def test_english_dialogue_gives_one_event_with_the_concrete_words():
    reply = answer(inp(EN, date_="8 May 2023"))
    (event,) = by_type(reply, "event")
    summary = event.fields["summary"]
    assert summary.startswith("[8 May 2023] ") and len(summary) <= SUMMARY_CHARS
    for word in ("Ruined Tower", "40 silver coins", "Tobin", "brass compass", "Silver Harbor"):
        assert word in summary
    assert "stale bread" not in summary  # older context lines are not extracted again
    assert "Rowan has 40 silver coins" in summary  # first person turned into the speaker
    assert "Wow" not in summary                    # filler dropped
    assert "participants" not in event.fields      # everyone involved is named in the summary


def test_a_narrator_is_not_named_as_the_one_who_said_it():
    reply = answer(inp([("Narrator", False, "The gate of the keep is shut and barred.", True),
                        ("Rowan", True, "I knock on the gate twice.", True)]))
    (event,) = by_type(reply, "event")
    assert event.fields["summary"].startswith("The gate of the keep is shut and barred.")
    assert "Rowan knocks" in event.fields["summary"]
    # A narrator's first person is no one's it knows ("The Tavern Narrator's daughter"); its "you" is the user.
    told = answer(inp([("Rowan", True, "I wait.", True),
                       ("Narrator", False, "My daughter Bess went to the marsh alone. You follow her tracks.", True)]))
    (event,) = by_type(told, "event")
    assert "Narrator's" not in event.fields["summary"] and "Rowan follows" in event.fields["summary"]


def test_english_dialogue_gives_characters_places_and_links():
    reply = answer(inp(EN))
    assert [op.fields["name"] for op in by_type(reply, "character")] == ["Rowan", "Mira", "Tobin"]
    assert [op.fields["name"] for op in by_type(reply, "location")] == ["Ruined Tower", "Silver Harbor"]
    (event,) = by_type(reply, "event")
    links = {(link.target_ref, link.relation) for link in event.links}
    assert ("char2", "involved_in") in links and ("loc0", "occurred_at") in links
    assert reply.operations[0] is event


def test_known_characters_are_linked_by_id_and_updated_on_a_state_change():
    overview = [OverviewGroup(type="character", label="角色", count=1,
                              nodes=[OverviewNode(id="c-9", label="Tobin")])]
    lines = [("Rowan", True, "Where is Tobin?", True),
             ("Mira", False, "Tobin was badly injured by the Gray Hand near the Hollow Oak.", True)]
    reply = answer(inp(lines, overview=overview))
    (update,) = [op for op in reply.operations if isinstance(op, UpdateOp)]
    assert update.node_id == "c-9" and update.fields["state"].startswith("was badly injured")
    assert "Tobin" not in [op.fields["name"] for op in by_type(reply, "character")]
    event = by_type(reply, "event")[0]
    assert any(link.target_node_id == "c-9" for link in event.links)


ZH = [
    ("苏瑶", True, "林风，你昨晚去哪儿了？", True),
    ("林风", False, "林风说道：我们来到了青云山，在悦来客栈住了一夜。半夜遇到黑风寨的人，我受了重伤。"
                    "厉天行拿走了三块令牌。", True),
]


def test_chinese_dialogue_gives_chinese_memories():
    reply = answer(inp(ZH, language="zh", date_="2025年6月8日"))
    (event,) = by_type(reply, "event")
    summary = event.fields["summary"]
    assert summary.startswith("[2025年6月8日] ") and len(summary) <= SUMMARY_CHARS_ZH
    for word in ("青云山", "悦来客栈", "三块令牌", "林风受了重伤"):
        assert word in summary
    assert "participants" not in event.fields      # 苏瑶, 林风, 厉天行 are all in the summary
    names = [op.fields["name"] for op in by_type(reply, "character")]
    assert names[:2] == ["苏瑶", "林风"]
    # 黑风寨的人: a stronghold named in passing is a place too (up to MAX_PLACES a batch)
    assert [op.fields["name"] for op in by_type(reply, "location")] == ["青云山", "悦来客栈", "黑风寨"]
    lin = [op for op in by_type(reply, "character") if op.fields["name"] == "林风"][0]
    assert lin.fields["state"].startswith("受了重伤")


LONG = [
    ("Caroline", True, "Hey Mel! Good to see you! How have you been? Yeah totally! \"Brave\" by Sara "
                       "Bareilles has a lot of significance for me. It's about being courageous and "
                       "fighting for what's right. Sunflowers mean warmth and happiness, right? Whenever "
                       "I hear this jam, I think about the paths I've taken and the progress I've made.", True),
    ("Melanie", False, "Wow, Caroline! That's awesome! What do you think? I painted that lake sunrise "
                       "last year, it's special to me. [image: a photo of a painting of a sunset over a "
                       "lake]", True),
]


def test_a_long_batch_is_condensed_into_one_cell_keeping_each_turns_facts():
    reply = answer(inp(LONG, date_="28 Aug 2023"))
    summary = by_type(reply, "event")[0].fields["summary"]
    assert len(summary) <= SUMMARY_CHARS == 200    # the block's cell limit: nothing is cut there
    for gone in ("Hey Mel", "Good to see you", "How have you been", "Yeah totally", "Wow", "awesome",
                 "What do you think"):
        assert gone not in summary                 # greetings, acknowledgements, empty questions
    for kept in ("Brave", "Sara Bareilles", "Melanie painted that lake sunrise last year (2022)"):
        assert kept in summary                     # names, titles and each turn's fact
    assert "Melanie:" not in summary               # the sentence already says who


def test_condensing_helpers_strip_filler_but_not_facts():
    assert condense.compact("Wow, Mel! Thanks, Caroline! I ran a race.", ["Mel", "Caroline"]) == "I ran a race."
    assert condense.compact("Sunflowers mean warmth, right?", []) == "Sunflowers mean warmth."
    assert condense.compact("[image: a photo of a red kite]", []) == "[photo: a red kite]"
    assert condense.compact("It was really so powerful.", []) == "It was powerful."
    assert condense.value("Thanks, that's so awesome!", ["Ann"]) == 0.0
    assert condense.value("What jobs are you thinking of?", ["Ann"]) == 0.0
    assert condense.value("Ann adopted a guinea pig named Oscar.", ["Ann"]) > condense.value(
        "Ann thought about that a lot.", ["Ann"])
    assert condense.short_forms(["Melanie"]) == ["Melanie", "Mel", "Mela"]


def test_the_densest_set_of_sentences_that_fits_is_chosen_exactly():
    P = condense.Piece
    pieces = [P(0, 0, "A", "x" * 60, 3.0), P(0, 1, "A", "y" * 60, 3.0), P(1, 2, "B", "z" * 100, 5.0)]
    # 60 + 1 + 60 = 121 fits 130 (value 6 + 1 message bonus); z alone (100 + "B: ") gives 5 + 1
    assert [p.text[0] for p in condense.choose(pieces, 130, False)] == ["x", "y"]
    assert [p.text[0] for p in condense.choose(pieces, 170, False)] == ["x", "z"]  # 3+5+2 bonuses


def test_participants_are_kept_only_when_someone_involved_is_not_named_in_the_summary():
    lines = [("Rowan", True, "Where is Tobin?", True),
             ("Mira", False, "Captain Brannoch sold the crew to the Gray Hand. Tobin was badly injured near "
                             "the Hollow Oak, and the old smuggler with the silver ring took the ledger, the "
                             "map and the brass compass from the harbour office at dawn while the watch slept.",
              True)]
    event = by_type(answer(inp(lines)), "event")[0]
    assert "Brannoch" not in event.fields["summary"]          # his sentence did not fit
    # Rowan only asked an empty question: not involved in what the summary tells
    assert event.fields["participants"] == "Mira, Tobin, Captain Brannoch"   # as the text titles him
    short = [("Rowan", True, "Where is Tobin?", True), ("Mira", False, "Tobin was injured.", True)]
    assert by_type(answer(inp(short)), "event")[0].fields == {"summary": "Mira: Tobin was injured."}


def test_the_heuristic_is_deterministic_and_respects_the_schema():
    data = inp(EN)
    assert answer(data).model_dump() == answer(data).model_dump()
    data.types = [t for t in data.types if t.id != "location"]
    assert not by_type(answer(data), "location")


def test_blank_input_gives_no_operations():
    assert answer(inp([("Mira", False, "   ", True)])).operations == []


# -- helpers ----------------------------------------------------------------------------------
def test_sentences_split_on_both_scripts_and_keep_abbreviations():
    assert nlp.split_sentences("Hello Mr. Smith! *waves* It rained.\n林风说：走吧。好！") == [
        "Hello Mr. Smith!", "waves It rained.", "林风说：走吧。", "好！"]


def test_relative_dates_are_resolved_against_the_message_date():
    day = nlp.parse_day("8 May 2023")
    assert day == date(2023, 5, 8) and nlp.parse_day("2025年6月8日") == date(2025, 6, 8)
    text = nlp.resolve_dates("I went yesterday; last year we painted; two days ago too.", day)
    assert text == ("I went yesterday (7 May 2023); last year (2022) we painted; "
                    "two days ago (6 May 2023) too.")
    assert nlp.resolve_dates("yesterday", None) == "yesterday"
    # when the text is dated with that day, "last week" needs no "(the week before 8 May 2023)"
    assert nlp.resolve_dates("Last week and yesterday.", day, restate=False) == \
        "Last week and yesterday (7 May 2023)."


def test_names_places_and_states():
    assert names.titled_names("Captain Brannoch met Sister Elowen.") == {"Brannoch": 1, "Elowen": 1}
    assert places.places("We sailed from Saltmere to the Crimson Tower of Dawn.", ["Mira"]) == [
        "Saltmere", "Crimson Tower of Dawn"]
    assert zh_names.cjk_names("慕容雪点头。李先生笑了。一任守阁长老。") == {"李先生": 1, "慕容雪": 1}
    assert states.state_changes("I'm pregnant again!", "Ann") == [("Ann", "is pregnant again")]
    assert person.third_person("My dog likes me.", "Ann") == "Ann's dog likes Ann."
    assert person.third_person("My dog likes me; I was glad.", "Ann", pronouns=True) == \
        "Ann's dog likes them; they were glad."
    assert person.third_person("‘我走了’，我说。", "林风", cjk=True) == "‘我走了’，林风说。"


def test_the_heuristics_cut_chinese_text_at_a_clause_not_inside_a_word():
    # one clip for every heuristic (sentences.clip): the old ones cut Chinese at a fixed length
    from bme_cli.providers.heuristic.salience import pick_sentences
    text = "林默把阿福送回魏伯诊所，让他和沈砚秋待在一起，沈砚秋抱着阿福一遍遍摸他的头"
    cut = pick_sentences([text], 30, "zh")
    assert cut == "林默把阿福送回魏伯诊所，让他和沈砚秋待在一起…"


def test_english_places_named_as_landscape_shops_and_numbered_locks():
    assert places.places("Eight of the roads wind over the Hollowspine.") == ["Hollowspine"]
    assert places.places("On Canal Street the lamps are out.") == ["Canal Street"]
    assert places.places("We stop at Lock 14 before dawn.") == ["Lock 14"]
    assert places.places("I can pick a lock one-handed.") == []
    assert places.places("Across the road, in the window of Dot's Diner, Carla is watching.",
                         people=["Dot", "Carla"]) == ["Dot's Diner"]


def test_a_plural_you_stays_and_is_never_half_rewritten():
    told = person.third_person("By dawn you're both back at the chapel. You're late.", "Mira", addressee="Rowan")
    assert told == "By dawn you're both back at the chapel. Rowan is late."


def test_a_contracted_negative_keeps_its_form_in_the_third_person():
    assert person.third_person("I didn't notice. I wasn't there. I walk home.", "Rowan") == \
        "Rowan didn't notice. Rowan wasn't there. Rowan walks home."


def test_saints_towns_a_district_has_and_a_rank_are_told_apart():
    assert places.places("She works at St. Jude's Infirmary.") == ["St. Jude's Infirmary"]
    assert places.places("The chimneys of Cogsgate glow red against the fog.") == ["Cogsgate"]
    assert places.places("The House Surgeon will see you now.") == []   # a rank, though "House" heads places
    assert "Cogsgate" not in names.latin_people(["The chimneys of Cogsgate glow.", "Cogsgate sleeps."],
                                                "The chimneys of Cogsgate glow. Cogsgate sleeps.")
    assert names.latin_people(["Pa worked rock for thirty years.", "Pa never had a thing."],
                              "Pa worked rock for thirty years. Pa never had a thing.") == []


def test_a_believed_or_supposed_state_is_no_state():
    people = ["Mira", "Tobin", "苏晚晴"]
    assert states.state_changes("I thought I was writing to tell you she was dead.", "Silas", people) == []
    assert states.state_changes("If Tobin is hurt, we leave.", "Silas", people) == []
    assert states.state_changes("我以为苏晚晴死了。", "林风", people) == []
    assert states.state_changes("He said Mira was injured.", "Silas", people) == [("Mira", "was injured")]
    assert states.state_changes("So Mira was hurt after all.", "Silas", people) == [("Mira", "was hurt after all")]


def test_words_of_a_places_name_are_no_person():
    text = ("*The Ravensworth Museum of Natural Philosophy sits at the top of the hill.* "
            "\"The Ravensworth Museum of Natural Philosophy says nothing of ghosts,\" Mira mutters. "
            "\"Lord Ravensworth says less.\"")
    reply = answer(inp([("Rowan", True, "I climb the hill.", True), ("Mira", False, text, True)]))
    people = [op.fields["name"] for op in by_type(reply, "character")]
    assert "Natural Philosophy" not in people and "Lord Ravensworth" in people
    assert "Ravensworth Museum of Natural Philosophy" in [op.fields["name"] for op in by_type(reply, "location")]


def test_a_batch_adds_at_most_seven_new_characters_but_links_every_stored_one_it_names():
    from bme_cli.providers.heuristic.extract import MAX_CHARACTERS, MAX_LINKED_CHARACTERS, _people
    stored = ["Aldous", "Brannoch", "Corvin", "Delphine", "Edric", "Fenna", "Garrick", "Hestia"]
    new = ["Ilsabet", "Jorund", "Kestrel", "Lucan", "Maelis", "Norwen", "Oriel", "Perrin", "Quillon"]
    text = " ".join(f"{n} nods." for n in [*stored, *new])
    got = _people([DialogueMessage(seq=1, role="assistant", name="Narrator", text=text)], [], stored)
    assert set(stored) <= set(got)
    assert len([n for n in got if n in new]) == min(MAX_CHARACTERS, MAX_LINKED_CHARACTERS - len(stored))
    assert len(got) <= MAX_LINKED_CHARACTERS
