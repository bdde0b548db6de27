"""Graph operations keep ST-BME's semantics (spec §1.3-1.4, §9.1) plus bme's fixes."""
from __future__ import annotations

import itertools

from bme_cli.graph.model import Graph, Node
from bme_cli.graph.ops import (add_edge, add_node, adjacency, archive_node, invalidate_edge,
                               make_node)
from bme_cli.graph.schema import INHIBITORY_EDGE_TYPE

NOW = 1_700_000_000_000


def ids():
    counter = itertools.count(1)
    return lambda: f"n{next(counter)}"


def event(g: Graph, seq: int, new_id, **kw) -> Node:
    return add_node(g, make_node("event", {"summary": f"e{seq}"}, seq, NOW, new_id=new_id, **kw))


def test_add_node_links_same_type_in_seq_order():
    g, new_id = Graph(), ids()
    a = event(g, 1, new_id)
    b = event(g, 5, new_id)
    c = add_node(g, make_node("character", {"name": "Mira"}, 5, NOW, new_id=new_id))
    d = event(g, 9, new_id)
    assert (a.next_id, b.prev_id, b.next_id, d.prev_id) == (b.id, a.id, d.id, b.id)
    assert c.prev_id is None and c.next_id is None


def test_add_node_skips_archived_and_compressed_when_linking():
    g, new_id = Graph(), ids()
    a = event(g, 1, new_id)
    b = event(g, 2, new_id)
    b.archived = True
    top = event(g, 3, new_id, level=1)
    assert top.prev_id == a.id


def test_make_node_clamps_importance_and_sets_times():
    n = make_node("event", {}, 3, NOW, importance=42, new_id=lambda: "x")
    assert n.importance == 10 and n.created_time == NOW == n.last_access_time
    assert n.seq_range == [3, 3]


def test_self_loop_and_missing_endpoint_are_refused():
    g, new_id = Graph(), ids()
    a = event(g, 1, new_id)
    assert add_edge(g, a.id, a.id, "related", 0.5, NOW).edge is None
    assert add_edge(g, a.id, "ghost", "related", 0.5, NOW).edge is None
    assert g.edges == []


def test_duplicate_active_edge_merges_max_strength_and_is_not_counted_new():
    g, new_id = Graph(), ids()
    a, b = event(g, 1, new_id), event(g, 2, new_id)
    first = add_edge(g, a.id, b.id, "related", 0.4, NOW, new_id=new_id)
    again = add_edge(g, a.id, b.id, "related", 0.9, NOW + 5, new_id=new_id)
    assert first.created and not again.created
    assert again.edge is first.edge and first.edge.strength == 0.9 and first.edge.valid_at == NOW + 5
    assert len(g.edges) == 1


def test_invalidated_edge_never_absorbs_and_adjacency_sees_only_the_new_one():
    # spec §9.1: invalidate event1->character, re-add the same triple: a fresh edge, one neighbour.
    g, new_id = Graph(), ids()
    e1, e2 = event(g, 1, new_id), event(g, 2, new_id)
    ch = add_node(g, make_node("character", {"name": "Mira"}, 2, NOW, new_id=new_id))
    add_edge(g, e2.id, ch.id, "involved_in", 0.9, NOW, new_id=new_id)
    old = add_edge(g, e1.id, ch.id, "involved_in", 0.4, NOW, new_id=new_id).edge
    assert invalidate_edge(old, NOW + 1) and not invalidate_edge(old, NOW + 2)
    fresh = add_edge(g, e1.id, ch.id, "involved_in", 0.7, NOW + 3, new_id=new_id).edge
    assert fresh.id != old.id and old.invalid_at == NOW + 1
    assert adjacency(g)[e1.id] == [(ch.id, 0.7, 0)]


def test_contradicts_is_inhibitory_and_adjacency_is_undirected():
    g, new_id = Graph(), ids()
    a, b = event(g, 1, new_id), event(g, 2, new_id)
    add_edge(g, a.id, b.id, "contradicts", 0.5, NOW, new_id=new_id)
    adj = adjacency(g)
    assert adj[b.id] == [(a.id, 0.5, INHIBITORY_EDGE_TYPE)]
    assert adj[a.id] == [(b.id, 0.5, INHIBITORY_EDGE_TYPE)]


def test_expired_edge_is_inactive_only_from_its_time():
    g, new_id = Graph(), ids()
    a, b = event(g, 1, new_id), event(g, 2, new_id)
    e = add_edge(g, a.id, b.id, "related", 0.5, NOW, new_id=new_id).edge
    e.expired_at = NOW + 100
    assert e.is_active(NOW + 99) and not e.is_active(NOW + 100) and not e.is_active()
    assert adjacency(g, NOW + 50) and not adjacency(g, NOW + 100)


def test_archive_node_invalidates_its_edges():
    g, new_id = Graph(), ids()
    a, b, c = event(g, 1, new_id), event(g, 2, new_id), event(g, 3, new_id)
    add_edge(g, a.id, b.id, "related", 0.5, NOW, new_id=new_id)
    add_edge(g, c.id, a.id, "related", 0.5, NOW, new_id=new_id)
    add_edge(g, b.id, c.id, "related", 0.5, NOW, new_id=new_id)
    assert archive_node(g, a, NOW + 1) == 2
    assert a.archived and [e.is_active() for e in g.edges] == [False, False, True]


def test_v3_round_trip_keeps_field_order_unknown_keys_and_history():
    data = {"id": "x", "type": "event", "level": 0, "parentId": None, "childIds": [], "seq": 4,
            "seqRange": [2, 4], "archived": False, "fields": {"summary": "s", "visibility": ["Mira"]},
            "embedding": None, "importance": 6.5, "accessCount": 1, "lastAccessTime": 5,
            "createdTime": 4, "prevId": None, "nextId": None, "clusters": ["a"],
            "_evolutionHistory": [{"triggeredBy": "y", "timestamp": 9, "reason": "r"}],
            "customKey": {"k": 1}}
    node = Node.from_v3(data, now=NOW)
    assert node.to_v3() == data and list(node.to_v3()) == list(data)
    g = Graph.from_v3({"version": 3, "lastProcessedSeq": 7, "nodes": [data], "edges": [],
                       "lastRecallResult": ["x"], "extraTop": 1}, now=NOW)
    assert g.to_v3()["extraTop"] == 1 and g.get("x") is not None and g.last_processed_seq == 7
