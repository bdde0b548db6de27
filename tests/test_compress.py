"""Hierarchical compression (spec §6.1) with bme's fixes (§10.2 bad replies, §10.7 edges)."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from fakes import ScriptedReplies as ScriptedChat
from bme_cli.errors import UsageError
from bme_cli.graph.model import Graph, Node
from bme_cli.graph.ops import add_edge, add_node, adjacency, make_node
from bme_cli.memory.compress import compress_all, decompress, plan_chunks
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.embed import node_text
from bme_cli.prompts.compress import ColumnSpec, CompressInput, CompressNodeView, build_compress_task
from bme_cli.providers.heuristic.compress import answer
from bme_cli.providers.offline import HashEmbedder, OfflineChatModel

NOW = 1_700_000_000_000


def make_ctx(chat=None, embedder=None, language="en") -> MemoryContext:
    counter = itertools.count(1)
    return MemoryContext(chat=chat or OfflineChatModel(), embedder=embedder, now=lambda: NOW,
                         new_id=lambda: f"id{next(counter)}", language=language)


def compression_tree(graph: Graph, type_id: str) -> list[tuple[int, int, int]]:
    """(level, active count, archived count) for every level a type has nodes at, lowest first."""
    counts: dict[int, list[int]] = {}
    for n in graph.nodes:
        if n.type == type_id:
            row = counts.setdefault(n.level, [0, 0])
            row[1 if n.archived else 0] += 1
    return [(level, a, b) for level, (a, b) in sorted(counts.items())]


def add_events(g: Graph, ctx: MemoryContext, n: int, start: int = 1, level: int = 0) -> list[Node]:
    out = []
    for i in range(start, start + n):
        fields = {"summary": f"Event {i}: Mira found the {i}th key because the door was locked.",
                  "participants": "Mira, Kael" if i % 2 else "Mira, Oren", "status": "ongoing"}
        node = make_node("event", fields, i * 2, NOW, importance=3 + i % 5, level=level, new_id=ctx.new_id)
        out.append(add_node(g, node))
    return out


def snapshot(g: Graph) -> str:
    return json.dumps(g.to_v3(), sort_keys=True)


@pytest.mark.parametrize("count, created", [(9, 0), (10, 1), (11, 2), (12, 2)])
def test_spec_worked_example_compresses_events_into_expected_node_count(count, created):
    g, ctx = Graph(), make_ctx()
    add_events(g, ctx, count)
    report = compress_all(g, ctx)
    assert len(report.created) == created
    assert report.archived == 3 * created if count != 11 else 5
    assert len(g.active_nodes("event")) == count - report.archived + created
    # keepRecentLeaves: the 6 most recent leaves are never touched
    recent = sorted((n for n in g.nodes if n.level == 0), key=lambda n: n.seq)[-6:]
    assert not any(n.archived for n in recent)


def test_plan_chunks_stops_at_a_lone_remainder():
    assert plan_chunks(10, 9, 6, 3) == [(0, 3)]
    assert plan_chunks(11, 9, 6, 3) == [(0, 3), (3, 5)]
    assert plan_chunks(12, 9, 6, 3) == [(0, 3), (3, 6)]
    assert plan_chunks(9, 9, 6, 3) == []


def test_new_node_takes_last_seq_full_range_max_importance_and_children_get_parent():
    g, ctx = Graph(), make_ctx()
    events = add_events(g, ctx, 10)
    events[0].seq_range = [1, 2]
    events[1].importance = 9.5
    report = compress_all(g, ctx)
    parent = g.get(report.created[0])
    chunk = events[:3]
    assert (parent.type, parent.level, parent.seq) == ("event", 1, chunk[-1].seq)
    assert parent.seq_range == [1, chunk[-1].seq]
    assert parent.importance == 9.5
    assert parent.child_ids == [n.id for n in chunk]
    assert all(c.archived and c.parent_id == parent.id for c in chunk)
    assert parent.fields["summary"] and parent.fields["participants"]


def test_children_edges_are_reattached_to_the_parent_and_the_originals_expire():
    g, ctx = Graph(), make_ctx()
    events = add_events(g, ctx, 10)
    mira = add_node(g, make_node("character", {"name": "Mira"}, 0, NOW, new_id=ctx.new_id))
    hall = add_node(g, make_node("location", {"name": "Hall"}, 0, NOW, new_id=ctx.new_id))
    e1, e2, e3, e4 = events[:4]
    add_edge(g, e1.id, mira.id, "involved_in", 0.6, NOW, new_id=ctx.new_id)
    add_edge(g, e2.id, mira.id, "involved_in", 0.9, NOW, new_id=ctx.new_id)
    add_edge(g, e3.id, hall.id, "occurred_at", 0.8, NOW, new_id=ctx.new_id)
    add_edge(g, e4.id, e1.id, "advances", 0.7, NOW, new_id=ctx.new_id)
    inner = add_edge(g, e1.id, e2.id, "related", 0.5, NOW, new_id=ctx.new_id).edge
    report = compress_all(g, ctx)
    parent = g.get(report.created[0])
    out = {(e.from_id, e.to_id, e.relation): e.strength for e in g.edges if e.is_active()}
    assert out == {(parent.id, mira.id, "involved_in"): 0.9, (parent.id, hall.id, "occurred_at"): 0.8,
                   (e4.id, parent.id, "advances"): 0.7}
    assert report.edges_reattached == 3
    assert inner.expired_at == NOW and inner.invalid_at is None
    assert parent.id in {t for t, _, _ in adjacency(g)[mira.id]}


def test_bad_reply_skips_that_chunk_and_the_rest_proceeds():
    good = {"fields": {"summary": "Mira found the keys and opened the locked door.", "participants": "Mira", "status": "resolved"}}
    chat = ScriptedChat({"summary": "no fields key"}, good)
    g, ctx = Graph(), make_ctx(chat)
    events = add_events(g, ctx, 12)
    report = compress_all(g, ctx)
    assert report.skipped == 1 and len(report.created) == 1 and "skipped" in report.errors[0]
    assert not any(n.archived for n in events[:3])
    assert all(n.archived for n in events[3:6])
    assert g.get(report.created[0]).fields["summary"] == "Mira found the keys and opened the locked door."


def test_reply_that_fills_no_required_column_is_skipped():
    chat = ScriptedChat({"fields": {"participants": "Mira", "mood": "tense"}})
    g, ctx = Graph(), make_ctx(chat)
    add_events(g, ctx, 10)
    before = snapshot(g)
    report = compress_all(g, ctx)
    assert (report.skipped, report.created) == (1, [])
    assert snapshot(g) == before


def test_provider_reply_keeps_only_schema_columns_and_accepts_list_values():
    chat = ScriptedChat({"fields": {"summary": "Merged.", "participants": ["Mira", "Kael"], "mood": "x"}})
    g, ctx = Graph(), make_ctx(chat)
    add_events(g, ctx, 10)
    parent = g.get(compress_all(g, ctx).created[0])
    assert parent.fields == {"summary": "Merged.", "participants": "Mira, Kael"}


def test_force_compresses_every_level_up_to_a_tree():
    g, ctx = Graph(), make_ctx()
    add_events(g, ctx, 12)
    report = compress_all(g, ctx, force=True)
    assert compression_tree(g, "event") == [(0, 0, 12), (1, 1, 3), (2, 1, 0)]
    top = next(n for n in g.active_nodes("event") if n.level == 2)
    assert top.seq_range == [2, 18] and len(report.created) == 5


def test_level_one_compresses_once_it_holds_more_than_the_threshold():
    g, ctx = Graph(), make_ctx()
    add_events(g, ctx, 10, level=1)
    add_events(g, ctx, 10, start=11)
    report = compress_all(g, ctx)
    # level 0 makes one more level-1 node (11 > 9), then level 1 merges 3 + 2 of its oldest
    assert [g.get(i).level for i in report.created] == [1, 2, 2]
    assert compression_tree(g, "event") == [(0, 7, 3), (1, 6, 5), (2, 2, 0)]


def test_dry_run_plans_every_level_without_calling_the_model_or_changing_the_graph():
    g, ctx = Graph(), make_ctx(ScriptedChat())
    add_events(g, ctx, 12)
    before = snapshot(g)
    report = compress_all(g, ctx, force=True, dry_run=True)
    assert snapshot(g) == before
    assert [(c.level, len(c.child_ids)) for c in report.chunks] == [(0, 3)] * 4 + [(1, 3)]
    assert report.chunks[-1].child_ids[0].startswith("(planned event L1")
    assert not report.changed and report.created == []


def test_dry_run_plan_matches_the_real_run():
    g, ctx = Graph(), make_ctx()
    add_events(g, ctx, 11)
    plan = compress_all(g, ctx, dry_run=True)
    real = compress_all(g, ctx)
    assert [c.child_ids for c in plan.chunks] == [c.child_ids for c in real.chunks]


def test_compressed_node_is_embedded_from_all_its_columns():
    emb = HashEmbedder(64)
    g, ctx = Graph(), make_ctx(embedder=emb)
    add_events(g, ctx, 10)
    parent = g.get(compress_all(g, ctx).created[0])
    expected = emb.embed([node_text(parent, ctx.schema)])[0]
    assert np.allclose(parent.embedding, expected)
    assert "Mira" in node_text(parent, ctx.schema) and " | " in node_text(parent, ctx.schema)


def test_compressed_node_is_linked_among_its_level_not_into_the_leaf_chain():
    g, ctx = Graph(), make_ctx()
    events = add_events(g, ctx, 12)
    report = compress_all(g, ctx)
    first, second = (g.get(i) for i in report.created)
    assert first.prev_id is None and first.next_id == second.id and second.prev_id == first.id
    assert events[-1].next_id is None


def test_unknown_or_uncompressed_type_is_a_usage_error():
    ctx = make_ctx()
    with pytest.raises(UsageError, match="unknown node type"):
        compress_all(Graph(), ctx, type_id="spaceship")
    with pytest.raises(UsageError, match="not compressed"):
        compress_all(Graph(), ctx, type_id="character")


def test_type_filter_compresses_only_that_type():
    g, ctx = Graph(), make_ctx()
    add_events(g, ctx, 12)
    for i in range(8):
        add_node(g, make_node("thread", {"title": f"T{i}", "summary": f"thread {i} moves."}, i, NOW,
                              new_id=ctx.new_id))
    report = compress_all(g, ctx, type_id="thread")
    assert {g.get(i).type for i in report.created} == {"thread"}
    assert compression_tree(g, "event") == [(0, 12, 0)]


def _inp(language="en", **fields_by_child) -> CompressInput:
    cols = [ColumnSpec(name="summary", required=True), ColumnSpec(name="participants"), ColumnSpec(name="status")]
    nodes = [CompressNodeView(seq=i, seq_range=(i, i), fields=f) for i, f in enumerate(fields_by_child.values())]
    return CompressInput(type_id="event", type_label="event", columns=cols, language=language, nodes=nodes)


def test_heuristic_keeps_informative_sentences_merges_participants_and_takes_latest_status():
    inp = _inp(a={"summary": "They talked. Mira discovered that Kael betrayed the guild because of debts.",
                  "participants": "Mira, Kael", "status": "ongoing"},
               b={"summary": "It rained. Oren swore to find the stolen crown before winter.",
                  "participants": "Oren, mira", "status": "resolved"},
               c={"summary": "Nothing much happened.", "participants": "Kael"})
    reply = answer(inp)
    assert "betrayed" in reply.fields["summary"] and "swore" in reply.fields["summary"]
    assert "It rained." not in reply.fields["summary"]
    assert len(reply.fields["summary"]) <= 300
    assert reply.fields["participants"] == "Mira, Kael, Oren"
    assert reply.fields["status"] == "resolved"


def test_heuristic_summary_stays_within_budget_for_long_children():
    places = ["archive", "tower", "harbour", "market", "crypt", "garden", "forge", "library"]
    long = " ".join(f"Mira searched the {p} at dawn and found a {i}th clue about Kael's debts."
                    for i, p in enumerate(places * 3))
    reply = answer(_inp(a={"summary": long}, b={"summary": "Oren swore revenge after the fire."}))
    assert 100 < len(reply.fields["summary"]) <= 300
    zh = answer(_inp("zh", a={"summary": "米拉发现了秘密。" * 30}, b={"summary": "凯尔离开了城市。"}))
    assert len(zh.fields["summary"]) <= 150


def test_prompt_names_every_column_child_and_the_memory_language():
    task = build_compress_task(_inp("zh", a={"summary": "A happened."}, b={"summary": "B happened."}))
    assert '"summary"' in task.system and '"participants"' in task.system and "Chinese" in task.system
    assert "record 1 [messages 0-0]" in task.user and "B happened." in task.user
    assert task.kind == "compress" and task.max_retries == 1


def _active_shape(g: Graph):
    return ({n.id for n in g.nodes if not n.archived},
            sorted((e.from_id, e.to_id, e.relation, e.strength) for e in g.edges if e.is_active()))


def test_decompress_undoes_a_compression_for_rollbacks():
    g, ctx = Graph(), make_ctx()
    events = add_events(g, ctx, 10)
    mira = add_node(g, make_node("character", {"name": "Mira"}, 0, NOW, new_id=ctx.new_id))
    add_edge(g, events[0].id, mira.id, "involved_in", 0.6, NOW, new_id=ctx.new_id)
    add_edge(g, events[0].id, events[1].id, "related", 0.5, NOW, new_id=ctx.new_id)
    before = _active_shape(g)
    parent = g.get(compress_all(g, ctx).created[0])
    assert parent.extra["bmeExpiredEdges"]
    assert decompress(g, parent, NOW + 1) == 3
    assert _active_shape(g) == before and parent.archived
    assert all(n.parent_id is None for n in events)
    with pytest.raises(UsageError):
        decompress(g, parent, NOW + 2)
