"""`--explain`: every node and excerpt recall looked at, its scores, and why it was taken or left out.

`p` is recall's per-query state (recall._Pass): the index, the masks (allowed, core, echo),
where each row came from (origin) and why it was dropped, the score parts, and the excerpt
scores.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from ..graph.model import Node
from .budget import FitResult
from .excerpts import ExcerptIndex, Unit


@dataclass
class Candidate:
    """A node or excerpt recall considered (for --explain): its scores, whether it was taken, and why."""

    node: Union[Node, Unit]
    scores: dict[str, float]
    taken: bool
    reason: str


def explain_candidates(p: Any, fit: FitResult, injected: list[Any], scene: list[int], prob: list[int],
                       excerpts: ExcerptIndex | None) -> list[Candidate]:
    """Every row recall looked at (taken, retrieved, selected, hidden, echoed, over budget) and why,
    then every excerpt the fill looked at."""
    index = p.index
    taken = {index.row_of[i.node.id]: i.section for i in injected}
    nodes_only = lambda items: {index.row_of[n.id] for n in items if isinstance(n, Node)}  # noqa: E731
    rejected, deferred = nodes_only(fit.rejected), nodes_only(fit.deferred)
    empty, replaced = nodes_only(fit.empty), nodes_only(fit.replaced)
    echoed = [r for r in np.flatnonzero(p.echo & p.allowed).tolist() if p.core[r] or r in p.origin]
    rows = dict.fromkeys([*taken, *scene, *prob, *p.candidates.tolist(), *p.origin, *p.dropped,
                          *rejected, *empty, *echoed, *replaced])
    out = []
    for r in rows:
        origin = p.origin.get(r) or ("always" if p.core[r] else "match")
        if r in taken:
            reason = f"{taken[r]}: {origin}"
        elif p.dropped.get(r) == "visibility":
            reason = "visibility"
        elif p.echo[r]:
            reason = "echo"
        elif r in empty:
            reason = "no filled column"
        elif r in replaced:
            reason = "its messages are quoted whole"
        else:
            note = "near-duplicate" if r in deferred else p.dropped.get(r)
            reason = f"budget ({note})" if note else "budget"
        out.append(Candidate(index.nodes[r], p.parts.of(r), r in taken, reason))
    if excerpts is not None and p.quotes is not None:
        out.extend(_explain_quotes(p, fit, excerpts))
    return out


def _explain_quotes(p: Any, fit: FitResult, excerpts: ExcerptIndex) -> list[Candidate]:
    """Each excerpt unit the fill looked at: quoted, or why not."""
    quoted = {excerpts.row(u) for u in fit.quoted}
    deferred = {excerpts.row(u) for u in fit.deferred if isinstance(u, Unit)}
    repeats = {excerpts.row(u) for u in fit.repeats}
    rejected = {excerpts.row(u) for u in fit.rejected if isinstance(u, Unit)}
    out = []
    for row in dict.fromkeys([*quoted, *repeats, *deferred, *rejected]):
        reason = ("excerpts: quoted" if row in quoted else "excerpt: a taken row already says it"
                  if row in repeats else "budget (near-duplicate)" if row in deferred else "budget")
        out.append(Candidate(excerpts.units[row], p.quotes.of(row), row in quoted, reason))
    return out
