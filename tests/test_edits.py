"""memory/edits.py and the rules that make a user's edits stick in every pipeline step."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from fakes import ScriptedReplies

from bme_cli.errors import UsageError
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli.graph.schema import Schema
from bme_cli.memory import edits
from bme_cli.memory.apply import apply_operations
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.evolve import evolve
from bme_cli.memory.index import RecallIndex
from bme_cli.memory.query import Query
from bme_cli.memory.recall import recall
from bme_cli.memory.synopsis import generate_synopsis
from bme_cli.prompts.extract import ExtractReply
from bme_cli.providers.base import normalise_rows
from bme_cli.settings import MemorySettings

NOW = 1_700_000_000_000
SCHEMA = Schema.default()


def make_ctx(chat=None, embedder=None) -> MemoryContext:
    counter = itertools.count(1)
    return MemoryContext(chat=chat or ScriptedReplies(), embedder=embedder, now=lambda: NOW,
                         new_id=lambda: f"id{next(counter)}", settings=MemorySettings())


def node(g: Graph, type_id: str, seq: int = 1, **fields):
    return add_node(g, make_node(type_id, fields, seq, NOW, new_id=lambda: f"{type_id}-{len(g.nodes)}"))


def apply(g: Graph, ctx: MemoryContext, *items: dict):
    ops = ExtractReply.model_validate({"thought": "", "operations": list(items)}).operations
    return apply_operations(g, ops, ctx, start_seq=4, end_seq=5)


def test_the_model_cannot_update_or_delete_a_pinned_or_edited_node() -> None:
    g, ctx = Graph(), make_ctx()
    mira = node(g, "character", name="Mira", state="well")
    tobin = node(g, "character", name="Tobin", state="lost")
    edits.pin(g, mira.id, NOW)
    edits.edit(g, tobin.id, {"state": "found"}, SCHEMA, NOW)
    r = apply(g, ctx, {"action": "update", "nodeId": mira.id, "fields": {"state": "hurt"}},
              {"action": "delete", "nodeId": tobin.id},
              {"action": "create", "type": "character", "fields": {"name": "mira", "state": "dead"}})
    assert mira.fields == {"name": "Mira", "state": "well"} and not tobin.archived
    assert tobin.fields["state"] == "found" and r.skipped["user_kept"] == 3 and r.created == 0


def test_a_create_naming_a_kept_node_adopts_it_links_and_all() -> None:
    g, ctx = Graph(), make_ctx()
    rule = node(g, "rule", title="honesty", constraint="never lie")
    edits.edit(g, rule.id, {"title": "truth"}, SCHEMA, NOW)   # the old name still names it
    r = apply(g, ctx, {"action": "create", "type": "rule", "ref": "r", "fields": {"title": "Honesty", "constraint": "x"}},
              {"action": "create", "type": "event", "fields": {"summary": "Mira lies"},
               "links": [{"targetRef": "r", "relation": "contradicts"}]})
    assert rule.fields == {"title": "truth", "constraint": "never lie"} and r.skipped["user_kept"] == 1
    assert [(e.to_id, e.relation) for e in g.edges] == [(rule.id, "contradicts")]


def test_archived_and_deleted_memories_are_never_created_again() -> None:
    g, ctx = Graph(), make_ctx()
    wood = node(g, "location", name="Whispering Wood")
    ford = node(g, "event", summary="Mira crossed the ford")
    edits.archive(g, wood.id, NOW)
    edits.delete(g, ford.id, NOW)
    r = apply(g, ctx, {"action": "create", "type": "location", "fields": {"name": "whispering wood"}},
              {"action": "create", "type": "event", "fields": {"summary": "Mira  crossed the FORD"}},
              {"action": "create", "type": "location", "fields": {"name": "Saltmere"}})
    assert r.skipped["user_archived"] == 2 and r.created == 1
    assert [n.fields.get("name") or n.fields.get("summary") for n in g.active_nodes()] == ["Saltmere"]


def test_restore_brings_back_the_edges_the_archive_took() -> None:
    g = Graph()
    a, b = node(g, "character", name="A"), node(g, "event", summary="A did it")
    add_edge(g, b.id, a.id, "involved_in", 0.9, NOW, new_id=lambda: "e1")
    edits.archive(g, a.id, NOW)
    assert a.archived and not g.edges[0].is_active() and edits.is_user_archived(a)
    edits.restore(g, a.id, NOW + 1)
    assert not a.archived and g.edges[0].is_active()
    assert [e["action"] for e in a.extra["bmeUser"]["log"]] == ["archive", "restore"]
    assert all(e["by"] == "user" for e in a.extra["bmeUser"]["log"])


def test_restore_brings_back_a_forgotten_node_with_its_edges() -> None:
    from bme_cli.memory.sleep import FORGOTTEN_KEY
    g = Graph()
    a, b = node(g, "character", name="A"), node(g, "event", summary="A did it")
    edge = add_edge(g, b.id, a.id, "involved_in", 0.9, NOW, new_id=lambda: "e1").edge
    a.archived, edge.expired_at = True, NOW
    a.extra[FORGOTTEN_KEY] = {"at": NOW, "retention": 0.1, "edges": ["e1"]}
    edits.restore(g, a.id, NOW + 1)
    assert not a.archived and edge.is_active() and FORGOTTEN_KEY not in a.extra


def test_restore_refuses_a_compressed_child_and_delete_a_summary() -> None:
    g = Graph()
    child, parent = node(g, "event", summary="detail"), node(g, "event", summary="summary")
    child.archived, child.parent_id, parent.child_ids, parent.level = True, parent.id, [child.id], 1
    with pytest.raises(UsageError, match="compressed into"):
        edits.restore(g, child.id, NOW)
    with pytest.raises(UsageError, match="summarises"):
        edits.delete(g, parent.id, NOW)


def test_delete_repairs_the_same_type_list_and_drops_edges() -> None:
    g = Graph()
    a, b, c = (node(g, "event", seq=i, summary=f"e{i}") for i in range(3))
    add_edge(g, a.id, b.id, "related", 0.5, NOW)
    edits.delete(g, b.id, NOW)
    assert (a.next_id, c.prev_id) == (c.id, a.id) and g.edges == [] and b.id not in g


def test_ids_may_be_shortened_to_a_unique_prefix() -> None:
    g = Graph()
    add_node(g, make_node("rule", {"title": "a", "constraint": "b"}, 1, NOW, new_id=lambda: "abcd-1"))
    add_node(g, make_node("rule", {"title": "c", "constraint": "d"}, 1, NOW, new_id=lambda: "abcd-2"))
    assert edits.find_node(g, "abcd-2").id == "abcd-2"
    with pytest.raises(UsageError, match="2 nodes"):
        edits.find_node(g, "abcd")
    with pytest.raises(UsageError, match="no node"):
        edits.find_node(g, "abc")   # too short to be a prefix


class KeywordEmbedder:
    model_id, offline = "test:kw", True

    def embed(self, texts):
        words = ("kael", "spy", "vault")
        return normalise_rows(np.asarray([[t.lower().count(w) for w in words] + [0.1] for t in texts], np.float32))


def test_evolution_leaves_a_kept_node_as_the_user_wrote_it() -> None:
    emb = KeywordEmbedder()
    chat = ScriptedReplies(lambda task: {
        "should_evolve": True, "reason": "unmasked",
        "neighbor_updates": [{"nodeId": v.ref, "newContext": "a spy", "newTags": ["traitor"]}
                             for v in task.data.neighbours]})
    g, ctx = Graph(), make_ctx(chat, emb)
    kael = node(g, "character", name="Kael", state="a loyal guard of the vault")
    new = node(g, "event", seq=9, summary="Kael is unmasked as a spy at the vault")
    for n in g.nodes:
        n.embedding = emb.embed([" ".join(n.fields.values())])[0]
    edits.pin(g, kael.id, NOW)
    evolve(g, ctx, [new.id])
    assert kael.fields["state"] == "a loyal guard of the vault" and kael.clusters == []


def test_a_synopsis_the_user_wrote_is_not_rewritten_and_no_model_is_asked() -> None:
    g, ctx = Graph(), make_ctx(ScriptedReplies())
    for i in range(5):
        node(g, "event", seq=i, summary=f"Mira crossed bridge {i}")
    mine = edits.add(g, "synopsis", {"summary": "My own recap"}, SCHEMA, NOW, seq=4)
    assert generate_synopsis(g, ctx, current_seq=4) is None
    assert mine.fields == {"summary": "My own recap"} and ctx.chat.tasks == []


def test_a_pinned_node_is_core_and_filled_first_even_when_recent() -> None:
    g, ctx = Graph(), make_ctx()
    for i in range(12):
        node(g, "event", seq=i, summary=f"Mira crossed bridge number {i} under heavy fire")
    place = node(g, "location", seq=11, name="Saltmere", state="flooded")
    edits.pin(g, place.id, NOW)
    index = RecallIndex.build(g, SCHEMA, now=NOW)
    result = recall(g, index, Query.from_text("bridge"), ctx, budget=60, context_window=4, chat_length=12)
    core = [i.node.id for i in result.nodes if i.section == "core"]
    assert core[:1] == [place.id]


def test_edit_validates_fields_against_the_schema() -> None:
    g = Graph()
    rule = node(g, "rule", title="a", constraint="b")
    with pytest.raises(UsageError, match="no field 'text'"):
        edits.edit(g, rule.id, {"text": "x"}, SCHEMA, NOW)
    with pytest.raises(UsageError, match="needs a 'title'"):
        edits.edit(g, rule.id, {"title": None}, SCHEMA, NOW)
    node_, diff = edits.edit(g, rule.id, {"scope": "everyone"}, SCHEMA, NOW)
    assert diff == {"scope": [None, "everyone"]} and node_.embedding is None and edits.is_protected(rule)
