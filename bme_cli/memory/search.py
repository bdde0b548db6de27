"""`bme search`: the nodes that match a text, by recall's lexical and vector fusion, no budget.

Each recallable node (active, or compressed into an active summary) gets the fused score
recall fills its block by (scoring.fill_scores: BM25 and cosine, each row lifted to its own
retrieval energy, plus importance, times the time decay) with no diffusion, so a search
finds what the text names, not its neighbours. A hit needs a word in common (BM25 > 0) or a
cosine among the best `limit`; the rest of the graph, which every vector touches a little, is
left out.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.model import Node
from .edits import is_pinned, is_protected
from .index import RecallIndex
from .lexical import weighted_terms
from .query import Query
from .scoring import Weights, fill_scores


@dataclass
class SearchHit:
    """One matching node with its fused score and the parts it came from."""

    node: Node
    score: float
    lexical: float
    vector: float
    compressed: bool   # archived detail of an active summary (recall still reaches it)

    def as_json(self) -> dict:
        """Plain data for `--format json`."""
        n = self.node
        return {"id": n.id, "type": n.type, "label": n.label(), "level": n.level, "seq": n.seq,
                "seqRange": list(n.seq_range), "score": round(self.score, 4),
                "lexical": round(self.lexical, 4), "vector": round(self.vector, 4),
                "status": self.status, "fields": dict(n.fields)}

    @property
    def status(self) -> str:
        """pinned, kept (edited or added by the user), compressed, or active."""
        if is_pinned(self.node):
            return "pinned"
        if is_protected(self.node):
            return "kept"
        return "compressed" if self.compressed else "active"


def search(index: RecallIndex, text: str, query_vector: np.ndarray | None, weights: Weights, *,
           limit: int = 10, type_id: str | None = None) -> list[SearchHit]:
    """The best `limit` nodes for `text` (optionally of one type), best first."""
    mask = index.recallable.copy()
    if type_id is not None:
        mask &= np.isin(index.type_code, [i for i, t in enumerate(index.type_names) if t == type_id])
    lex = index.bm25.normalised_scores(weighted_terms(Query.from_text(text).weighted_parts()))
    vec = index.cosine(query_vector) if query_vector is not None else np.zeros(index.n, np.float32)
    vec = np.where(mask, vec, 0.0)
    near = np.zeros(index.n, dtype=bool)
    if vec.any():
        near[np.argsort(-vec, kind="stable")[:limit]] = True
    rows = np.flatnonzero(mask & ((lex > 0) | (near & (vec > 0))))
    if not len(rows):
        return []
    fused = fill_scores(np.zeros(index.n), vec, lex, mask, index.importance, index.created, index.now, weights)
    order = rows[np.lexsort((rows, -fused[rows]))][:limit]
    return [SearchHit(index.nodes[r], float(fused[r]), float(lex[r]), float(vec[r]), bool(index.detail[r]))
            for r in order.tolist()]
