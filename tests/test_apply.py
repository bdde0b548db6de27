"""Operation execution (spec §3.5) case by case, with the fixes of spec §10 (3, 4, 16, 19)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
from fakes import Clock, ScriptedChatModel, counter_ids

from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli.graph.schema import DEFAULT_NODE_SCHEMA, Schema
from bme_cli.memory.apply import HISTORY_KEY, apply_operations, change_summary, is_update_event
from bme_cli.memory.context import MemoryContext
from bme_cli.prompts.extract import CreateOp, ExtractReply
from bme_cli.settings import MemorySettings


@pytest.fixture
def ctx() -> MemoryContext:
    return MemoryContext(chat=ScriptedChatModel(), embedder=None, new_id=counter_ids(), now=Clock())


def ops(*items: dict):
    return ExtractReply.model_validate({"thought": "", "operations": list(items)}).operations


def run(graph, ctx, *items, start=4, end=5):
    return apply_operations(graph, ops(*items), ctx, start_seq=start, end_seq=end)


def node(graph, type_id, fields, seq=1, ctx=None, importance=5.0):
    n = make_node(type_id, fields, seq, 1, importance=importance, new_id=(ctx.new_id if ctx else counter_ids("x")))
    n.embedding = np.ones(4, dtype=np.float32)
    return add_node(graph, n)


def active_edges(graph, relation=None):
    return [e for e in graph.edges if e.is_active() and (relation is None or e.relation == relation)]


# -- create -----------------------------------------------------------------------------------
def test_create_makes_a_node_covering_the_batch(ctx):
    g = Graph()
    r = run(g, ctx, {"action": "create", "type": "event", "fields": {"summary": "Mira found the key"},
                     "importance": "7", "clusters": ["quest"]})
    (n,) = g.nodes
    assert (n.type, n.fields, n.seq, n.seq_range, n.importance, n.clusters) == (
        "event", {"summary": "Mira found the key"}, 5, [4, 5], 7.0, ["quest"])
    assert (r.created, r.new_node_ids) == (1, [n.id])


def test_create_defaults_importance_to_5_and_clamps_it(ctx):
    g = Graph()
    run(g, ctx, {"action": "create", "type": "event", "fields": {"summary": "a"}},
        {"action": "create", "type": "event", "fields": {"summary": "b"}, "importance": 42})
    assert [n.importance for n in g.nodes] == [5.0, 10.0]


def test_forward_refs_resolve_in_the_second_pass(ctx):
    g = Graph()
    r = run(g, ctx,
            {"action": "create", "type": "event", "fields": {"summary": "they met"}, "ref": "e",
             "links": [{"targetRef": "loc", "relation": "occurred_at"}]},
            {"action": "create", "type": "location", "fields": {"name": "Saltmere"}, "ref": "loc"})
    ev, loc = g.nodes
    (e,) = g.edges
    assert (e.from_id, e.to_id, e.relation, e.strength) == (ev.id, loc.id, "occurred_at", 0.8)
    assert r.edges_created == 1 and not r.skipped


def test_unknown_type_and_empty_fields_are_skipped_and_counted(ctx):
    g = Graph()
    r = run(g, ctx, {"action": "create", "type": "spell", "fields": {"name": "x"}},
            {"action": "create", "type": "event", "fields": {"summary": "  ", "junk": {"a": 1}}})
    assert not g.nodes
    assert r.skipped == {"unknown_type": 1, "empty_fields": 1}


def test_field_values_are_clipped_and_junk_dropped(ctx):
    g = Graph()
    run(g, ctx, {"action": "create", "type": "event",
                 "fields": {"summary": "x" * 5000, "participants": ["A", "B"], "nested": {"k": 1},
                            "n": 3, "ok": True}})
    f = g.nodes[0].fields
    assert len(f["summary"]) == 2000
    assert f["participants"] == "A, B" and f["n"] == 3 and f["ok"] is True and "nested" not in f


def test_at_most_64_operations_run(ctx):
    many = [{"action": "create", "type": "event", "fields": {"summary": f"e{i}"}} for i in range(70)]
    reply = ExtractReply.model_validate({"operations": many})
    assert (len(reply.operations), reply.excess_ops) == (64, 6)
    g = Graph()
    direct = [CreateOp(type="event", fields={"summary": f"e{i}"}) for i in range(70)]
    r = apply_operations(g, direct, ctx, start_seq=1, end_seq=1)
    assert r.created == 64 and len(g.nodes) == 64
    assert r.skipped["too_many_ops"] == 6


# -- latestOnly -------------------------------------------------------------------------------
def test_latest_only_create_with_a_known_name_goes_through_the_update_path(ctx):
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "healthy"}, seq=2, ctx=ctx)
    other = node(g, "event", {"summary": "earlier"}, seq=2, ctx=ctx)
    r = run(g, ctx, {"action": "create", "type": "character", "ref": "m",
                     "fields": {"name": "  mira ", "state": "injured"}},
            {"action": "create", "type": "event", "fields": {"summary": "ambush"},
             "links": [{"targetRef": "m", "relation": "involved_in"}]}, start=7, end=8)
    assert len(g.active_nodes("character")) == 1
    assert mira.fields == {"name": "Mira", "state": "injured"}
    assert (mira.seq, mira.seq_range, mira.embedding) == (8, [2, 8], None)
    assert r.updated == 1 and mira.id not in r.new_node_ids and r.created == 1
    (auto,) = [n for n in g.nodes if is_update_event(n)]
    assert "state: healthy -> injured" in auto.fields["summary"]
    ambush = g.nodes[-1]
    assert any(e.from_id == ambush.id and e.to_id == mira.id and e.relation == "involved_in" for e in g.edges)
    assert other.fields == {"summary": "earlier"}


def test_latest_only_matches_by_title_when_there_is_no_name(ctx):
    types = copy.deepcopy(DEFAULT_NODE_SCHEMA) + [{
        "id": "quest", "label": "Quest", "tableName": "quest_table", "latestOnly": True,
        "columns": [{"name": "title", "required": True}, {"name": "stage"}]}]
    ctx.schema = Schema(types)
    g = Graph()
    q = node(g, "quest", {"title": "Find Tobin", "stage": "start"}, ctx=ctx)
    run(g, ctx, {"action": "create", "type": "quest", "fields": {"title": "find tobin", "stage": "caves"}})
    assert len(g.active_nodes("quest")) == 1 and q.fields["stage"] == "caves"


def test_latest_only_type_known_only_by_summary_keeps_a_single_node(ctx):
    g = Graph()
    syn = node(g, "synopsis", {"summary": "the story so far, part one"}, ctx=ctx)
    run(g, ctx, {"action": "create", "type": "synopsis", "fields": {"summary": "the story so far, part two"}})
    assert len(g.active_nodes("synopsis")) == 1
    assert syn.fields["summary"] == "the story so far, part two"


def test_latest_only_with_a_new_name_creates(ctx):
    g = Graph()
    node(g, "character", {"name": "Mira"}, ctx=ctx)
    r = run(g, ctx, {"action": "create", "type": "character", "fields": {"name": "Tobin"}})
    assert r.created == 1 and len(g.active_nodes("character")) == 2



def _stored_after(g: Graph, ctx, type_id: str, stored: list[str], created: list[str]) -> list[str]:
    """The names of type_id after storing `stored` and creating `created`, one op each."""
    for name in stored:
        node(g, type_id, {"name": name}, ctx=ctx)
    for name in created:
        run(g, ctx, {"action": "create", "type": type_id, "fields": {"name": name}})
    return sorted(n.fields["name"] for n in g.active_nodes(type_id))


def test_a_place_written_another_way_is_the_same_place_and_keeps_its_stored_name(ctx):
    g = Graph()
    assert _stored_after(g, ctx, "location", ["青石城", "the Sunken Keep of Ard"],
                         ["青石", "Sunken Keep", "sunken keep of ard"]) == ["the Sunken Keep of Ard", "青石城"]
    # a place inside another is a place of its own; "the Ard" is no other form of the person Ard
    run(g, ctx, {"action": "create", "type": "location", "fields": {"name": "青石城码头"}},
        {"action": "create", "type": "character", "fields": {"name": "Ard"}},
        {"action": "create", "type": "character", "fields": {"name": "the Ard"}})
    assert len(g.active_nodes("location")) == 3 and len(g.active_nodes("character")) == 2


def test_a_place_named_by_its_last_words_is_the_one_stored_place_they_end(ctx):
    g = Graph()
    assert _stored_after(g, ctx, "location", ["Shiloh Gap", "Galena Territorial Assay Office"],
                         ["Gap", "the assay office"]) == ["Galena Territorial Assay Office", "Shiloh Gap"]
    # the short form first: the full name replaces it, and it stays an alias
    g = Graph()
    assert _stored_after(g, ctx, "location", ["Gap"], ["Shiloh Gap"]) == ["Shiloh Gap"]
    assert g.active_nodes("location")[0].fields["aliases"] == "Gap"
    # two stored places end in the word: it names neither
    g = Graph()
    assert _stored_after(g, ctx, "location", ["Hadley Station", "Vell Station"], ["station"]) == [
        "Hadley Station", "Vell Station", "station"]


def test_a_person_named_shorter_or_longer_is_the_one_stored_person_it_fits(ctx):
    g = Graph()
    assert _stored_after(g, ctx, "character", ["Captain Elena Reyes", "沈砚秋"],
                         ["Reyes", "Elena Reyes", "砚秋"]) == ["Captain Elena Reyes", "沈砚秋"]
    # a surname two stored people share names neither of them; a place is never a person's form
    node(g, "character", {"name": "Lord Edmund Ashcombe"}, ctx=ctx)
    node(g, "character", {"name": "Lady Cecily Ashcombe"}, ctx=ctx)
    run(g, ctx, {"action": "create", "type": "character", "fields": {"name": "Ashcombe"}},
        {"action": "create", "type": "location", "fields": {"name": "Reyes"}})
    assert len(g.active_nodes("character")) == 5 and len(g.active_nodes("location")) == 1


def test_same_person_name_takes_words_of_a_fuller_name_or_a_chinese_given_name():
    from bme_cli.text import same_person_name
    assert same_person_name("reyes", "captain elena reyes") and same_person_name("dr. okafor", "dr. imani okafor")
    assert same_person_name("砚秋", "沈砚秋") and same_person_name("若雪", "上官若雪")
    assert not same_person_name("ard", "the ard") and not same_person_name("elena reyes", "reyes")
    assert not same_person_name("沈砚", "沈砚秋") and not same_person_name("秋", "沈砚秋")
    # titles aside, but a man's and a woman's title name two people
    assert same_person_name("captain reyes", "elena reyes") and same_person_name("doctor orlov", "dr. nadia orlov")
    assert not same_person_name("mr. crane", "mrs. crane") and not same_person_name("lady ashcombe", "lord edmund ashcombe")


def test_a_pet_form_of_the_given_name_is_the_same_person():
    from bme_cli.text import same_person_name
    assert same_person_name("ruthie coffin", "ruth coffin") and same_person_name("ruthie", "ruth coffin")
    assert same_person_name("tommy", "tom reyes") and same_person_name("宁儿", "段婉宁")
    assert not same_person_name("ruthie smith", "ruth coffin") and not same_person_name("rosie", "ross")
    assert not same_person_name("宁儿", "段婉清")
    # the classic pet forms that are no prefix of the name
    assert same_person_name("nell", "eleanor ashworth") and same_person_name("hal", "henry marlowe")
    assert same_person_name("georgie", "georgiana ashworth") and not same_person_name("nell", "henry marlowe")


def test_same_place_name_reads_articles_of_phrases_and_chinese_place_characters():
    from bme_cli.text import same_place_name
    assert same_place_name("the old mill", "old mill") and same_place_name("ruined tower", "ruined tower of vael")
    assert same_place_name("临安", "临安城") and not same_place_name("临", "临城")
    assert not same_place_name("vell", "vell infirmary") and not same_place_name("上海", "上海人")
    # a word cut short: "med bay" is the medical bay, "hydro ring" the hydroponics ring
    assert same_place_name("med bay", "medical bay") and same_place_name("the hydro ring", "hydroponics ring")
    assert not same_place_name("bay two", "bay twelve") and not same_place_name("me bay", "medical bay")
    assert not same_place_name("east lab", "eastern laboratory") and not same_place_name("med", "medical")

# -- update -----------------------------------------------------------------------------------
def test_update_merges_fields_and_records_a_marked_change_event(ctx):
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "healthy"}, seq=3, ctx=ctx, importance=9)
    r = run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "injured", "goal": "rest"}},
            start=9, end=10)
    assert mira.fields == {"name": "Mira", "state": "injured", "goal": "rest"}
    assert (mira.seq, mira.seq_range, mira.embedding) == (10, [3, 10], None)
    (auto,) = [n for n in g.nodes if n.type == "event"]
    assert auto.fields == {"summary": "character state update: state: healthy -> injured; goal: empty -> rest",
                           "participants": "Mira", "status": "resolved"}
    assert (auto.seq, auto.importance, is_update_event(auto)) == (10, 8.0, True)
    assert auto.extra == {"bmeAuto": "update"}
    (e,) = g.edges
    assert (e.from_id, e.to_id, e.relation, e.strength) == (auto.id, mira.id, "updates", 0.9)
    assert (r.updated, r.auto_events, r.created, r.new_node_ids) == (1, 1, 0, [])


def test_change_summary_lists_three_changes_in_the_memory_language():
    changes = [("state", None, "受伤"), ("goal", "a", "b"), ("x", 1, 2), ("y", 1, 3)]
    assert change_summary("character", changes, "zh") == "character 状态更新：state: 空 -> 受伤；goal: a -> b；x: 1 -> 2"


def test_a_new_update_invalidates_the_previous_update_edges(ctx):
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "a"}, ctx=ctx)
    run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "b"}})
    r = run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "c"}}, start=6, end=7)
    first, second = [e for e in g.edges if e.relation == "updates"]
    assert first.invalid_at is not None and second.invalid_at is None
    assert r.edges_invalidated == 1


def test_update_with_a_source_adds_a_temporal_edge_and_replaces_the_previous_one(ctx):
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "a"}, ctx=ctx)
    ev = node(g, "event", {"summary": "the fight"}, ctx=ctx)
    run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "b"}, "sourceNodeId": ev.id})
    (t1,) = active_edges(g, "temporal_update")
    assert (t1.from_id, t1.to_id, t1.strength) == (ev.id, mira.id, 0.95)
    run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "c"}, "sourceNodeId": ev.id,
                 "temporalStrength": 0.5})
    (t2,) = active_edges(g, "temporal_update")
    assert t1.invalid_at is not None and t2 is not t1 and t2.strength == 0.5


def test_update_of_an_archived_node_is_refused(ctx):
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "a"}, ctx=ctx)
    mira.archived = True
    r = run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "b"}},
            {"action": "update", "nodeId": "nope", "fields": {"state": "b"}})
    assert mira.fields["state"] == "a" and len(g.nodes) == 1
    assert r.skipped == {"archived_target": 1, "unknown_node": 1} and r.updated == 0


def test_update_without_a_change_keeps_the_embedding_and_makes_no_event(ctx):
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "a"}, seq=2, ctx=ctx)
    r = run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "a"}})
    assert mira.embedding is not None and mira.seq_range == [2, 5] and r.auto_events == 0
    assert len(g.nodes) == 1


def test_update_seq_is_kept_inside_the_batch_and_snapshots_are_kept(ctx):
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "a"}, seq=2, ctx=ctx)
    run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "b"}, "seq": 9999})
    assert mira.seq == 5
    snap = mira.extra[HISTORY_KEY]["entries"][-1]
    assert (snap["seq"], snap["fields"], snap["seqRange"]) == (5, {"name": "Mira", "state": "a"}, [2, 2])


def test_no_change_event_without_an_event_type(ctx):
    ctx.schema = Schema([{"id": "character", "label": "c", "tableName": "t", "latestOnly": True,
                          "columns": [{"name": "name", "required": True}, {"name": "state"}]}])
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "a"}, ctx=ctx)
    r = run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "b"}})
    assert r.updated == 1 and r.auto_events == 0 and len(g.nodes) == 1


def test_change_events_are_written_in_chinese_for_chinese_memories(ctx):
    ctx.language = "zh"
    g = Graph()
    lin = node(g, "character", {"name": "林风"}, ctx=ctx)
    run(g, ctx, {"action": "update", "nodeId": lin.id, "fields": {"state": "受了重伤"}})
    auto = [n for n in g.nodes if is_update_event(n)][0]
    assert auto.fields["summary"] == "character 状态更新：state: 空 -> 受了重伤"


# -- delete -----------------------------------------------------------------------------------
def test_delete_archives_the_node_and_invalidates_its_edges(ctx):
    g = Graph()
    a = node(g, "character", {"name": "A"}, ctx=ctx)
    b = node(g, "event", {"summary": "b"}, ctx=ctx)
    add_edge(g, b.id, a.id, "involved_in", 0.9, 1)
    r = run(g, ctx, {"action": "delete", "nodeId": a.id}, {"action": "delete", "nodeId": "ghost"},
            {"action": "delete", "nodeId": a.id})
    assert a.archived and not active_edges(g)
    assert (r.archived, r.edges_invalidated) == (1, 1)
    assert r.skipped == {"unknown_node": 1, "archived_target": 1}


# -- links ------------------------------------------------------------------------------------
def test_link_rules_unknown_relation_self_link_missing_and_archived_targets(ctx):
    g = Graph()
    a = node(g, "character", {"name": "A"}, ctx=ctx)
    gone = node(g, "character", {"name": "Gone"}, ctx=ctx)
    gone.archived = True
    r = run(g, ctx, {"action": "create", "type": "event", "fields": {"summary": "s"}, "ref": "me", "links": [
        {"targetNodeId": a.id, "relation": "Loves"},
        {"targetRef": "me"},
        {"targetNodeId": "nobody"},
        {"targetRef": "missing"},
        {"targetNodeId": gone.id},
        {"targetNodeId": a.id, "relation": "contradicts", "strength": "0.3"},
    ]})
    rel = {e.relation: e for e in g.edges}
    assert set(rel) == {"related", "contradicts"}
    assert rel["contradicts"].edge_type == 255 and rel["contradicts"].strength == 0.3
    assert r.relations_defaulted == 1 and r.edges_created == 2
    assert r.skipped == {"self_link": 1, "unknown_node": 1, "unknown_ref": 1, "archived_target": 1}


def test_a_merged_edge_is_not_counted_as_new(ctx):
    g = Graph()
    a = node(g, "character", {"name": "A"}, ctx=ctx)
    link = {"targetNodeId": a.id, "relation": "involved_in", "strength": 0.5}
    r = run(g, ctx, {"action": "create", "type": "event", "fields": {"summary": "s"}, "ref": "e", "links": [link]},
            {"action": "update", "nodeId": "e", "fields": {}, "links": [dict(link, strength=0.9)]})
    (e,) = g.edges
    assert (r.edges_created, r.edges_merged, e.strength) == (1, 1, 0.9)


def test_update_events_setting_does_not_change_the_marker(ctx):
    ctx.settings = MemorySettings(update_events_core=True)
    g = Graph()
    mira = node(g, "character", {"name": "Mira", "state": "a"}, ctx=ctx)
    run(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "b"}})
    assert sum(is_update_event(n) for n in g.nodes) == 1  # the injector reads the setting


def test_a_full_name_takes_the_place_of_its_forms_and_folds_a_titled_surname_in(ctx):
    g = Graph()
    node(g, "character", {"name": "Nell"}, ctx=ctx)
    carter = node(g, "character", {"name": "Miss Carter", "state": "frightened"}, ctx=ctx)
    node(g, "character", {"name": "Hobbs"}, ctx=ctx)
    event = node(g, "event", {"summary": "Miss Carter screams."}, ctx=ctx)
    add_edge(g, carter.id, event.id, "involved_in", 0.9, 1)
    run(g, ctx, {"action": "create", "type": "character", "fields": {"name": "Nell Carter"}})
    (nell,) = [n for n in g.active_nodes("character") if n.fields["name"] == "Nell Carter"]
    assert sorted(n.fields["name"] for n in g.active_nodes("character")) == ["Hobbs", "Nell Carter"]
    assert nell.fields["aliases"] == "Nell, Miss Carter" and nell.fields["state"] == "frightened"
    assert carter.archived and event.id in [e.to_id for e in g.edges_of(nell.id)]
    assert nell.embedding is None   # renamed through the ordinary update: re-embedded, a change event
    # two stored people with the surname: nothing is folded
    g2 = Graph()
    for name in ("Ike", "Brother Mercer", "Mrs. Mercer"):
        node(g2, "character", {"name": name}, ctx=ctx)
    run(g2, ctx, {"action": "create", "type": "character", "fields": {"name": "Ike Mercer"}})
    assert sorted(n.fields["name"] for n in g2.active_nodes("character")) == ["Brother Mercer", "Ike Mercer", "Mrs. Mercer"]
    # a Chinese given name for a title, and for a given name alone
    g3 = Graph()
    node(g3, "character", {"name": "韩主管"}, ctx=ctx)
    run(g3, ctx, {"action": "create", "type": "character", "fields": {"name": "韩铮"}})
    assert [(n.fields["name"], n.fields["aliases"]) for n in g3.active_nodes("character")] == [("韩铮", "韩主管")]


def test_a_pet_form_of_a_first_name_is_the_person_before_a_titled_surname_is(ctx):
    from bme_cli.text import same_person_name
    assert same_person_name("winnie", "winifred harker") and same_person_name("junie", "juniper sloane")
    assert not same_person_name("bobby", "albert hale") and not same_person_name("winnie", "wendell sikes")
    assert same_person_name("bobby", "robert hale")   # a classic pet form, though no prefix
    # "Winifred Harker" fits "Winnie" by her first name and "Mr. Harker" by the surname alone:
    # the first name decides, and Winnie takes the full name
    g = Graph()
    node(g, "character", {"name": "Winnie"}, ctx=ctx)
    node(g, "character", {"name": "Mr. Harker"}, ctx=ctx)
    node(g, "character", {"name": "Silas Harker"}, ctx=ctx)
    run(g, ctx, {"action": "create", "type": "character", "fields": {"name": "Winifred Harker"}})
    assert sorted((n.fields["name"], n.fields.get("aliases")) for n in g.active_nodes("character")) == \
        [("Mr. Harker", None), ("Silas Harker", None), ("Winifred Harker", "Winnie")]
