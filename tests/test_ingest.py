"""Ingesting a chat: batches saved one by one, upkeep after the save, resume, edits, rebuilds."""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes import Clock, FakeChat, FakeMessage, ScriptedChatModel, WordHashEmbedder, counter_ids, heuristic, make_chat

from bme_cli.errors import BmeError
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli.memory.apply import is_update_event
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.ingest import (EditedMessage, check_edits, dry_run_plan, fingerprint, ingest_chat,
                                   plan_for, rebuild_from)
from bme_cli.settings import MemorySettings

SAMPLES = Path(__file__).resolve().parent.parent / "sample_chats"

STORY = [
    "The harbour of Saltmere is loud tonight.", "I am Rowan and I seek the Lantern of Vael.",
    "Mira studies you. My brother Tobin went north to the Ruined Tower three weeks ago.",
    "Then we go north together.", "Mira buys rope, bread and lamp oil at the east gate market.",
    "Someone follows us from the gate.", "Mira whispers: the Gray Hand smugglers, twelve of them.",
    "We cross the river ford at noon.", "In the Whispering Wood, Mira hears Tobin's name in the wind.",
    "We camp at the Hollow Oak.", "Mira was badly injured by a crossbow bolt near the Hollow Oak.",
]


def story_chat() -> FakeChat:
    return make_chat(STORY, user="Rowan", char="Mira")


RUNS = itertools.count(1)


def context(model=None, ids=None, **settings) -> MemoryContext:
    """A fresh run's context; ids are unique across runs unless given. The greeting is skipped
    unless asked for: these tests' batches are counted from the first reply (the default,
    greeting extracted, has its own tests)."""
    settings.setdefault("include_greeting", False)
    return MemoryContext(chat=model or ScriptedChatModel(fallback=heuristic), embedder=WordHashEmbedder(),
                         settings=MemorySettings(**settings), new_id=ids or counter_ids(f"r{next(RUNS)}-"),
                         now=Clock())


class Saves:
    def __init__(self):
        self.graphs: list[Graph] = []

    def __call__(self, graph: Graph) -> None:
        self.graphs.append(copy.deepcopy(graph))


def content(graph: Graph) -> tuple:
    """A graph's content without ids or times: nodes and edges (by their endpoints' labels)."""
    label = {n.id: (n.type, n.label()) for n in graph.nodes}
    nodes = sorted((n.type, repr(sorted(n.fields.items())), tuple(n.seq_range), n.archived, n.importance)
                   for n in graph.nodes)
    edges = sorted((label[e.from_id], label[e.to_id], e.relation, e.strength, e.invalid_at is None)
                   for e in graph.edges)
    return (nodes, edges, graph.last_processed_seq, graph.meta.extraction_count,
            sorted(graph.meta.fingerprints.items()))


# -- the run ----------------------------------------------------------------------------------
def test_ingest_drains_every_batch_and_saves_after_each():
    g, saves = Graph(), Saves()
    report = ingest_chat(story_chat(), g, context(), save=saves)
    assert report.ok and (report.batches_planned, report.batches_done) == (5, 5)
    assert len(saves.graphs) == 5
    assert [s.last_processed_seq for s in saves.graphs] == [2, 4, 6, 8, 10]
    assert [s.meta.extraction_count for s in saves.graphs] == [1, 2, 3, 4, 5]
    assert sorted(g.meta.fingerprints) == list(range(11))
    assert report.totals.created == len(g.nodes) - report.totals.auto_events
    assert report.usage["requests"] == 5 and report.last_processed_seq == 10


def test_upkeep_runs_after_the_batch_is_saved_with_the_persisted_counter():
    g, saves, calls = Graph(), Saves(), []

    def upkeep(graph, ctx, *, current_seq, new_node_ids):
        calls.append((graph.meta.extraction_count, len(saves.graphs), current_seq, list(new_node_ids)))
        return None

    report = ingest_chat(story_chat(), g, context(), save=saves, upkeep=upkeep)
    assert [c[:3] for c in calls] == [(1, 1, 2), (2, 3, 4), (3, 5, 6), (4, 7, 8), (5, 9, 10)]
    assert all(c[3] for c in calls) and report.totals.new_node_ids == [i for c in calls for i in c[3]]
    assert len(saves.graphs) == 5 + 5  # an upkeep report without `changed` is saved again


@dataclass
class Outcome:
    changed: bool
    failures: list


def test_upkeep_changes_are_saved_and_its_failures_reported_without_losing_the_batch():
    g, saves = Graph(), Saves()
    outcomes = iter([Outcome(False, []), Outcome(True, ["synopsis: model down"])])

    def upkeep(graph, ctx, **kw):
        try:
            return next(outcomes)
        except StopIteration:
            raise BmeError("compression broke") from None

    report = ingest_chat(make_chat(STORY[:7], user="Rowan", char="Mira"), g, context(), save=saves,
                         upkeep=upkeep)
    assert report.ok and report.batches_done == 3
    # each batch: one save with the batch (marking its upkeep due), one after the upkeep
    assert len(saves.graphs) == 2 + 2 + 2
    assert all("upkeepDue" in saved.meta.extra for saved in saves.graphs[0::2])
    assert "upkeepDue" not in g.meta.extra
    assert [f.stage for f in report.failures] == ["upkeep", "upkeep"]
    assert "model down" in report.failures[0].message and "compression broke" in report.failures[1].message
    assert g.last_processed_seq == 6


def test_an_interrupted_run_resumed_gives_the_same_graph_as_an_uninterrupted_one():
    whole = Graph()
    ingest_chat(story_chat(), whole, context(extract_every=2), save=lambda g: None)

    part, saves = Graph(), Saves()
    done = []
    first = ingest_chat(story_chat(), part, context(extract_every=2), save=saves,
                        on_batch=done.append, should_stop=lambda: len(done) >= 2)
    assert first.stopped and first.batches_done == 2
    resumed = copy.deepcopy(saves.graphs[-1])  # what a kill after the save leaves on disk
    second = ingest_chat(story_chat(), resumed, context(extract_every=2), save=lambda g: None)
    assert second.batches_done == 1
    assert content(resumed) == content(whole)


def test_the_extraction_counter_persists_across_runs():
    g, counts = Graph(), []

    def upkeep(graph, ctx, **kw):
        counts.append(graph.meta.extraction_count)

    ingest_chat(story_chat(), g, context(), save=lambda g: None, upkeep=upkeep, until=5)
    ingest_chat(story_chat(), g, context(), save=lambda g: None, upkeep=upkeep)
    assert counts == [1, 2, 3, 4, 5] and g.meta.extraction_count == 5


def test_greeting_and_language_follow_the_settings():
    chat = make_chat(["林风来到青云山。", "我是苏瑶。", "林风说：我受了重伤。"], user="苏瑶", char="林风")
    g = Graph()
    ctx = context()
    report = ingest_chat(chat, g, ctx, save=lambda g: None, include_greeting=True)
    assert report.language == "zh" and report.batches_done == 2
    assert ctx.chat.tasks[0].data.language == "zh"
    assert any("青云山" in n.label() for n in g.active_nodes("location"))
    english = ingest_chat(chat, Graph(), context(memory_lang="en"), save=lambda g: None)
    assert english.language == "en" and english.batches_done == 1


def test_the_greeting_is_extracted_by_default_and_skipped_when_asked():
    # The greeting sets the opening scene: its place is remembered unless the setting says skip.
    chat = make_chat(["Rain drums on the inn roofs in Saltmere.", "I sit down.", "Mira nods."], user="Rowan", char="Mira")
    g = Graph()
    default = ingest_chat(chat, g, MemoryContext(chat=ScriptedChatModel(fallback=heuristic), embedder=WordHashEmbedder(),
                                                 new_id=counter_ids(), now=Clock()), save=lambda g: None)
    assert MemorySettings().include_greeting and default.batches_done == 2
    assert [n.label() for n in g.active_nodes("location")] == ["Saltmere"]
    g, skipped = Graph(), context(include_greeting=False)
    assert ingest_chat(chat, g, skipped, save=lambda g: None).batches_done == 1
    assert g.active_nodes("location") == []
    assert [b.turns for b in plan_for(chat, Graph(), MemorySettings())] == [[0], [2]]


def test_plan_for_and_dry_run_call_no_model():
    chat = story_chat()
    # By default the greeting (seq 0, the character's) is the first turn; skipped, the first reply is.
    assert [b.turns for b in plan_for(chat, Graph(), MemorySettings(extract_every=2))] == [[0, 2], [4, 6], [8, 10]]
    skip = MemorySettings(extract_every=2, include_greeting=False)
    assert [b.turns for b in plan_for(chat, Graph(), skip)] == [[2, 4], [6, 8], [10]]
    plan = dry_run_plan(chat, Graph(), skip)
    assert [b.turns for b, _ in plan] == [[2, 4], [6, 8], [10]]
    assert all(tokens > 300 for _, tokens in plan)


# -- edited chats -----------------------------------------------------------------------------
def _ingested() -> tuple[FakeChat, Graph]:
    chat, g = story_chat(), Graph()
    ingest_chat(chat, g, context(), save=lambda g: None, until=6)
    return chat, g


def test_no_edits_are_reported_for_an_unchanged_chat_or_unprocessed_messages():
    chat, g = _ingested()
    chat.messages[9].text = chat.messages[9].raw = "changed after the last batch"
    assert check_edits(chat, g) == []


def test_edits_swipes_hidden_and_deleted_messages_are_told_apart():
    chat, g = _ingested()
    chat.messages[1].raw = "I am Rowan, and I seek nothing."
    chat.messages[4].swipe_id = 1
    chat.messages[4].raw = "Mira buys only rope."
    chat.messages[3].is_system = True
    assert check_edits(chat, g) == [EditedMessage(1, "edited"), EditedMessage(3, "edited"),
                                    EditedMessage(4, "swiped")]


def test_a_deleted_message_is_reported_once_not_as_every_later_one_edited():
    chat, g = _ingested()
    del chat.messages[2]
    for i, m in enumerate(chat.messages):
        m.seq = i
    assert check_edits(chat, g) == [EditedMessage(2, "deleted")]
    chat.messages = chat.messages[:4]
    assert EditedMessage(6, "deleted") in check_edits(chat, g)


def test_fingerprints_change_with_swipes_but_not_with_dates():
    m = FakeMessage(1, "A", False, "hi", swipe_id=0)
    assert fingerprint(m).endswith("/0") and fingerprint(m) != fingerprint(FakeMessage(1, "A", False, "hi"))


# -- rebuild ----------------------------------------------------------------------------------
def script():
    return ScriptedChatModel({"extract": [
        {"thought": "", "operations": [
            {"action": "create", "type": "event", "ref": "e", "fields": {"summary": "Rowan meets Mira"},
             "links": [{"targetRef": "m", "relation": "involved_in"}]},
            {"action": "create", "type": "character", "ref": "m", "fields": {"name": "Mira", "state": "calm"}}]},
        {"thought": "", "operations": [
            {"action": "update", "nodeId": "n2", "fields": {"state": "injured"}},
            {"action": "create", "type": "event", "fields": {"summary": "Mira is shot"},
             "links": [{"targetNodeId": "n2", "relation": "involved_in"}]}]},
        {"thought": "", "operations": [
            {"action": "delete", "nodeId": "n1"},
            {"action": "create", "type": "event", "fields": {"summary": "They camp"}}]},
    ]}, fallback=heuristic)


def test_rebuild_from_rolls_back_what_came_from_that_message_on():
    chat, g = story_chat(), Graph()
    ingest_chat(chat, g, context(script(), ids=counter_ids(), enable_precise_conflict=False),
                save=lambda g: None, until=6)
    before = {n.fields.get("summary") or n.fields.get("name"): n for n in g.nodes}
    assert before["Rowan meets Mira"].archived and before["Mira"].fields["state"] == "injured"

    changed = rebuild_from(g, 3, 10**13, assistant_turns=chat.assistant_turns)
    by = {n.fields.get("summary") or n.fields.get("name"): n for n in g.nodes}
    mira, met = by["Mira"], by["Rowan meets Mira"]
    assert (mira.fields, mira.seq_range, mira.archived, mira.embedding) == (
        {"name": "Mira", "state": "calm"}, [1, 2], False, None)
    assert not met.archived  # its delete came from message 6
    assert by["Mira is shot"].archived and by["They camp"].archived
    assert all(n.archived for n in g.nodes if is_update_event(n))
    active = {(e.from_id, e.to_id, e.relation) for e in g.edges if e.is_active()}
    assert active == {(met.id, mira.id, "involved_in")}
    assert g.last_processed_seq == 2 and max(g.meta.fingerprints) == 2
    assert changed == 5  # one restored, one rolled back, three archived


def test_rebuild_then_ingest_again_gives_the_graph_of_a_straight_run():
    straight = Graph()
    ingest_chat(story_chat(), straight, context(), save=lambda g: None)
    g = Graph()
    ingest_chat(story_chat(), g, context(), save=lambda g: None)
    rebuild_from(g, 5, 10**13, assistant_turns=story_chat().assistant_turns)
    ingest_chat(story_chat(), g, context(), save=lambda g: None)
    active = lambda graph: sorted((n.type, repr(sorted(n.fields.items())), tuple(n.seq_range))  # noqa: E731
                                  for n in graph.active_nodes())
    assert active(g) == active(straight)


def test_rebuild_from_zero_archives_everything_and_resets_the_counter():
    chat, g = _ingested()
    rebuild_from(g, 0, 10**13)
    assert all(n.archived for n in g.nodes) and not any(e.is_active() for e in g.edges)
    assert (g.last_processed_seq, g.meta.fingerprints, g.meta.extraction_count) == (-1, {}, 0)


def test_rebuild_brings_back_the_children_of_a_compressed_node_from_before_the_seq():
    g = Graph()
    kids = [add_node(g, make_node("event", {"summary": f"e{i}"}, i, 1, new_id=lambda i=i: f"k{i}"))
            for i in (1, 2, 6)]
    parent = add_node(g, make_node("event", {"summary": "summary"}, 6, 1, seq_range=[1, 6], level=1,
                                   new_id=lambda: "p"))
    parent.child_ids = [k.id for k in kids]
    for k in kids:
        k.archived, k.parent_id = True, "p"
    add_edge(g, "p", "k1", "related", 0.5, 1)
    rebuild_from(g, 4, 10**13)
    assert parent.archived and not any(e.is_active() for e in g.edges)
    assert [(k.id, k.archived, k.parent_id) for k in kids] == [("k1", False, None), ("k2", False, None),
                                                               ("k6", True, None)]


# -- the offline provider end to end on the sample chats --------------------------------------
@pytest.mark.parametrize("name", ["adventure.jsonl", "chinese.jsonl", "group.jsonl"])
def test_sample_chats_ingest_offline_end_to_end(name):
    read_chat = pytest.importorskip("bme_cli.chat").read_chat
    from bme_cli.providers.offline import HashEmbedder, OfflineChatModel
    chat = read_chat(SAMPLES / name)
    g = Graph()
    ctx = MemoryContext(chat=OfflineChatModel(), embedder=HashEmbedder(), new_id=counter_ids(), now=Clock())
    report = ingest_chat(chat, g, ctx, save=lambda g: None)
    assert report.ok and report.batches_done == report.batches_planned > 0
    events = [n for n in g.active_nodes("event") if not is_update_event(n)]
    assert len(events) == report.batches_done
    assert g.active_nodes("character") and all(n.embedding is not None for n in g.active_nodes())
    if name == "chinese.jsonl":
        assert report.language == "zh" and all("年" in e.fields["summary"] for e in events)


# -- against an OpenAI-compatible server ------------------------------------------------------
def test_ingest_through_an_openai_compatible_server(openai_stub):
    import openai_stub as st

    from bme_cli.providers.openai import OpenAIChatModel, OpenAIEmbedder
    from bme_cli.settings import ChatEndpoint, EmbeddingEndpoint
    event = {"thought": "t", "operations": [
        {"action": "create", "type": "event", "ref": "e", "fields": {"summary": "Rowan hires Mira"},
         "links": [{"targetRef": "m", "relation": "involved_in"}]},
        {"action": "create", "type": "character", "ref": "m", "fields": {"name": "Mira"}}]}
    openai_stub.enqueue(st.fenced(event), st.malformed(), st.reply_json({"operations": []}),
                        endpoint="chat")
    chat_model = OpenAIChatModel(ChatEndpoint(base_url=openai_stub.base_url, max_retries=0), json_modes={},
                                 sleep=lambda s: None)
    embedder = OpenAIEmbedder(EmbeddingEndpoint(base_url=openai_stub.base_url), sleep=lambda s: None)
    g = Graph()
    ctx = MemoryContext(chat=chat_model, embedder=embedder, new_id=counter_ids(), now=Clock(),
                        settings=MemorySettings(include_greeting=False))  # the replies answer #2 and #4
    report = ingest_chat(make_chat(STORY[:5], user="Rowan", char="Mira"), g, ctx, save=lambda g: None)
    assert report.ok and report.batches_done == 2
    assert [n.label() for n in g.active_nodes()] == ["Rowan hires Mira", "Mira"]
    assert all(n.embedding is not None for n in g.active_nodes())
    prompt = openai_stub.requests[0].messages[1]["content"]
    assert "#2 [assistant] Mira: Mira studies you." in prompt
