"""The ST-BME v3 memory graph: nodes, edges and the graph itself (spec §1).

Python attributes are snake_case; `to_v3()` / `from_v3()` map them to ST-BME's exact
camelCase field names and order, so a graph moves between ST-BME and bme both ways.
Keys bme does not know are kept in `extra` and written back after the known ones.
Embeddings live on the node as float32 numpy vectors (or None).
"""
from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

GRAPH_VERSION = 3

IdFactory = Callable[[], str]


def new_uuid() -> str:
    """A random UUID v4 string, as ST-BME makes ids."""
    return str(uuid.uuid4())


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds (ST-BME's Date.now())."""
    return int(time.time() * 1000)


# (python attribute, ST-BME key) in ST-BME's field order (spec §1.3, §1.4).
NODE_KEYS: tuple[tuple[str, str], ...] = (
    ("id", "id"), ("type", "type"), ("level", "level"), ("parent_id", "parentId"),
    ("child_ids", "childIds"), ("seq", "seq"), ("seq_range", "seqRange"), ("archived", "archived"),
    ("fields", "fields"), ("embedding", "embedding"), ("importance", "importance"),
    ("access_count", "accessCount"), ("last_access_time", "lastAccessTime"),
    ("created_time", "createdTime"), ("prev_id", "prevId"), ("next_id", "nextId"),
    ("clusters", "clusters"),
)
EDGE_KEYS: tuple[tuple[str, str], ...] = (
    ("id", "id"), ("from_id", "fromId"), ("to_id", "toId"), ("relation", "relation"),
    ("strength", "strength"), ("edge_type", "edgeType"), ("created_time", "createdTime"),
    ("valid_at", "validAt"), ("invalid_at", "invalidAt"), ("expired_at", "expiredAt"),
)
EVOLUTION_HISTORY_KEY = "_evolutionHistory"


def clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def _number(x: Any, default: float) -> float:
    """x as a finite float, else default (JS `Number.isFinite` semantics)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return default
    return x


@dataclass(slots=True, eq=False)
class Node:
    """One memory: an event, character, location, rule, thread, synopsis or reflection."""

    id: str
    type: str
    fields: dict[str, Any] = field(default_factory=dict)
    seq: int = 0
    seq_range: list[int] = field(default_factory=list)
    level: int = 0
    parent_id: str | None = None
    child_ids: list[str] = field(default_factory=list)
    archived: bool = False
    embedding: np.ndarray | None = None
    importance: float = 5.0
    access_count: int = 0
    last_access_time: int = 0
    created_time: int = 0
    prev_id: str | None = None
    next_id: str | None = None
    clusters: list[str] = field(default_factory=list)
    evolution_history: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.seq_range:
            self.seq_range = [self.seq, self.seq]

    @property
    def seq_end(self) -> int:
        """The last message this node covers (`seqRange[1]`, else `seq`)."""
        return self.seq_range[1] if len(self.seq_range) > 1 else self.seq

    def label(self) -> str:
        """The node's human name: name, title or summary, else its id."""
        for key in ("name", "title", "summary", "insight"):
            v = self.fields.get(key)
            if isinstance(v, str) and v.strip():
                return v.strip()
        return self.id

    def to_v3(self, with_embedding: bool = True) -> dict[str, Any]:
        """The node as ST-BME v3 JSON data (embedding as a list of floats, or null)."""
        out: dict[str, Any] = {}
        for attr, key in NODE_KEYS:
            value = getattr(self, attr)
            if attr == "embedding":
                value = value.tolist() if (with_embedding and value is not None) else None
            out[key] = value
        if self.evolution_history is not None:
            out[EVOLUTION_HISTORY_KEY] = self.evolution_history
        out.update(self.extra)
        return out

    @classmethod
    def from_v3(cls, data: dict[str, Any], now: int) -> "Node":
        """A node from normalised v3 data (spec §1.5 defaults); unknown keys go to `extra`."""
        known = {key for _, key in NODE_KEYS} | {EVOLUTION_HISTORY_KEY}
        seq = int(_number(data.get("seq"), 0))
        rng = data.get("seqRange")
        created = int(_number(data.get("createdTime"), now))
        emb = data.get("embedding")
        return cls(
            id=str(data["id"]), type=str(data["type"]),
            fields=dict(data.get("fields") or {}),
            seq=seq,
            seq_range=[int(rng[0]), int(rng[1])] if isinstance(rng, list) and len(rng) == 2 else [seq, seq],
            level=int(_number(data.get("level"), 0)),
            parent_id=data.get("parentId"),
            child_ids=list(data.get("childIds") or []),
            archived=bool(data.get("archived", False)),
            embedding=np.asarray(emb, dtype=np.float32) if isinstance(emb, list) and emb else None,
            importance=float(_number(data.get("importance"), 5.0)),
            access_count=int(_number(data.get("accessCount"), 0)),
            last_access_time=int(_number(data.get("lastAccessTime"), created)),
            created_time=created,
            prev_id=data.get("prevId"),
            next_id=data.get("nextId"),
            clusters=list(data.get("clusters") or []),
            evolution_history=data.get(EVOLUTION_HISTORY_KEY),
            extra={k: v for k, v in data.items() if k not in known},
        )


@dataclass(slots=True, eq=False)
class Edge:
    """A typed, time-aware link; `invalid_at` set means it stopped being true."""

    id: str
    from_id: str
    to_id: str
    relation: str = "related"
    strength: float = 0.8
    edge_type: int = 0
    created_time: int = 0
    valid_at: int = 0
    invalid_at: int | None = None
    expired_at: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def is_active(self, now: int | None = None) -> bool:
        """Active unless invalidated or expired at or before `now` (always, when now is None)."""
        if now is None:
            return not self.invalid_at and not self.expired_at
        return not ((self.invalid_at and self.invalid_at <= now) or (self.expired_at and self.expired_at <= now))

    def other(self, node_id: str) -> str:
        """The endpoint that is not node_id."""
        return self.to_id if self.from_id == node_id else self.from_id

    def to_v3(self) -> dict[str, Any]:
        out = {key: getattr(self, attr) for attr, key in EDGE_KEYS}
        out.update(self.extra)
        return out

    @classmethod
    def from_v3(cls, data: dict[str, Any], now: int) -> "Edge":
        known = {key for _, key in EDGE_KEYS}
        created = int(_number(data.get("createdTime"), now))
        return cls(
            id=str(data["id"]), from_id=str(data["fromId"]), to_id=str(data["toId"]),
            relation=str(data.get("relation") or "related"),
            strength=float(_number(data.get("strength"), 0.8)),
            edge_type=int(_number(data.get("edgeType"), 0)),
            created_time=created,
            valid_at=int(_number(data.get("validAt"), created)),
            invalid_at=data.get("invalidAt"),
            expired_at=data.get("expiredAt"),
            extra={k: v for k, v in data.items() if k not in known},
        )


@dataclass(slots=True)
class GraphMeta:
    """bme's own per-chat state, kept in the sidecar beside the v3 graph (not in ST-BME exports)."""

    embedding_model: str | None = None
    embedding_dim: int | None = None
    extraction_count: int = 0
    # seq -> fingerprint of each processed message, to notice edits, deletions and swipes.
    fingerprints: dict[int, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Graph:
    """The whole v3 state of one chat, with an id index kept in step with `nodes`."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    last_processed_seq: int = -1
    last_recall_result: list[str] | None = None
    version: int = GRAPH_VERSION
    extra: dict[str, Any] = field(default_factory=dict)
    meta: GraphMeta = field(default_factory=GraphMeta)

    def __post_init__(self) -> None:
        self._by_id: dict[str, Node] = {n.id: n for n in self.nodes}
        # type -> its nodes in graph order, of the list `_typed_list` when it had `_typed_len`
        # nodes (as the edge index below; a node's type never changes)
        self._typed: dict[str, list[Node]] = {}
        self._typed_list: list[Node] | None = None
        self._typed_len = 0
        # (from, to, relation) -> edges, and node id -> edges touching it, both in graph order,
        # of the list `_keyed_list` (held, so a new list is never mistaken for it) when it had
        # `_keyed_len` edges; rebuilt otherwise. (bme replaces `edges` or appends to it, and
        # never changes an edge's endpoints or relation in place.)
        self._keyed: dict[tuple[str, str, str], list[Edge]] = {}
        self._touching: dict[str, list[tuple[int, Edge]]] = {}   # (place in `edges`, edge)
        self._keyed_list: list[Edge] | None = None
        self._keyed_len = 0
        # (matrix, its rows) when the nodes' embeddings were given as rows of one matrix
        # (`adopt_vectors`): writing them back then copies nothing while each is still that row
        self.vector_block: tuple[np.ndarray, list[np.ndarray]] | None = None

    def adopt_vectors(self, nodes: list[Node], matrix: np.ndarray) -> None:
        """Give nodes[i] row i of `matrix` as its embedding, and keep the matrix for `vector_block`."""
        rows = list(matrix)
        for node, row in zip(nodes, rows):
            node.embedding = row
        self.vector_block = (matrix, rows)

    # -- lookups ----------------------------------------------------------------
    def get(self, node_id: str | None) -> Node | None:
        """The node with this id, or None."""
        return self._by_id.get(node_id) if node_id is not None else None

    def get_all(self, node_ids: list[str]) -> list[Node | None]:
        """The node of each id (None where there is none), in one pass over the index."""
        return list(map(self._by_id.get, node_ids))

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._by_id

    def append_node(self, node: Node) -> None:
        """Append a node as is (no linking; see graph.ops.add_node) and index it."""
        if node.id in self._by_id:
            raise ValueError(f"duplicate node id {node.id}")
        indexed = self._typed_list is self.nodes and self._typed_len == len(self.nodes)
        self.nodes.append(node)
        self._by_id[node.id] = node
        if indexed:
            self._typed.setdefault(node.type, []).append(node)
            self._typed_len += 1

    def reindex(self) -> None:
        """Rebuild the id index after `nodes` was changed directly."""
        self._by_id = {n.id: n for n in self.nodes}

    def active_nodes(self, type_id: str | None = None) -> list[Node]:
        """Non-archived nodes, optionally of one type, in graph order."""
        if type_id is None:
            return [n for n in self.nodes if not n.archived]
        return [n for n in self.nodes_of_type(type_id) if not n.archived]

    def nodes_of_type(self, type_id: str) -> list[Node]:
        """Every node of a type, archived ones too, in graph order (the index's list: do not change it)."""
        if self._typed_list is not self.nodes or self._typed_len != len(self.nodes):
            self._typed, self._typed_list, self._typed_len = {}, self.nodes, len(self.nodes)
            for n in self.nodes:
                self._typed.setdefault(n.type, []).append(n)
        return self._typed.get(type_id, [])

    def _index_edges(self) -> None:
        if self._keyed_list is self.edges and self._keyed_len == len(self.edges):
            return
        self._keyed, self._touching = {}, {}
        self._keyed_list, self._keyed_len = self.edges, 0
        for e in self.edges:
            self._index_edge(e)

    def _index_edge(self, e: Edge) -> None:
        self._keyed.setdefault((e.from_id, e.to_id, e.relation), []).append(e)
        self._touching.setdefault(e.from_id, []).append((self._keyed_len, e))
        if e.to_id != e.from_id:
            self._touching.setdefault(e.to_id, []).append((self._keyed_len, e))
        self._keyed_len += 1

    def active_edge(self, from_id: str, to_id: str, relation: str) -> Edge | None:
        """The first active edge from -> to with this relation, in graph order (or None)."""
        self._index_edges()
        for e in self._keyed.get((from_id, to_id, relation), ()):
            if not e.invalid_at and not e.expired_at:
                return e
        return None

    def append_edge(self, edge: Edge) -> None:
        """Append an edge (graph.ops.add_edge merges duplicates first) and index it."""
        indexed = self._keyed_list is self.edges and self._keyed_len == len(self.edges)
        self.edges.append(edge)
        if indexed:
            self._index_edge(edge)

    def edges_of(self, node_id: str, active_only: bool = True) -> list[Edge]:
        """Edges touching a node, in graph order."""
        self._index_edges()
        touching = self._touching.get(node_id, ())
        return [e for _, e in touching if e.is_active()] if active_only else [e for _, e in touching]

    def active_edges_touching(self, node_ids: Iterable[str]) -> list[Edge]:
        """The active edges touching any of these nodes, each once, in graph order."""
        self._index_edges()
        found = {at: e for n in node_ids for at, e in self._touching.get(n, ()) if e.is_active()}
        return [found[at] for at in sorted(found)]

    # -- (de)serialisation -------------------------------------------------------
    def to_v3(self, with_embeddings: bool = True) -> dict[str, Any]:
        """ST-BME's top-level object: version, lastProcessedSeq, nodes, edges, lastRecallResult."""
        out: dict[str, Any] = {
            "version": self.version,
            "lastProcessedSeq": self.last_processed_seq,
            "nodes": [n.to_v3(with_embeddings) for n in self.nodes],
            "edges": [e.to_v3() for e in self.edges],
            "lastRecallResult": self.last_recall_result,
        }
        out.update(self.extra)
        return out

    @classmethod
    def from_v3(cls, data: dict[str, Any], now: int) -> "Graph":
        """A graph from already-validated, already-migrated v3 data (see graph.codec)."""
        known = {"version", "lastProcessedSeq", "nodes", "edges", "lastRecallResult"}
        lrr = data.get("lastRecallResult")
        return cls(
            nodes=[Node.from_v3(n, now) for n in data.get("nodes") or []],
            edges=[Edge.from_v3(e, now) for e in data.get("edges") or []],
            last_processed_seq=int(_number(data.get("lastProcessedSeq"), -1)),
            last_recall_result=list(lrr) if isinstance(lrr, list) else None,
            version=int(data.get("version", GRAPH_VERSION)),
            extra={k: v for k, v in data.items() if k not in known},
        )
