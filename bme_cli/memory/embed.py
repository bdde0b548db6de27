"""Node embeddings (spec §3.7, fixed per §10.12–13): text from every schema column, batched,
only for active nodes that lack a vector, tagged with the model that made them.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ..errors import ConfigError, ProviderError
from ..graph.model import Graph, Node
from ..graph.schema import Schema
from ..providers.base import Embedder

FIELD_SEPARATOR = " | "


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value if v is not None)
    return str(value).strip()


def node_text(node: Node, schema: Schema) -> str:
    """All of a node's schema columns (then any other fields), joined by ' | '; the type id if empty."""
    cols = schema.columns(node.type)
    keys = cols + [k for k in node.fields if k not in cols and k != "visibility"]
    parts = [_cell(node.fields.get(k)) for k in keys]
    text = FIELD_SEPARATOR.join(p for p in parts if p)
    return text or node.type


def check_embedding_model(graph: Graph, embedder: Embedder) -> None:
    """Refuse to mix vectors of two models in one graph (spec §10.13)."""
    tag = graph.meta.embedding_model
    has_vectors = any(n.embedding is not None for n in graph.nodes)
    if has_vectors and tag and tag != embedder.model_id:
        raise ConfigError(
            f"this graph's embeddings come from {tag!r}, but the embedder is {embedder.model_id!r}",
            "configure the same embedding model, or run `bme reembed` to replace every vector")


def clear_embeddings(graph: Graph) -> int:
    """Drop every vector and the model tag (before re-embedding with another model)."""
    count = sum(n.embedding is not None for n in graph.nodes)
    for n in graph.nodes:
        n.embedding = None
    graph.meta.embedding_model = None
    graph.meta.embedding_dim = None
    return count


def embed_nodes(nodes: Iterable[Node], graph: Graph, schema: Schema, embedder: Embedder,
                batch_size: int = 256) -> int:
    """Embed the given nodes in batches and tag the graph with the model; returns how many."""
    todo = list(nodes)
    if not todo:
        return 0
    check_embedding_model(graph, embedder)
    known = graph.meta.embedding_dim if graph.meta.embedding_model == embedder.model_id else None
    for start in range(0, len(todo), batch_size):
        chunk = todo[start:start + batch_size]
        vectors = np.asarray(embedder.embed([node_text(n, schema) for n in chunk]), dtype=np.float32)
        if known and vectors.ndim == 2 and vectors.shape[1] != known:
            raise ProviderError(f"the embedder returned vectors of {vectors.shape[1]} dimensions, but this "
                                f"graph's vectors from the same model have {known}; none were stored",
                                "check the embedding server, or run `bme reembed` if the model really changed")
        for node, vec in zip(chunk, vectors):
            node.embedding = vec
    graph.meta.embedding_model = embedder.model_id
    graph.meta.embedding_dim = int(todo[0].embedding.shape[0])
    return len(todo)


def embed_missing(graph: Graph, schema: Schema, embedder: Embedder | None) -> int:
    """Embed every active node without a vector (new, updated, evolved, imported); returns how many."""
    if embedder is None:
        return 0
    return embed_nodes((n for n in graph.nodes if not n.archived and n.embedding is None),
                       graph, schema, embedder)
