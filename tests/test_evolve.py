"""Evolution (spec §6.5) fixed per §10.21: only shown neighbours change, old text is kept."""
from __future__ import annotations

import itertools

import numpy as np

from fakes import ScriptedReplies as ScriptedChat
from bme_cli.graph.model import Graph, Node
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.evolve import evolve
from bme_cli.prompts.evolve import EvolveInput, EvolveNodeView
from bme_cli.providers.base import normalise_rows
from bme_cli.providers.heuristic.evolve import answer
from bme_cli.providers.offline import HashEmbedder, OfflineChatModel
from bme_cli.settings import MemorySettings

NOW = 1_700_000_000_000
VOCAB = ("spy", "kael", "vault", "harbour", "mira", "rain")


class KeywordEmbedder:
    """Counts of a few keywords: similarity is predictable by reading the texts."""

    model_id, offline, dimension = "test:keywords", True, len(VOCAB) + 1

    def embed(self, texts):
        rows = [[t.lower().count(w) for w in VOCAB] + [0.1] for t in texts]
        return normalise_rows(np.asarray(rows, dtype=np.float32))


def make_ctx(chat=None, embedder=None, neighbours=5) -> MemoryContext:
    counter = itertools.count(1)
    return MemoryContext(chat=chat or OfflineChatModel(), embedder=embedder or KeywordEmbedder(),
                         settings=MemorySettings(evo_neighbor_count=neighbours), now=lambda: NOW,
                         new_id=lambda: f"id{next(counter)}")


def add(g: Graph, ctx: MemoryContext, type_id: str, seq: int = 1, **fields) -> Node:
    node = add_node(g, make_node(type_id, fields, seq, NOW, new_id=ctx.new_id))
    node.embedding = ctx.embedder.embed([" ".join(fields.values())])[0]
    return node


def spy_graph(ctx: MemoryContext):
    g = Graph()
    near = add(g, ctx, "event", summary="Kael spy Kael opened the vault at night")
    kael = add(g, ctx, "character", name="Kael", state="a loyal guard of the vault")
    far = add(g, ctx, "event", summary="rain over the harbour")
    new = add_node(g, make_node("event", {"summary": "Kael is unmasked as a spy; he opened the vault"},
                                9, NOW, new_id=ctx.new_id))
    return g, near, kael, far, new


def test_without_an_embedder_evolution_does_nothing():
    g, ctx = Graph(), make_ctx(ScriptedChat())
    ctx.embedder = None
    report = evolve(g, ctx, ["x"])
    assert report.reason and not report.changed


def test_only_shown_neighbours_can_be_linked_or_edited():
    reply = lambda task: {  # noqa: E731 - refers to ids the model was and was not shown
        "should_evolve": True, "reason": "Kael was the spy all along",
        "suggested_connections": ["n1", far.id, "n9"],
        "neighbor_updates": [{"nodeId": "n2", "newContext": "secretly a spy"},
                             {"nodeId": far.id, "newContext": "rewritten", "newTags": ["hack"]}]}
    chat = ScriptedChat(reply)
    ctx = make_ctx(chat, neighbours=2)
    g, near, kael, far, new = spy_graph(ctx)
    kael_before = dict(kael.fields)
    report = evolve(g, ctx, [new.id])
    shown = chat.tasks[0].data.neighbours
    assert [(v.ref, v.fields) for v in shown] == [("n1", near.fields), ("n2", kael_before)]
    assert far.fields["summary"] not in chat.tasks[0].user
    assert report.rejected == 3 and report.evolved == 1
    assert far.fields == {"summary": "rain over the harbour"} and far.clusters == []
    assert far.evolution_history is None
    assert [(e.from_id, e.to_id, e.relation) for e in g.edges] == [(new.id, near.id, "related")]
    assert kael.fields["state"] == "secretly a spy"


def test_state_is_replaced_and_the_old_text_kept_in_history():
    chat = ScriptedChat(lambda task: {
        "should_evolve": True, "reason": "unmasked",
        "neighbor_updates": [{"nodeId": next(v.ref for v in task.data.neighbours if v.type == "character"),
                              "newContext": "a spy inside the guard", "newTags": ["traitor", "traitor", "guard"]}]})
    ctx = make_ctx(chat)
    g, near, kael, far, new = spy_graph(ctx)
    report = evolve(g, ctx, [new.id])
    assert kael.fields["state"] == "a spy inside the guard" and kael.clusters == ["traitor", "guard"]
    assert kael.evolution_history == [
        {"triggeredBy": new.id, "timestamp": NOW, "reason": "unmasked", "field": "state",
         "previous": "a loyal guard of the vault"},
        {"triggeredBy": new.id, "timestamp": NOW, "reason": "unmasked", "field": "clusters", "previous": []}]
    assert report.updated == [kael.id]
    expected = ctx.embedder.embed(["Kael | a spy inside the guard"])[0]
    assert np.allclose(kael.embedding, expected)          # re-embedded after the change
    assert "_evolutionHistory" in kael.to_v3()


def test_an_event_summary_is_never_overwritten_only_annotated_once():
    def update(text):
        return lambda task: {"should_evolve": True, "reason": "r", "neighbor_updates": [
            {"nodeId": next(v.ref for v in task.data.neighbours if v.type == "event" and "spy" in v.fields["summary"]),
             "newContext": text}]}
    ctx = make_ctx(ScriptedChat(update("he was stealing for the enemy"), update("he stole the map")))
    g, near, kael, far, new = spy_graph(ctx)
    original = near.fields["summary"]
    evolve(g, ctx, [new.id])
    assert near.fields["summary"] == original + " (In hindsight: he was stealing for the enemy)"
    evolve(g, ctx, [new.id])
    assert near.fields["summary"] == original + " (In hindsight: he stole the map)"
    assert [h["previous"] for h in near.evolution_history] == [
        original, original + " (In hindsight: he was stealing for the enemy)"]


def test_should_evolve_false_changes_nothing():
    ctx = make_ctx(ScriptedChat({"should_evolve": False, "suggested_connections": ["n1"]}))
    g, near, kael, far, new = spy_graph(ctx)
    edges = len(g.edges)
    report = evolve(g, ctx, [new.id])
    assert not report.changed and len(g.edges) == edges and report.evolved == 0


def test_invalid_reply_skips_that_node_and_the_next_still_evolves():
    ctx = make_ctx(ScriptedChat({"should_evolve": "maybe?"},
                                {"should_evolve": True, "reason": "r", "suggested_connections": ["n1"]}))
    g, near, kael, far, new = spy_graph(ctx)
    other = add_node(g, make_node("event", {"summary": "the harbour floods in the rain"}, 10, NOW,
                                  new_id=ctx.new_id))
    report = evolve(g, ctx, [new.id, other.id])
    assert report.skipped == 1 and report.considered == 2 and report.edges_created == 1
    assert [(e.from_id, e.to_id) for e in g.edges] == [(other.id, far.id)]


def test_no_redundant_link_when_the_pair_is_already_linked():
    ctx = make_ctx(ScriptedChat({"should_evolve": True, "reason": "r", "suggested_connections": ["n1", "n2"]}),
                   neighbours=2)
    g, near, kael, far, new = spy_graph(ctx)
    add_edge(g, kael.id, new.id, "involved_in", 0.9, NOW, new_id=ctx.new_id)
    report = evolve(g, ctx, [new.id])
    assert report.edges_created == 1
    assert {(e.from_id, e.to_id, e.relation) for e in g.edges} == {
        (kael.id, new.id, "involved_in"), (new.id, near.id, "related")}


def test_offline_evolution_links_on_strong_shared_names_and_never_rewrites():
    ctx = make_ctx(embedder=HashEmbedder(64))
    g = Graph()
    kael = add(g, ctx, "character", name="Kael", state="a loyal guard")
    meal = add(g, ctx, "event", summary="the guards ate soup in the hall", participants="Oren")
    new = add_node(g, make_node("event", {"summary": "Kael opened the vault for the enemy",
                                          "participants": "Kael"}, 9, NOW, new_id=ctx.new_id))
    before = {n.id: dict(n.fields) for n in g.nodes}
    report = evolve(g, ctx, [new.id])
    assert [(e.from_id, e.to_id, e.relation, e.strength) for e in g.edges] == [(new.id, kael.id, "related", 0.7)]
    assert {n.id: n.fields for n in g.nodes} == before and report.updated == []
    assert meal.id not in {e.to_id for e in g.edges}


def test_offline_heuristic_does_not_link_events_that_only_share_participants():
    new = EvolveNodeView(ref="new", type="event", fields={"summary": "Mira met Kael", "participants": "Mira, Kael"})
    event = EvolveNodeView(ref="n1", type="event", fields={"summary": "Kael and Mira argued",
                                                           "participants": "Kael, Mira"})
    place = EvolveNodeView(ref="n2", type="location", fields={"name": "Old Forge", "state": "burnt"})
    assert answer(EvolveInput(new=new, neighbours=[event, place])).should_evolve is False
    later = EvolveNodeView(ref="new", type="event", fields={"summary": "Kael hid the crown in the old forge"})
    reply = answer(EvolveInput(new=later, neighbours=[event, place]))
    assert reply.should_evolve and reply.suggested_connections == ["n2"] and reply.neighbor_updates == []
    assert reply.reason == "shares names: old forge"
