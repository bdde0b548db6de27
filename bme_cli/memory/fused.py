"""Recall's two fused scores of every row in one pass (the arithmetic of scoring.py, shared).

`scoring.hybrid_scores` (the reported score) and `scoring.fill_scores` (the fill's order) add
the same vector, lexical and importance terms and multiply by the same recency decay; only the
graph term differs (fill lifts it to the row's own retrieval energy). Computed separately they
cost two decays (a log over every row) and every clip twice. Here each term is computed once,
in the same order of operations, so both arrays are bit for bit what scoring.py gives
(tests/test_fused.py). What does not depend on the query comes from the index: the decay of
every row at `now` and the importance term, which reinforcement updates row by row
(RecallIndex.reinforce).
"""
from __future__ import annotations

import numpy as np

from .index import RecallIndex
from .scoring import ScoreParts, Weights


def fused_scores(graph: np.ndarray, vector: np.ndarray, lexical: np.ndarray, allowed: np.ndarray,
                 index: RecallIndex, now: float, weights: Weights) -> tuple[ScoreParts, np.ndarray]:
    """(hybrid_scores(...), fill_scores(...).final) of every row, as scoring.py computes them."""
    decay = index.decays(now)
    vec_term = weights.vector * np.clip(vector, 0, 1)
    lex_term = weights.lexical * np.clip(lexical, 0, 1)
    imp_term = index.importance_terms(weights.importance)
    final = _sum(weights.graph * np.clip(graph / 2.0, 0, 1), vec_term, lex_term, imp_term, decay)
    own = np.where(allowed, np.maximum(np.maximum(vector, 0), lexical), 0.0)
    lifted = np.maximum(graph, own)
    fill = _sum(weights.graph * np.clip(lifted / 2.0, 0, 1), vec_term, lex_term, imp_term, decay)
    return ScoreParts(graph, vector, lexical, index.importance, decay, final), fill


def _sum(graph_term: np.ndarray, vec_term: np.ndarray, lex_term: np.ndarray, imp_term: np.ndarray,
         decay: np.ndarray) -> np.ndarray:
    """((g + v) + l + i) * decay, left to right as scoring.hybrid_scores adds them, in place."""
    out = np.add(graph_term, vec_term, out=graph_term)
    out += lex_term
    out += imp_term
    out *= decay
    return out
