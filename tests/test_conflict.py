"""The precise conflict check (spec §3.6) with the fixes of spec §10.5 and §10.24."""
from __future__ import annotations

import numpy as np
import pytest
from fakes import Clock, ScriptedChatModel, WordHashEmbedder, counter_ids, heuristic

from bme_cli.errors import ProviderError
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_node, make_node
from bme_cli.memory.apply import apply_operations
from bme_cli.memory.conflict import make_conflict_checker
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.embed import embed_missing, node_text
from bme_cli.prompts.conflict import ConflictInput, ConflictMatch
from bme_cli.prompts.extract import ExtractReply
from bme_cli.providers.heuristic.conflict import answer, jaccard
from bme_cli.settings import MemorySettings

KEY = "Mira found the silver key under the old stone bridge at dawn"


def make(replies=None, fallback=None, **settings) -> MemoryContext:
    return MemoryContext(chat=ScriptedChatModel(replies or {}, fallback=fallback),
                         embedder=WordHashEmbedder(), settings=MemorySettings(**settings),
                         new_id=counter_ids(), now=Clock())


def seed(ctx, g, type_id, fields):
    n = add_node(g, make_node(type_id, fields, 1, 1, new_id=ctx.new_id))
    embed_missing(g, ctx.schema, ctx.embedder)
    return n


def apply(ctx, g, *items):
    ops = ExtractReply.model_validate({"operations": list(items)}).operations
    checker = make_conflict_checker(g, ctx)
    if checker is not None:
        checker.prepare(ops)
    report = apply_operations(g, ops, ctx, start_seq=3, end_seq=4, checker=checker)
    if checker is not None:
        report.warnings.extend(checker.warnings)
    return report


def test_update_decision_merges_into_the_target_and_keeps_links_and_ref():
    ctx = make({"conflict": [{"action": "update", "targetId": "n1",
                              "mergedFields": {"summary": KEY + ", then hid it"}}]})
    g = Graph()
    old = seed(ctx, g, "event", {"summary": KEY})
    mira = seed(ctx, g, "character", {"name": "Mira"})
    r = apply(ctx, g,
              {"action": "create", "type": "event", "ref": "e", "fields": {"summary": KEY},
               "links": [{"targetNodeId": mira.id, "relation": "involved_in"}]},
              {"action": "create", "type": "location", "fields": {"name": "Old Bridge"},
               "links": [{"targetRef": "e", "relation": "related"}]})
    assert old.id == "n1" and len(g.active_nodes("event")) == 1
    assert old.fields["summary"] == KEY + ", then hid it" and old.embedding is None
    assert (r.conflict_updates, r.updated, r.created) == (1, 1, 1)
    pairs = {(e.from_id, e.to_id, e.relation) for e in g.edges}
    bridge = g.active_nodes("location")[0]
    assert (old.id, mira.id, "involved_in") in pairs and (bridge.id, old.id, "related") in pairs
    (task,) = ctx.chat.tasks_of("conflict")
    assert [m.id for m in task.data.matches] == ["n1"] and task.data.type == "event"


def test_skip_decision_drops_the_create_and_counts_a_duplicate():
    ctx = make({"conflict": [{"action": "skip", "targetId": "n1"}]})
    g = Graph()
    old = seed(ctx, g, "event", {"summary": KEY})
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY}})
    assert g.active_nodes("event") == [old]
    assert r.skipped == {"duplicate": 1} and r.created == 0


def test_add_decision_keeps_the_create():
    ctx = make({"conflict": [{"action": "add"}]})
    g = Graph()
    seed(ctx, g, "event", {"summary": KEY})
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY}})
    assert r.created == 1 and len(g.active_nodes("event")) == 2


@pytest.mark.parametrize("target", ["not-shown", "n2"])
def test_an_update_naming_an_invalid_target_keeps_the_create(target):
    ctx = make({"conflict": [{"action": "update", "targetId": target, "mergedFields": {"summary": "x"}}]})
    g = Graph()
    old = seed(ctx, g, "event", {"summary": KEY})
    seed(ctx, g, "character", {"name": KEY})  # n2: a close text, but another type
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY}})
    assert r.created == 1 and old.fields == {"summary": KEY}
    assert any("invalid target" in w for w in r.warnings)


def test_an_unusable_or_failed_reply_keeps_the_create():
    ctx = make({"conflict": [{"action": "merge"}, ProviderError("connection reset")]})
    g = Graph()
    seed(ctx, g, "event", {"summary": KEY})
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY}},
              {"action": "create", "type": "event", "fields": {"summary": KEY + "!"}})
    assert r.created == 2
    assert any("conflict check failed" in w for w in r.warnings)


def test_only_nodes_of_the_same_type_are_compared():
    ctx = make()  # no conflict replies: asking would fail the test
    g = Graph()
    seed(ctx, g, "character", {"name": KEY})
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY}})
    assert r.created == 1 and not ctx.chat.tasks


def test_a_match_below_the_threshold_is_not_asked_about():
    ctx = make()
    g = Graph()
    seed(ctx, g, "event", {"summary": "Tobin bought bread in the market"})
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY}})
    assert r.created == 1 and not ctx.chat.tasks


def test_duplicates_within_one_batch_are_caught():
    ctx = make(fallback=heuristic)
    g = Graph()
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY}},
              {"action": "create", "type": "event", "fields": {"summary": KEY}})
    assert len(g.active_nodes("event")) == 1
    assert r.skipped == {"duplicate": 1}


def test_created_nodes_keep_the_vector_they_were_checked_with():
    ctx = make(fallback=heuristic)
    g = Graph()
    r = apply(ctx, g, {"action": "create", "type": "event", "fields": {"summary": KEY, "participants": "Mira"}},
              {"action": "create", "type": "character", "fields": {"name": "Mira"}})
    assert r.created == 2 and len(ctx.embedder.calls) == 1  # one request for the whole batch
    for n in g.nodes:
        expected = ctx.embedder.embed([node_text(n, ctx.schema)])[0]
        assert np.allclose(n.embedding, expected)
    assert g.meta.embedding_model == ctx.embedder.model_id


def test_the_check_is_off_without_an_embedder_or_when_disabled():
    g = Graph()
    assert make_conflict_checker(g, make(enable_precise_conflict=False)) is None
    ctx = make()
    ctx.embedder = None
    assert make_conflict_checker(g, ctx) is None


# -- the offline heuristic --------------------------------------------------------------------
def _inp(fields, text, matches):
    return ConflictInput(type="character", fields=fields, text=text,
                         matches=[ConflictMatch(id=i, type="character", fields=f, text=t, similarity=0.9)
                                  for i, f, t in matches])


def test_heuristic_skips_near_identical_text():
    reply = answer(_inp({"summary": KEY}, KEY + ".", [("a", {"summary": KEY}, KEY)]))
    assert (reply.action, reply.target_id) == ("skip", "a")
    assert jaccard("a b c", "a b c") == 1.0 and jaccard("", "") == 0.0


def test_heuristic_merges_a_same_name_memory_with_new_information():
    reply = answer(_inp({"name": "Mira", "state": "injured"}, "Mira | injured",
                        [("x", {"name": "Tobin"}, "Tobin"), ("a", {"name": "mira", "traits": "brave"}, "mira | brave")]))
    assert (reply.action, reply.target_id) == ("update", "a")
    assert reply.merged_fields == {"name": "Mira", "traits": "brave", "state": "injured"}


def test_heuristic_adds_a_different_memory():
    reply = answer(_inp({"name": "Tobin"}, "Tobin | lost", [("a", {"name": "Mira"}, "Mira | brave")]))
    assert reply.action == "add"
