"""The sidecar's JSON decoded by msgspec straight into typed records, then Node and Edge objects.

orjson makes a dict of every node and edge (441k at 100k nodes), which `graph.v3_bulk`
checks and copies into Node and Edge objects and which are then freed again. msgspec
instead decodes each object into a record of fixed fields, checking types and integer
ranges as it parses: a 100k-node sidecar loads in 0.95 s of CPU instead of 1.5 s
(docs/performance.md, "Sidecar store").

It is only a shortcut, for documents laid out and typed exactly as bme writes a sidecar:
the records take what the bulk path takes without falling back to `graph.checks`, and
build the same objects. Anything else (a key missing, an unknown one, a value of another
type or beyond 2**53, an older graph version, text msgspec refuses) is None here, and
the caller reads the document the ordinary way, which reports any problem in its usual
words. msgspec reads numbers as the stdlib does (integers exact, floats correctly rounded).

Keys beyond ST-BME's are kept in `extra` in the order the file has them, and that order is
written back. A record has no room for unknown keys, so only the ones bme itself writes are
taken: on edges `bmeSeq` (every edge ingest makes has it), on nodes NODE_EXTRAS, whose
values `_numbered` tags with a running number as msgspec meets them, to restore their order.
"""
from __future__ import annotations

import math
from itertools import chain, count
from operator import attrgetter, eq
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType, defstruct, field

from ..errors import GraphFormatError
from .checks import MAX_INT, Bad, int_field, str_list_field
from .jsonio import SCALARS, finite_tree
from .model import GRAPH_VERSION, Edge, Graph, Node

_Int = Annotated[int, Meta(ge=-MAX_INT, le=MAX_INT)]
_Name = Annotated[str, Meta(min_length=1)]
_Pair = Annotated[list[int], Meta(min_length=2, max_length=2)]


# The extra keys bme's own steps put on nodes (memory.apply, .edits, .sleep, .seed, .index,
# .compress) and on edges (memory.apply); a node or edge with any other one takes the ordinary path.
NODE_EXTRAS = ("bmeHistory", "bmeAuto", "bmeDeleted", "bmeUser", "bmeForgotten", "bmeSeed", "bmeBaseImportance",
               "bmeExpiredEdges")
EDGE_EXTRA = "bmeSeq"


class _Numbered(tuple):
    """(running number, value) of a node's extra key, as `_numbered` hands it to msgspec."""

    __slots__ = ()


_RUNNING = count()
_new_tuple = tuple.__new__


def _numbered(kind: type, value: Any) -> _Numbered:
    """msgspec's hook for a _Numbered field: the value, numbered in document order.

    The count is shared (atomic under the GIL), so numbers only ever grow within one decode;
    one that runs beside another in a thread sees more numbers than it kept and gives up.
    """
    return _new_tuple(_Numbered, (next(_RUNNING), value))


# Field names are ST-BME's keys; gc=False: records hold JSON values only, never a cycle.
class _NodeKnown(Struct, gc=False, forbid_unknown_fields=True):
    id: _Name
    type: _Name
    level: _Int
    parentId: str | None  # noqa: N815 - the key on disk
    childIds: list[str]  # noqa: N815
    seq: _Int
    seqRange: _Pair  # noqa: N815
    archived: bool
    fields: dict[str, Any]
    embedding: None  # a sidecar keeps vectors in `bme.embedding`
    importance: int | float  # JavaScript writes 5.0 as 5
    accessCount: _Int  # noqa: N815
    lastAccessTime: _Int  # noqa: N815
    createdTime: _Int  # noqa: N815
    prevId: str | None  # noqa: N815
    nextId: str | None  # noqa: N815
    clusters: list[str]
    history: list[Any] | None = field(default=None, name="_evolutionHistory")


_Node = defstruct("_Node", [(key, _Numbered | UnsetType, UNSET) for key in NODE_EXTRAS], bases=(_NodeKnown,),
                  gc=False, forbid_unknown_fields=True)


class _Edge(Struct, gc=False, forbid_unknown_fields=True):
    id: _Name
    fromId: str  # noqa: N815
    toId: str  # noqa: N815
    relation: _Name
    strength: int | float
    edgeType: _Int  # noqa: N815
    createdTime: _Int  # noqa: N815
    validAt: _Int  # noqa: N815
    invalidAt: _Int | None  # noqa: N815
    expiredAt: _Int | None  # noqa: N815
    bmeSeq: Any = UNSET  # noqa: N815 - EDGE_EXTRA


class _Graph(Struct, forbid_unknown_fields=True):
    version: int
    nodes: list[_Node]
    edges: list[_Edge]
    lastProcessedSeq: Any = None  # noqa: N815 - checked as the ordinary path checks it
    lastRecallResult: Any = None  # noqa: N815


class _Sidecar(Struct, forbid_unknown_fields=True):
    format: Any
    formatVersion: Any  # noqa: N815
    graph: _Graph
    bme: dict[str, Any]


# A bare v3 graph as `bme import` reads it (graph.direct): each node's embedding is whatever the
# text holds there (the placeholder of a list cut out of it, null, []), for the caller to judge.
_DocNode = defstruct("_DocNode", [("embedding", Any)], bases=(_Node,), gc=False, forbid_unknown_fields=True)
_Document = defstruct("_Document", [("nodes", list[_DocNode])], bases=(_Graph,), forbid_unknown_fields=True)

_DECODER = msgspec.json.Decoder(_Sidecar, dec_hook=_numbered)
_DOCUMENT_DECODER = msgspec.json.Decoder(_Document, dec_hook=_numbered)
_REFUSED = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, GraphFormatError, Bad)
_FIELDS, _HISTORY, _EMBEDDING = attrgetter("fields"), attrgetter("history"), attrgetter("embedding")
_ID, _FROM, _TO, _SEQ = attrgetter("id"), attrgetter("fromId"), attrgetter("toId"), attrgetter(EDGE_EXTRA)
_NODE_EXTRAS = attrgetter(*NODE_EXTRAS)
_NONE_SET = (UNSET,) * len(NODE_EXTRAS)
_SCALARS_OR_UNSET = SCALARS | {UnsetType}


def read_sidecar_head(head: Any, sidecar_format: str, max_version: int) -> tuple[Graph, dict[str, Any]] | None:
    """(Graph without its meta, the `bme` block) of a sidecar head; None: read it the ordinary way.

    `head` is the document with an empty `bme.embedding.vectors`, which must be its last
    value (as `graph.sidecar` cuts it). Every time is in the records, so no clock is needed.
    """
    try:
        first = next(_RUNNING)
        doc = _DECODER.decode(head)
        numbered = next(_RUNNING) - first - 1  # node extras msgspec met (more if a thread decoded too)
        if not (doc.format == sidecar_format and type(doc.formatVersion) is int
                and 1 <= doc.formatVersion <= max_version and _vectors_slot_is_last(doc.bme)):
            return None
        graph = _graph(doc.graph, numbered)
    except _REFUSED:
        return None
    return (graph, doc.bme) if graph is not None else None


def read_graph_document(text: Any) -> tuple[Graph, list[Any]] | None:
    """(Graph, each node's `embedding` value) of a bare v3 graph typed as ST-BME writes it, no other
    top-level key; None: read it the ordinary way. Vectors are the caller's to attach."""
    try:
        first = next(_RUNNING)
        doc = _DOCUMENT_DECODER.decode(text)
        numbered = next(_RUNNING) - first - 1
        graph = _graph(doc, numbered)
    except _REFUSED:
        return None
    return (graph, list(map(_EMBEDDING, doc.nodes))) if graph is not None else None


def _vectors_slot_is_last(block: dict[str, Any]) -> bool:
    emb = block.get("embedding")
    return (type(emb) is dict and bool(emb) and list(block)[-1] == "embedding" and list(emb)[-1] == "vectors"
            and emb["vectors"] == "")


def _graph(g: _Graph, numbered: int) -> Graph | None:
    if g.version != GRAPH_VERSION:  # older ones are migrated, newer refused: the ordinary path
        return None
    nodes = _nodes(g.nodes, numbered)
    if nodes is None:
        return None
    graph = Graph(nodes=nodes)
    ids = graph._by_id  # noqa: SLF001 - the id index Graph has just built, read only
    if len(ids) != len(nodes):
        return None
    edges = _edges(g.edges, ids)
    if edges is None or len(set(map(_ID, edges))) != len(edges):
        return None
    graph.edges = edges
    values = {"lastProcessedSeq": g.lastProcessedSeq, "lastRecallResult": g.lastRecallResult}
    graph.last_processed_seq = int_field(values, "lastProcessedSeq", -1)
    if g.lastRecallResult is not None:
        graph.last_recall_result = str_list_field(values, "lastRecallResult")
    return graph


def _as_floats(records: list[Any], name: str) -> bool:
    """Make the records' `name` (importance, strength) floats, integers within 2**53 converted in
    place as the bulk path converts them; False if one is beyond that, or not finite."""
    get = attrgetter(name)
    if int in set(map(type, map(get, records))):
        for r in records:
            x = getattr(r, name)
            if type(x) is int:
                if not -MAX_INT <= x <= MAX_INT:
                    return False
                setattr(r, name, float(x))
    return math.isfinite(sum(map(get, records)))  # NaN and infinities survive a sum


def _plain_or_finite(values: Any) -> bool:
    """No NaN or infinity, and nothing nested too deep, in these values (scalars settled by type)."""
    return SCALARS.issuperset(map(type, values())) or finite_tree(values())


def _node_extras(records: list[Any], numbered: int) -> list[dict[str, Any]] | None:
    """Each node's extra keys in the file's order; None unless every numbered value was kept
    (a key written twice keeps only its last value, and its first place, which this cannot know)."""
    if not numbered:
        return [{} for _ in records]
    out: list[dict[str, Any]] = []
    kept = 0
    for row in map(_NODE_EXTRAS, records):
        if row == _NONE_SET:
            out.append({})
            continue
        present = sorted((pair, key) for pair, key in zip(row, NODE_EXTRAS) if pair is not UNSET)
        kept += len(present)
        out.append({key: pair[1] for pair, key in present})
    return out if kept == numbered else None


def _nodes(records: list[Any], numbered: int) -> list[Node] | None:
    fields = list(map(_FIELDS, records))
    histories = list(filter(None, map(_HISTORY, records)))
    extras = _node_extras(records, numbered)
    if (not _as_floats(records, "importance") or extras is None
            or not _plain_or_finite(lambda: chain.from_iterable(map(dict.values, fields)))
            or not finite_tree(chain.from_iterable(histories))
            or not (not numbered or _plain_or_finite(lambda: chain.from_iterable(map(dict.values, extras))))):
        return None
    return [Node(r.id, r.type, r.fields, r.seq, r.seqRange, r.level, r.parentId, r.childIds, r.archived, None,
                 r.importance, r.accessCount, r.lastAccessTime, r.createdTime, r.prevId, r.nextId, r.clusters,
                 r.history, extra)
            for r, extra in zip(records, extras)]


def _edges(records: list[_Edge], ids: dict[str, Node]) -> list[Edge] | None:
    known = ids.__contains__
    if (not _as_floats(records, "strength") or not all(map(known, map(_FROM, records)))
            or not all(map(known, map(_TO, records))) or any(map(eq, map(_FROM, records), map(_TO, records)))):
        return None
    if not (_SCALARS_OR_UNSET.issuperset(map(type, map(_SEQ, records)))
            or finite_tree(v for v in map(_SEQ, records) if v is not UNSET)):
        return None
    key = EDGE_EXTRA
    return [Edge(r.id, r.fromId, r.toId, r.relation, r.strength, r.edgeType, r.createdTime, r.validAt, r.invalidAt,
                 r.expiredAt, {} if r.bmeSeq is UNSET else {key: r.bmeSeq})
            for r in records]
