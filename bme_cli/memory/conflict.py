"""Mem0-style precise conflict check before a node is created (spec §3.6), fixed (§10.5, §10.24).

For each create that is not already a latestOnly update:
* the fact text is the same `node_text` the stored embeddings are made from, so the
  comparison is like for like (ST-BME embedded one field against joined fields);
* the pool is the active nodes of the SAME type that have an embedding, plus the nodes
  created earlier in this batch (so two duplicate creates in one batch are caught);
* the top 3 by cosine (scores > 0) are shown to the model when the best one is strictly
  above `conflict_threshold`;
* `update` must name one of the shown matches, of the same type and still active, else
  the create is kept; `skip` drops the create (its ref and links go to the match);
  `add`, an invalid target or a failed call keep the create.
All create texts of a batch are embedded in one request, and a created node keeps the
vector it was checked with (it is exactly its embedding text), so nothing is embedded twice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import InvalidReplyError, ProviderError
from ..graph.model import Graph, Node
from ..prompts.conflict import ConflictInput, ConflictMatch, build_conflict_task
from ..prompts.extract import CreateOp, clean_fields
from ..providers.base import normalise_rows
from .context import MemoryContext
from .embed import node_text

TOP_K = 3


@dataclass(frozen=True)
class ConflictDecision:
    """What to do with one create: add it, update target_id with merged_fields, or skip it."""

    action: str
    target_id: str | None = None
    merged_fields: dict[str, Any] = field(default_factory=dict)


ADD = ConflictDecision("add")


class ConflictChecker:
    """The conflict check of one batch: pools per type, vectors of the batch's creates."""

    def __init__(self, graph: Graph, ctx: MemoryContext):
        if ctx.embedder is None:
            raise ValueError("a conflict check needs an embedder")
        self.graph, self.ctx, self.embedder = graph, ctx, ctx.embedder
        self.threshold = ctx.settings.conflict_threshold
        self._vectors: dict[str, np.ndarray] = {}
        self._pools: dict[str, tuple[list[str], np.ndarray]] = {}
        self.asked = 0
        self.warnings: list[str] = []
        self.disabled = False

    # -- vectors ---------------------------------------------------------------------------
    def text_of(self, type_id: str, fields: dict[str, Any]) -> str:
        """The embedding text a node of this type with these fields would get."""
        return node_text(Node(id="", type=type_id, fields=fields), self.ctx.schema)

    def prepare(self, ops: Sequence[Any]) -> None:
        """Embed the texts of every create of the batch in one request."""
        texts = [self.text_of(op.type.strip(), clean_fields(op.fields)) for op in ops
                 if isinstance(op, CreateOp) and op.type.strip() in self.ctx.schema]
        self._embed([t for t in dict.fromkeys(texts) if t not in self._vectors])

    def _embed(self, texts: list[str]) -> None:
        if not texts or self.disabled:
            return
        try:
            vectors = normalise_rows(np.asarray(self.embedder.embed(texts), dtype=np.float32))
        except ProviderError as exc:  # no check beats no batch: keep the creates
            self.disabled = True
            self.warnings.append(f"conflict check skipped: embedding failed ({exc})")
            return
        if len(vectors) != len(texts):
            self.disabled = True
            self.warnings.append("conflict check skipped: the embedder returned the wrong count")
            return
        self._vectors.update(zip(texts, vectors))

    def _vector(self, text: str) -> np.ndarray | None:
        if text not in self._vectors:
            self._embed([text])
        return self._vectors.get(text)

    def _pool(self, type_id: str, dim: int) -> tuple[list[str], np.ndarray]:
        if type_id not in self._pools:
            nodes = [n for n in self.graph.active_nodes(type_id)
                     if n.embedding is not None and n.embedding.shape == (dim,)]
            matrix = (normalise_rows(np.stack([n.embedding for n in nodes])) if nodes
                      else np.zeros((0, dim), dtype=np.float32))
            self._pools[type_id] = ([n.id for n in nodes], matrix)
        return self._pools[type_id]

    def register(self, node: Node) -> None:
        """A node created in this batch joins its type's pool, with the vector it was checked with."""
        vec = self._vectors.get(self.text_of(node.type, node.fields))
        if vec is None or self.disabled:
            return
        node.embedding = vec
        self.graph.meta.embedding_model = self.embedder.model_id
        self.graph.meta.embedding_dim = int(vec.shape[0])
        if node.type in self._pools:
            ids, matrix = self._pools[node.type]
            self._pools[node.type] = ([*ids, node.id], np.vstack([matrix, vec[None, :]]))

    # -- decision --------------------------------------------------------------------------
    def matches(self, type_id: str, text: str) -> list[tuple[Node, float]]:
        """The top-3 same-type nodes by cosine (positive scores only), best first."""
        vec = self._vector(text)
        if vec is None:
            return []
        ids, matrix = self._pool(type_id, vec.shape[0])
        if not ids:
            return []
        scores = matrix @ vec
        order = np.argsort(-scores, kind="stable")[:TOP_K]
        return [(self.graph.get(ids[i]), float(scores[i])) for i in order if scores[i] > 0]

    def check(self, op: CreateOp, type_id: str, fields: dict[str, Any]) -> ConflictDecision:
        """Ask the model about this create when a same-type memory is close enough; else add."""
        if self.disabled:
            return ADD
        text = self.text_of(type_id, fields)
        found = self.matches(type_id, text)
        if not found or found[0][1] <= self.threshold:
            return ADD
        inp = ConflictInput(
            type=type_id, fields=fields, text=text, language=_lang(self.ctx.language),
            matches=[ConflictMatch(id=n.id, type=n.type, fields=dict(n.fields),
                                   text=node_text(n, self.ctx.schema), similarity=round(s, 3))
                     for n, s in found])
        self.asked += 1
        try:
            reply = self.ctx.chat.complete_json(build_conflict_task(inp))
        except InvalidReplyError:
            return ADD
        except ProviderError as exc:
            self.warnings.append(f"conflict check failed, node kept ({exc})")
            return ADD
        return self._decide(reply.action, reply.target_id, reply.merged_fields, found, type_id)

    def _decide(self, action: str, target_id: str | None, merged: dict[str, Any],
                found: list[tuple[Node, float]], type_id: str) -> ConflictDecision:
        shown = {n.id for n, _ in found}
        target = self.graph.get(target_id) if target_id in shown else None
        valid = target is not None and target.type == type_id and not target.archived
        if action == "update":
            if not valid:
                self.warnings.append(f"conflict check named an invalid target {target_id!r}; node kept")
                return ADD
            return ConflictDecision("update", target.id, clean_fields(merged))
        if action == "skip":
            best = target if valid else found[0][0]
            return ADD if best.archived else ConflictDecision("skip", best.id)
        return ADD


def _lang(language: str) -> str:
    return "zh" if language == "zh" else "en"


def make_conflict_checker(graph: Graph, ctx: MemoryContext) -> ConflictChecker | None:
    """A checker for one batch, or None when the check is off or there is no embedder."""
    if not ctx.settings.enable_precise_conflict or ctx.embedder is None:
        return None
    return ConflictChecker(graph, ctx)
