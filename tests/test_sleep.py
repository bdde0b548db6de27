"""The sleep cycle: ST-BME's formula (spec §6.2) kept for reference, bme's recalibration
(§10.11: story-time age, latestOnly exempt), dry runs, and restore."""
from __future__ import annotations

import copy
import itertools
import json

import pytest

from bme_cli.errors import UsageError
from bme_cli.graph.model import Graph, Node
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli.graph.schema import DEFAULT_NODE_SCHEMA, Schema
from bme_cli.memory.compress import compress_all
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.sleep import (FORGOTTEN_KEY, MS_PER_HOUR, forgotten_nodes, restore, retention,
                                  sleep_cycle, st_bme_retention)
from bme_cli.providers.offline import OfflineChatModel
from bme_cli.settings import MemorySettings

NOW = 1_700_000_000_000


def make_ctx(schema: Schema | None = None, **settings) -> MemoryContext:
    counter = itertools.count(1)
    return MemoryContext(chat=OfflineChatModel(), embedder=None, schema=schema or Schema.default(),
                         settings=MemorySettings(**settings), now=lambda: NOW,
                         new_id=lambda: f"id{next(counter)}")


def node(g: Graph, ctx: MemoryContext, type_id: str, seq: int, importance: float = 5.0,
         access: int = 0, **fields) -> Node:
    fields = fields or {"summary": f"{type_id} at {seq}"}
    n = add_node(g, make_node(type_id, fields, seq, NOW, importance=importance, new_id=ctx.new_id))
    n.access_count = access
    return n


def snapshot(g: Graph) -> str:
    return json.dumps(g.to_v3(), sort_keys=True)


def test_st_bme_formula_reproduces_the_spec_samples():
    assert st_bme_retention(5, 1, 0) == pytest.approx(0.384, abs=5e-4)
    assert st_bme_retention(7.9, 24, 0) == pytest.approx(0.329, abs=5e-4)


@pytest.mark.parametrize("importance, age, access, expected", [
    (5, 0, 0, 1.0), (5, 50, 0, 0.794), (5, 100, 0, 0.630), (5, 150, 0, 0.5), (5, 200, 0, 0.397),
    (5, 200, 1, 0.630), (3, 50, 0, 0.680), (3, 100, 0, 0.463), (7, 200, 0, 0.517), (7.9, 24, 0, 0.932),
])
def test_recalibrated_retention_matches_the_documented_samples(importance, age, access, expected):
    assert retention(importance, age, access) == pytest.approx(expected, abs=1e-3)


def test_default_threshold_forgets_old_untouched_events_but_keeps_recent_and_recalled_ones():
    g, ctx = Graph(), make_ctx()
    old = node(g, ctx, "event", 0)
    recent = node(g, ctx, "event", 150)
    recalled = node(g, ctx, "event", 0, access=1)
    old_reflection = node(g, ctx, "reflection", 0, insight="x")
    report = sleep_cycle(g, ctx, current_seq=200)
    assert [(n.id, round(r, 3)) for n, r in report.items] == [(old.id, 0.397), (old_reflection.id, 0.397)]
    assert report.archived == 2 and old.archived and old_reflection.archived
    assert not recent.archived and not recalled.archived


def test_exempt_nodes_are_never_forgotten_however_old():
    g, ctx = Graph(), make_ctx()
    exempt = [node(g, ctx, "character", 0, importance=1, name="Mira"),
              node(g, ctx, "location", 0, importance=1, name="Hall"),
              node(g, ctx, "rule", 0, importance=1, title="No magic", constraint="none"),
              node(g, ctx, "thread", 0, importance=1, title="The heist"),
              node(g, ctx, "synopsis", 0, importance=1),
              node(g, ctx, "event", 0, importance=8)]
    report = sleep_cycle(g, ctx, current_seq=100_000, threshold=1.0)
    assert report.items == [] and not any(n.archived for n in exempt)


def test_custom_latest_only_types_are_exempt():
    types = copy.deepcopy(DEFAULT_NODE_SCHEMA) + [{
        "id": "item", "label": "Item", "tableName": "item_table", "latestOnly": True,
        "columns": [{"name": "name", "required": True}], "compression": {"mode": "none"}}]
    g, ctx = Graph(), make_ctx(Schema(types))
    sword = node(g, ctx, "item", 0, importance=1, name="Sword")
    sleep_cycle(g, ctx, current_seq=10_000)
    assert not sword.archived


def test_story_age_counts_messages_since_the_last_covered_message():
    g, ctx = Graph(), make_ctx()
    updated = node(g, ctx, "event", 0)
    updated.seq_range = [0, 180]           # an update moved it forward
    report = sleep_cycle(g, ctx, current_seq=200)
    assert report.items == [] and not updated.archived


def test_wall_clock_age_uses_hours_since_creation_or_last_recall():
    g, ctx = Graph(), make_ctx()
    stale = node(g, ctx, "event", 0)
    stale.created_time = stale.last_access_time = NOW - 300 * MS_PER_HOUR
    fresh = node(g, ctx, "event", 0)
    fresh.created_time = NOW - 300 * MS_PER_HOUR
    fresh.last_access_time = NOW - 10 * MS_PER_HOUR
    report = sleep_cycle(g, ctx, current_seq=0, age="wall")
    assert [n.id for n, _ in report.items] == [stale.id]
    assert report.items[0][1] == pytest.approx(0.25, abs=1e-3)


def test_settings_give_the_default_threshold_and_age_mode():
    g, ctx = Graph(), make_ctx(forget_threshold=0.9, sleep_age="story")
    n = node(g, ctx, "event", 0)
    report = sleep_cycle(g, ctx, current_seq=30)       # retention 0.87
    assert report.threshold == 0.9 and report.age == "story" and n.archived


def test_unknown_age_mode_is_a_usage_error():
    with pytest.raises(UsageError):
        sleep_cycle(Graph(), make_ctx(), current_seq=0, age="lunar")


def test_dry_run_lists_retention_values_and_changes_nothing():
    g, ctx = Graph(), make_ctx()
    a, b = node(g, ctx, "event", 0), node(g, ctx, "event", 0, importance=3)
    add_edge(g, a.id, b.id, "related", 0.5, NOW, new_id=ctx.new_id)
    before = snapshot(g)
    report = sleep_cycle(g, ctx, current_seq=300, dry_run=True)
    assert snapshot(g) == before
    assert [n.id for n, _ in report.items] == [b.id, a.id]          # lowest retention first
    assert report.items[0][1] < report.items[1][1] < 0.5
    assert report.archived == 0 and not report.changed


def test_forgetting_marks_the_node_and_expires_its_edges():
    g, ctx = Graph(), make_ctx()
    old, mira = node(g, ctx, "event", 0), node(g, ctx, "character", 0, name="Mira")
    edge = add_edge(g, old.id, mira.id, "involved_in", 0.9, NOW, new_id=ctx.new_id).edge
    sleep_cycle(g, ctx, current_seq=400)
    assert old.extra[FORGOTTEN_KEY]["at"] == NOW and old.extra[FORGOTTEN_KEY]["edges"] == [edge.id]
    assert edge.expired_at == NOW and edge.invalid_at is None
    assert forgotten_nodes(g) == [old]
    assert FORGOTTEN_KEY in old.to_v3()          # survives a save and an ST-BME export


def test_restore_brings_back_forgotten_nodes_and_edges_but_not_compressed_ones():
    g, ctx = Graph(), make_ctx()
    for i in range(10):
        node(g, ctx, "event", 1000 + i, importance=9, participants="Mira")
    compress_all(g, ctx)
    compressed_children = [n for n in g.nodes if n.archived]
    old, other = node(g, ctx, "event", 0), node(g, ctx, "event", 0)
    mira = node(g, ctx, "character", 0, name="Mira")
    edge = add_edge(g, old.id, mira.id, "involved_in", 0.9, NOW, new_id=ctx.new_id).edge
    before = snapshot(g)
    sleep_cycle(g, ctx, current_seq=1000)
    assert old.archived and other.archived
    assert restore(g) == 2
    assert not old.archived and not other.archived and edge.is_active()
    assert FORGOTTEN_KEY not in old.extra
    assert all(n.archived for n in compressed_children)
    assert snapshot(g) == before


def test_restore_by_id_restores_only_those_and_rejects_unknown_ids():
    g, ctx = Graph(), make_ctx()
    a, b = node(g, ctx, "event", 0), node(g, ctx, "event", 0)
    sleep_cycle(g, ctx, current_seq=500)
    assert restore(g, [a.id]) == 1
    assert not a.archived and b.archived
    assert restore(g, [a.id]) == 0               # already back
    with pytest.raises(UsageError, match="no node"):
        restore(g, ["nope"])


def test_restore_relinks_to_the_compressed_parent_of_a_neighbour():
    g, ctx = Graph(), make_ctx()
    events = [node(g, ctx, "event", 100 + i, importance=9) for i in range(10)]
    reflection = node(g, ctx, "reflection", 0, insight="Mira lies")
    add_edge(g, reflection.id, events[0].id, "evolves", 0.75, NOW, new_id=ctx.new_id)
    sleep_cycle(g, ctx, current_seq=400)
    assert reflection.archived
    parent = g.get(compress_all(g, ctx).created[0])
    assert restore(g, new_id=lambda: "relinked") == 1
    active = [(e.from_id, e.to_id, e.relation) for e in g.edges if e.is_active()]
    assert active == [(reflection.id, parent.id, "evolves")]
