"""The rerank step of recall: an external reranker reorders the best candidates before the
block is filled (as the Anima seed does between its strategy step and injection).

`reranked(items, ...)` takes recall's fill order - (node, section) pairs, most relevant first,
Core and Recalled interleaved, which the budget fill takes from the front - and sends the texts
of its first `reranker.top_n` movable candidates (nodes and quoted excerpts; `fixed` ones keep
their place) with the query to the reranker. Those nodes are put in the reranker's order in
the positions they held; everything else stays where it was, so under a tight budget the fill
takes what the reranker ranks highest. Nodes it did not return keep their order after the ones
it did. A timeout or any provider error leaves bme's own order and says so (`RerankNote.error`).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import Any, Callable, Iterable, Iterator

from ..errors import ProviderError
from ..graph.model import Node
from ..graph.schema import Schema
from ..providers.base import Reranker
from .embed import node_text
from .excerpts import Unit

QUERY_CHARS = 2000
DOCUMENT_CHARS = 1000

Item = tuple[Node | Unit, str]   # (node, "core" | "recalled"), (unit, "excerpts")


@dataclass
class RerankNote:
    """What the rerank step did, for --explain and JSON."""

    model: str
    sent: int = 0
    moved: int = 0                 # candidates whose place changed
    error: str | None = None       # why bme's own ranking was used instead

    def as_json(self) -> dict[str, Any]:
        """Plain data for `recall --format json`."""
        return {"model": self.model, "sent": self.sent, "moved": self.moved, "error": self.error}

    def line(self) -> str:
        """One line for --explain."""
        if self.error:
            return f"rerank failed, bme's own ranking was used: {self.error}"
        return f"reranked the top {self.sent} candidates with {self.model} ({self.moved} moved)"


def reranked(items: Iterable[Item], query: str, reranker: Reranker, schema: Schema, *,
             fixed: Callable[[Item], bool] = lambda item: False) -> tuple[Iterator[Item], RerankNote]:
    """The fill order with its first top_n movable (not `fixed`) nodes in the reranker's order."""
    note = RerankNote(reranker.name)
    stream = iter(items)
    head: list[Item] = []
    slots: list[int] = []      # positions in head of the items sent
    for item in stream:
        head.append(item)
        if not fixed(item):
            slots.append(len(head) - 1)
            if len(slots) >= max(2, reranker.top_n):
                break
    if len(slots) >= 2 and query.strip():
        _reorder(head, slots, query, reranker, schema, note)
    return chain(head, stream), note


def _reorder(head: list[Item], slots: list[int], query: str, reranker: Reranker, schema: Schema,
             note: RerankNote) -> None:
    sent = [head[i] for i in slots]
    docs = [" ".join((n.text if isinstance(n, Unit) else node_text(n, schema)).split())[:DOCUMENT_CHARS]
            for n, _ in sent]
    note.sent = len(sent)
    try:
        ranking = reranker.rerank(query[:QUERY_CHARS], docs, len(docs))
    except ProviderError as e:
        note.error = str(e)
        return
    order = [i for i, _ in ranking]
    returned = set(order)
    order += [i for i in range(len(sent)) if i not in returned]  # not returned: after, as they were
    note.moved = sum(1 for pos, i in enumerate(order) if pos != i)
    for slot, i in zip(slots, order):
        head[slot] = sent[i]
