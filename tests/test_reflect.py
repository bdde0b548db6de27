"""Reflection (spec §6.4): inputs, importance clamps, `evolves` edges, offline heuristic."""
from __future__ import annotations

import itertools

import pytest

from fakes import ScriptedReplies as ScriptedChat
from bme_cli.graph.model import Graph, Node
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.reflect import build_reflect_input, generate_reflection
from bme_cli.prompts.reflect import (Contradiction, ReflectEntity, ReflectEvent, ReflectInput,
                                     build_reflect_task)
from bme_cli.providers.heuristic.reflect import answer
from bme_cli.providers.offline import OfflineChatModel

NOW = 1_700_000_000_000


def make_ctx(chat=None, language="en") -> MemoryContext:
    counter = itertools.count(1)
    return MemoryContext(chat=chat or OfflineChatModel(), embedder=None, now=lambda: NOW,
                         new_id=lambda: f"id{next(counter)}", language=language)


def events(g: Graph, ctx: MemoryContext, n: int) -> list[Node]:
    people = ["Mira, Kael", "Mira", "Oren", "Mira, Oren", "Kael", "Mira", "Oren", "Mira"]
    return [add_node(g, make_node("event", {"summary": f"Scene {i}: the heist plan changes.",
                                            "participants": people[i % len(people)],
                                            "status": "ongoing" if i % 2 else "resolved"},
                                  i * 3, NOW, new_id=ctx.new_id)) for i in range(n)]


def test_fewer_than_two_events_give_no_reflection():
    g, ctx = Graph(), make_ctx(ScriptedChat())
    events(g, ctx, 1)
    assert generate_reflection(g, ctx, current_seq=3) is None


@pytest.mark.parametrize("given, stored", [(None, 7.0), (2, 5.0), (9, 9.0), (14, 10.0)])
def test_reflection_importance_defaults_to_7_and_is_clamped_to_5_10(given, stored):
    g, ctx = Graph(), make_ctx(ScriptedChat({"insight": "Mira hides her fear.", "importance": given}))
    events(g, ctx, 3)
    assert generate_reflection(g, ctx, current_seq=9).importance == stored


def test_reflection_node_fields_fallbacks_and_evolves_edges_to_the_last_three_events():
    g, ctx = Graph(), make_ctx(ScriptedChat({"insight": "Trust is breaking down.", "trigger": None}))
    made = events(g, ctx, 8)
    node = generate_reflection(g, ctx, current_seq=30)
    assert node.type == "reflection" and node.seq == 30
    assert node.fields == {"insight": "Trust is breaking down.", "trigger": made[-1].fields["summary"],
                           "suggestion": ""}
    edges = [(e.from_id, e.to_id, e.relation, e.strength) for e in g.edges]
    assert edges == [(node.id, m.id, "evolves", 0.75) for m in made[-3:]]


def test_empty_insight_creates_nothing():
    g, ctx = Graph(), make_ctx(ScriptedChat({"insight": ""}))
    events(g, ctx, 3)
    assert generate_reflection(g, ctx, current_seq=9) is None and g.edges == []


def test_input_takes_the_latest_six_events_characters_threads_and_contradictions_by_label():
    g, ctx = Graph(), make_ctx()
    made = events(g, ctx, 9)
    made[0].archived = True
    for i in range(7):
        add_node(g, make_node("character", {"name": f"C{i}", "state": f"state {i}"}, i, NOW, new_id=ctx.new_id))
    a = add_node(g, make_node("event", {"summary": "Kael was in the vault."}, 1, NOW, new_id=ctx.new_id))
    b = add_node(g, make_node("event", {"summary": "Kael was at the inn."}, 2, NOW, new_id=ctx.new_id))
    add_edge(g, b.id, a.id, "contradicts", 0.9, NOW, new_id=ctx.new_id)
    inp = build_reflect_input(g, ctx)
    assert [e.seq for e in inp.events] == [m.seq for m in made[-6:]]
    assert [c.label for c in inp.characters] == [f"C{i}" for i in range(2, 7)]
    assert inp.contradictions == [Contradiction(source="Kael was at the inn.", target="Kael was in the vault.")]
    user = build_reflect_task(inp).user
    assert "Kael was at the inn. -> Kael was in the vault. (contradicts)" in user


def test_offline_reflection_names_the_recurring_participant_and_an_open_issue():
    g, ctx = Graph(), make_ctx()
    events(g, ctx, 6)
    add_node(g, make_node("character", {"name": "Mira", "state": "hunted by the guard"}, 5, NOW,
                          new_id=ctx.new_id))
    node = generate_reflection(g, ctx, current_seq=20)
    assert node.fields["insight"].startswith("Mira is at the centre of recent events (4 of the last 6)")
    assert "Still unresolved" in node.fields["insight"]
    assert "hunted by the guard" in node.fields["suggestion"]
    assert node.importance == 6


def test_offline_reflection_prefers_a_contradiction():
    inp = ReflectInput(events=[ReflectEvent(seq=1, summary="a"), ReflectEvent(seq=2, summary="b")],
                       contradictions=[Contradiction(source="Kael was at the inn", target="Kael was in the vault")])
    reply = answer(inp)
    assert "Kael was at the inn" in reply.insight and "Kael was in the vault" in reply.insight
    assert reply.importance == 7


def test_offline_reflection_has_nothing_to_say_without_a_recurring_name():
    inp = ReflectInput(events=[ReflectEvent(seq=1, summary="a", participants="A"),
                               ReflectEvent(seq=2, summary="b", participants="B")],
                       threads=[ReflectEntity(label="T")])
    assert answer(inp).insight == ""


def test_offline_reflection_writes_chinese_for_chinese_memory():
    inp = ReflectInput(language="zh", events=[ReflectEvent(seq=1, summary="米拉逃走了。", participants="米拉"),
                                              ReflectEvent(seq=2, summary="米拉回来了。", participants="米拉、凯尔")])
    assert answer(inp).insight.startswith("米拉是近期事件的中心")
