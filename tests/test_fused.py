"""Recall's cached per-row terms and fused scores give exactly what scoring.py computes."""
from __future__ import annotations

import numpy as np
from fakes import counter_ids
from hypothesis import given, settings as hsettings, strategies as st

from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_node, make_node
from bme_cli.graph.schema import Schema
from bme_cli.memory.fused import fused_scores
from bme_cli.memory.index import RecallIndex
from bme_cli.memory.scoring import Weights, fill_scores, hybrid_scores, time_decays

NOW = 1_700_000_000_000
DAY = 86_400_000


def _index(importances: list[float], ages: list[float]) -> RecallIndex:
    g, ids = Graph(), counter_ids("n")
    for i, (imp, age) in enumerate(zip(importances, ages)):
        add_node(g, make_node("event", {"summary": f"event {i}"}, i, int(NOW - age * DAY), importance=imp,
                              new_id=ids))
    return RecallIndex.build(g, Schema.default(), now=NOW)


rows = st.integers(min_value=1, max_value=40)


@hsettings(max_examples=60, deadline=None)
@given(st.data())
def test_fused_scores_are_bit_for_bit_scorings(data):
    n = data.draw(rows)
    floats = lambda lo, hi: st.lists(st.floats(lo, hi), min_size=n, max_size=n)  # noqa: E731
    index = _index(data.draw(floats(0, 12)), data.draw(floats(-3, 5000)))
    graph = np.array(data.draw(floats(-2, 2)), dtype=np.float64)
    vector = np.array(data.draw(floats(-1, 1)), dtype=np.float32)
    lexical = np.array(data.draw(floats(0, 1)), dtype=np.float32)
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    weights = Weights(graph=data.draw(st.floats(0, 1)), vector=0.3, importance=data.draw(st.floats(0, 1)),
                      lexical=data.draw(st.floats(0, 1)))
    now = NOW + data.draw(st.integers(0, 10**9))
    parts, fill = fused_scores(graph, vector, lexical, allowed, index, now, weights)
    want = hybrid_scores(graph, vector, lexical, index.importance, index.created, now, weights)
    assert parts.final.tobytes() == want.final.tobytes() and parts.decay.tobytes() == want.decay.tobytes()
    want_fill = fill_scores(graph, vector, lexical, allowed, index.importance, index.created, now, weights)
    assert fill.tobytes() == want_fill.tobytes()


def test_the_decay_follows_now_and_the_importance_term_follows_reinforcement():
    index = _index([5.0, 9.95, 0.0], [1.0, 30.0, 400.0])
    assert index.decays(NOW).tobytes() == time_decays(index.created, NOW).tobytes()
    later = NOW + 7 * DAY
    assert index.decays(later).tobytes() == time_decays(index.created, later).tobytes()
    assert index.decays(NOW).tobytes() == time_decays(index.created, NOW).tobytes()
    terms = index.importance_terms(0.1).copy()
    for node in index.nodes:
        index.reinforce(node, NOW)
    assert not np.array_equal(index.importance_terms(0.1), terms)
    assert index.importance_terms(0.1).tobytes() == (0.1 * np.clip(index.importance / 10.0, 0, 1)).tobytes()
    assert index.importance_terms(0.25).tobytes() == (0.25 * np.clip(index.importance / 10.0, 0, 1)).tobytes()


def test_one_index_answers_each_setting_as_a_fresh_index_does():
    """The masks kept on an index (memory/masks.py) follow the viewer, the settings and the window."""
    import random

    from bme_cli.memory.context import MemoryContext
    from bme_cli.memory.query import Query
    from bme_cli.memory.recall import recall
    from bme_cli.providers.offline import OfflineChatModel
    from bme_cli.settings import MemorySettings

    g, ids = Graph(), counter_ids("n")
    for i in range(30):
        add_node(g, make_node("event", {"summary": f"Mira walks to the gate on day {i}"}, i, NOW, new_id=ids))
    add_node(g, make_node("character", {"name": "Mira", "state": "tired", "visibility": ["Bob"]}, 28, NOW,
                          new_id=ids, seq_range=[27, 28]))
    add_node(g, make_node("rule", {"title": "Gate law", "constraint": "closed at night"}, 3, NOW, new_id=ids))
    settings = [dict(viewer=v, settings=MemorySettings(enable_visibility=vis, update_events_core=core))
                for v in ("Alice", "Bob") for vis in (True, False) for core in (True, False)]
    windows = [dict(context_window=w, chat_length=n) for w, n in ((0, None), (4, 30), (4, 40), (10, 30))]

    def answer(index, kw, win):
        ctx = MemoryContext(chat=OfflineChatModel(), embedder=None, now=lambda: NOW, rng=random.Random(0), **kw)
        r = recall(g, index, Query.from_text("Mira at the gate"), ctx, budget=300, reinforce=False, **win)
        return r.text, [(i.node.id, i.section) for i in r.nodes]

    shared = RecallIndex.build(g, Schema.default(), now=NOW)
    for kw in settings:
        for win in windows:
            assert answer(shared, kw, win) == answer(RecallIndex.build(g, Schema.default(), now=NOW), kw, win)
