"""Hybrid score and time decay (spec §4.5), and bme's lexical part (§10.14)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bme_cli.memory.scoring import (DAY_MS, Weights, fill_scores, hybrid_score, hybrid_scores, time_decay,
                                    time_decays)
from bme_cli.settings import MemorySettings

NOW = 1_700_000_000_000


@pytest.mark.parametrize("days, expected", [(0, 1.0000), (1, 0.9181), (7, 0.8649), (30, 0.8451), (365, 0.8290)])
def test_time_decay_has_the_spec_values(days, expected):
    assert round(time_decay(days), 4) == expected
    assert round(float(time_decays(np.array([NOW - days * DAY_MS]), NOW)[0]), 4) == expected


def test_future_creation_time_counts_as_now():
    assert time_decay(-3) == 1.0
    assert hybrid_score(0, 0, 10, NOW + DAY_MS, NOW) == pytest.approx(0.1)


def test_hybrid_score_is_st_bme_formula_with_default_weights():
    # g = 1.2/2 = 0.6, v = 0.5, i = 0.8, 7 days old
    expected = (0.6 * 0.6 + 0.3 * 0.5 + 0.1 * 0.8) * time_decay(7)
    assert hybrid_score(1.2, 0.5, 8, NOW - 7 * DAY_MS, NOW) == pytest.approx(expected)


def test_parts_are_clamped_and_missing_importance_is_five():
    w = Weights()
    assert hybrid_score(4.0, 1.7, 30, NOW, NOW, w) == pytest.approx(0.6 + 0.3 + 0.1)
    assert hybrid_score(-1.0, -0.3, -2, NOW, NOW, w) == 0.0
    assert hybrid_score(0, 0, None, NOW, NOW, w) == pytest.approx(0.05)


def test_lexical_part_adds_its_weight_and_zero_lexical_is_st_bme():
    w = Weights(graph=0.6, vector=0.3, importance=0.1, lexical=0.4)
    base = hybrid_score(1.0, 0.2, 5, NOW, NOW, w)
    assert hybrid_score(1.0, 0.2, 5, NOW, NOW, w, lexical_score=0.5) == pytest.approx(base + 0.2)
    assert hybrid_score(1.0, 0.2, 5, NOW, NOW, w, lexical_score=3.0) == pytest.approx(base + 0.4)


def test_weights_come_from_settings():
    w = Weights.from_settings(MemorySettings(graph_weight=0.5, vector_weight=0.2, importance_weight=0.3))
    assert (w.graph, w.vector, w.importance) == (0.5, 0.2, 0.3)
    assert w.lexical == Weights().lexical == MemorySettings().lexical_weight
    assert Weights.from_settings(MemorySettings(lexical_weight=0.7)).lexical == 0.7


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 3), st.floats(-1, 1.5), st.floats(-1, 2), st.floats(0, 12),
                          st.integers(-5, 2000)), min_size=1, max_size=20))
def test_vectorised_scores_equal_the_scalar_formula(rows):
    g, v, lex, imp, days = (np.array(c, dtype=np.float64) for c in zip(*rows))
    created = NOW - days * DAY_MS
    parts = hybrid_scores(g, v, lex, imp, created, NOW, Weights())
    for i, (gi, vi, li, ii, di) in enumerate(rows):
        want = hybrid_score(gi, vi, ii, NOW - di * DAY_MS, NOW, Weights(), lexical_score=li)
        assert parts.final[i] == pytest.approx(want, abs=1e-9)


def test_the_fill_score_lifts_unseeded_rows_to_their_own_relevance_and_nothing_else():
    graph = np.array([0.9, 0.0, 0.0, 1.5])    # a seed; two unseeded hits; a row diffusion reached
    vec = np.array([0.9, 0.8, -0.2, 0.1])
    lex = np.array([0.0, 0.3, 0.6, 0.0])
    allowed = np.array([True, True, False, True])
    imp, created = np.full(4, 5.0), np.full(4, float(NOW))
    fill = fill_scores(graph, vec, lex, allowed, imp, created, NOW)
    spec = hybrid_scores(graph, vec, lex, imp, created, NOW).final
    assert fill[0] == spec[0] and fill[3] == spec[3]   # seeds and diffused rows keep their score
    assert fill[1] == pytest.approx(spec[1] + 0.6 * 0.8 / 2)  # as if it had seeded with its cosine
    assert fill[2] == spec[2]                          # a row the viewer may not see is not lifted
