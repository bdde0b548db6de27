"""Graph documents in and out: ST-BME exports and bare v3 graphs, bme sidecars, and
SillyTavern chat headers (spec §1.5-1.6).

Every document is validated before a Graph is built. Where ST-BME silently returns an
empty graph, or coerces a wrong value, bme raises GraphFormatError: one line naming the
source and the problem. Missing values get ST-BME's defaults; wrong ones are errors.
A dangling edge (an endpoint that is not a node) or a self-loop is an error as well:
ST-BME's addEdge never writes one, so it means the file was edited or damaged, and
dropping it quietly would change the user's graph behind their back.

Export with embeddings adds a top-level `bmeEmbeddingModel` key (ST-BME keeps unknown
keys and nulls the vectors on import anyway), so another bme can keep the vectors.
The sidecar format (`bme-sidecar`) and its fast byte-level codec live in `graph.store`.
"""
from __future__ import annotations

import gc
import json
import math
import re
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any, Iterable

import numpy as np

from ..errors import GraphFormatError
from .model import (EDGE_KEYS, EVOLUTION_HISTORY_KEY, GRAPH_VERSION, NODE_KEYS, Edge, Graph, Node,
                    now_ms)

CHAT_GRAPH_KEY = "st_bme_graph"
EXPORT_MODEL_KEY = "bmeEmbeddingModel"
SIDECAR_FORMAT = "bme-sidecar"

KIND_SIDECAR = "bme-sidecar"
KIND_BME_EXPORT = "bme-export"
KIND_STBME = "st-bme-graph"
KIND_CHAT = "sillytavern-chat"
KIND_METADATA = "chat-metadata"
KIND_UNKNOWN = "unknown"

_MAX_INT = 2 ** 53  # JavaScript's safe integers: ST-BME cannot hold more
_NODE_KNOWN = frozenset(k for _, k in NODE_KEYS) | {EVOLUTION_HISTORY_KEY}
_EDGE_KNOWN = frozenset(k for _, k in EDGE_KEYS)
_GRAPH_KNOWN = frozenset({"version", "lastProcessedSeq", "nodes", "edges", "lastRecallResult"})
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _Bad(Exception):
    """A field-level problem; the caller adds which node or edge it was."""


# -- JSON text ------------------------------------------------------------------------
def _refuse_constant(name: str) -> float:
    raise _Bad(f"{name} is not allowed in a graph document")


class no_gc:  # noqa: N801 - used like a function: `with no_gc():`
    """Pause the cyclic GC while building or dumping many small containers (2-3x faster)."""

    def __enter__(self) -> None:
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc_info: object) -> None:
        if self._was:
            gc.enable()


def parse_json(text: str | bytes | bytearray | memoryview, source: str) -> Any:
    """JSON text (or UTF-8 bytes) -> data; the NaN and Infinity tokens are refused.

    A literal that overflows (1e999) parses to inf; the graph validators refuse every
    non-finite number wherever it sits, which is far cheaper than checking each float here.
    """
    try:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8-sig")
        elif text.startswith("\ufeff"):
            text = text[1:]
        with no_gc():
            return json.loads(text, parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        raise GraphFormatError(f"{source}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise GraphFormatError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} "
                               f"column {exc.colno})") from None
    except _Bad as exc:
        raise GraphFormatError(f"{source}: {exc}") from None
    except RecursionError:
        raise GraphFormatError(f"{source}: JSON nested too deeply") from None


def _one_line(text: str) -> str:
    # lone surrogates (from "\udXXX" escapes) cannot be printed to a UTF-8 terminal
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def to_utf8(json_text: str) -> bytes:
    """JSON text as UTF-8 bytes; lone surrogates (only possible inside strings) are escaped."""
    try:
        return json_text.encode("utf-8")
    except UnicodeEncodeError:
        return _one_line(json_text).encode("utf-8")


def quote(text: str, limit: int = 60) -> str:
    """An id or name in single quotes, escaped to stay on one line and cut to `limit`."""
    body = _one_line(json.dumps(text, ensure_ascii=False)[1:-1])
    return "'" + (body if len(body) <= limit else body[: limit - 3] + "...") + "'"


def show(value: Any, limit: int = 40) -> str:
    """A short one-line rendering of a value for an error message."""
    if isinstance(value, (list, dict)) and len(value) > 8:  # never dump a huge structure
        return f"a list of {len(value)} items" if isinstance(value, list) else "an object"
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, RecursionError):
        text = repr(value)
    text = _one_line(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- field checks (each returns the value or raises _Bad) -------------------------------------
def _int(d: dict, key: str, default: Any) -> Any:
    v = d.get(key)
    if v is None:
        return default
    if type(v) is int and -_MAX_INT <= v <= _MAX_INT:
        return v
    if type(v) is float and v.is_integer() and abs(v) <= _MAX_INT:
        return int(v)
    raise _Bad(f"{key} must be an integer (found {show(v)})")


def _num(d: dict, key: str, default: float) -> float:
    v = d.get(key)
    if v is None:
        return default
    if (type(v) is float or type(v) is int) and math.isfinite(v):
        return float(v)
    raise _Bad(f"{key} must be a finite number (found {show(v)})")


def _str(d: dict, key: str) -> str | None:
    v = d.get(key)
    if v is None or type(v) is str:
        return v
    raise _Bad(f"{key} must be a string or null (found {show(v)})")


def _str_list(d: dict, key: str) -> list[str]:
    v = d.get(key)
    if v is None:
        return []
    if type(v) is list and all(type(x) is str for x in v):
        return v
    raise _Bad(f"{key} must be a list of strings (found {show(v)})")


def _required_str(d: dict, key: str) -> str:
    v = d.get(key)
    if type(v) is str and v:
        return v
    raise _Bad(f"has no '{key}'" if v is None else f"'{key}' must be a non-empty string (found {show(v)})")


def finite_tree(values: Iterable[Any]) -> bool:
    """No NaN or infinity anywhere in these JSON values (nested lists and objects included)."""
    for x in values:
        t = type(x)
        if t is float:
            if x - x != 0:
                return False
        elif t is dict:
            if not finite_tree(x.values()):
                return False
        elif t is list and not finite_tree(x):
            return False
    return True


def _finite_extras(d: dict, known: frozenset[str]) -> dict[str, Any]:
    extra = {} if d.keys() <= known else {k: v for k, v in d.items() if k not in known}
    if not finite_tree(extra.values()):
        raise _Bad("an extra key holds NaN or an infinite number")
    return extra


def _node(d: dict, now: int) -> Node:
    """One validated node with ST-BME's normalisation defaults (spec §1.5)."""
    seq = _int(d, "seq", 0)
    rng = d.get("seqRange")
    if rng is None:
        rng = [seq, seq]
    elif not (type(rng) is list and len(rng) == 2 and all(type(x) is int for x in rng)):
        raise _Bad(f"seqRange must be two integers (found {show(rng)})")
    fields = d.get("fields")
    if fields is None:
        fields = {}
    elif type(fields) is not dict:
        raise _Bad(f"fields must be an object (found {show(fields)})")
    elif not finite_tree(fields.values()):
        raise _Bad("fields holds NaN or an infinite number")
    archived = d.get("archived")
    if archived is not None and type(archived) is not bool:
        raise _Bad(f"archived must be true or false (found {show(archived)})")
    history = d.get(EVOLUTION_HISTORY_KEY)
    if history is not None and (type(history) is not list or not finite_tree(history)):
        raise _Bad(f"{EVOLUTION_HISTORY_KEY} must be a list of JSON values (found {show(history)})")
    created = _int(d, "createdTime", None)
    last_access = _int(d, "lastAccessTime", None)
    return Node(
        id=d["id"], type=d["type"], fields=fields, seq=seq, seq_range=rng,
        level=_int(d, "level", 0), parent_id=_str(d, "parentId"),
        child_ids=_str_list(d, "childIds"), archived=bool(archived), embedding=None,
        importance=_num(d, "importance", 5.0), access_count=_int(d, "accessCount", 0),
        last_access_time=(created or now) if last_access is None else last_access,
        created_time=now if created is None else created,
        prev_id=_str(d, "prevId"), next_id=_str(d, "nextId"),
        clusters=_str_list(d, "clusters"), evolution_history=history, extra=_finite_extras(d, _NODE_KNOWN),
    )


def _edge(d: dict, now: int) -> Edge:
    """One validated edge with ST-BME's normalisation defaults (spec §1.5)."""
    relation = d.get("relation")
    if relation is not None and type(relation) is not str:
        raise _Bad(f"relation must be a string (found {show(relation)})")
    created = _int(d, "createdTime", None)
    return Edge(
        id=d["id"], from_id=d["fromId"], to_id=d["toId"], relation=relation or "related",
        strength=_num(d, "strength", 0.8), edge_type=_int(d, "edgeType", 0),
        created_time=now if created is None else created,
        valid_at=_int(d, "validAt", created or now),
        invalid_at=_int(d, "invalidAt", None), expired_at=_int(d, "expiredAt", None),
        extra=_finite_extras(d, _EDGE_KNOWN),
    )


# -- migration and graph building ----------------------------------------------------------
def migrate_v3(data: dict, now: int | None = None) -> dict:
    """ST-BME's v1/v2 -> v3 migration plus node/edge normalisation (spec §1.5), on a copy.

    Only missing (or null) values get defaults; a value of the wrong type is left for the
    validator to report, where ST-BME would coerce it silently. Expects `nodes`/`edges`
    to be lists of objects (anything else is left alone for the validator). `now` (epoch
    ms, default the wall clock) fills missing times.
    """
    now = now_ms() if now is None else now
    out = dict(data)
    for key, default in (("lastProcessedSeq", -1), ("lastRecallResult", None)):
        if out.get(key) is None:
            out[key] = default
    if isinstance(out.get("nodes"), list):
        out["nodes"] = [_normalise_node(n, now) if isinstance(n, dict) else n for n in out["nodes"]]
    if isinstance(out.get("edges"), list):
        out["edges"] = [_normalise_edge(e, now) if isinstance(e, dict) else e for e in out["edges"]]
    if isinstance(out.get("version"), (int, float)) and out["version"] < GRAPH_VERSION:
        out["version"] = GRAPH_VERSION
    return out


def _normalise_node(n: dict, now: int) -> dict:
    created = n.get("createdTime")
    defaults = {"level": 0, "parentId": None, "childIds": [], "accessCount": 0,
                "lastAccessTime": created or now, "prevId": None, "nextId": None, "clusters": []}
    out = {**defaults, **{k: v for k, v in n.items() if v is not None or k not in defaults}}
    if out.get("seq") is None:
        out["seq"] = 0
    if out.get("seqRange") is None:
        out["seqRange"] = [out["seq"], out["seq"]]
    return out


def _normalise_edge(e: dict, now: int) -> dict:
    created = e.get("createdTime")
    defaults = {"createdTime": now, "validAt": created or now, "invalidAt": None, "expiredAt": None}
    return {**defaults, **{k: v for k, v in e.items() if v is not None or k not in defaults}}


def _fail(source: str, message: str) -> GraphFormatError:
    return GraphFormatError(f"{source}: {message}")


def _check_top(data: Any, source: str) -> int:
    if not isinstance(data, dict):
        raise _fail(source, f"a graph must be a JSON object (found {type(data).__name__})")
    version = data.get("version")
    if version is None:
        raise _fail(source, "has no 'version' (not an ST-BME graph)")
    if type(version) not in (int, float) or not math.isfinite(version) or version != int(version):
        raise _fail(source, f"'version' must be an integer (found {show(version)})")
    if version > GRAPH_VERSION:
        raise GraphFormatError(
            f"{source}: graph version {int(version)} was written by a newer ST-BME/bme "
            f"(this bme reads versions up to {GRAPH_VERSION})", hint="upgrade bme")
    for key in ("nodes", "edges"):
        if not isinstance(data.get(key), list):
            raise _fail(source, f"'{key}' must be a list (found {show(data.get(key))})")
    return int(version)


_EDGE_ID = attrgetter("id")
_NODE_ITEMS = itemgetter(*(k for _, k in NODE_KEYS))
_EDGE_ITEMS = itemgetter(*(k for _, k in EDGE_KEYS))


def _fast_node(d: Any) -> Node | None:
    """The node when every one of ST-BME's 17 keys is present with its usual type, else None.

    This is most nodes of real files and all of bme's own; anything else takes the
    checked path, which applies defaults and names the problem.
    """
    try:
        (nid, ntype, level, parent, children, seq, rng, archived, fields, _emb, importance, access,
         last_access, created, prev, nxt, clusters) = _NODE_ITEMS(d)
    except (KeyError, TypeError):
        return None
    m = _MAX_INT
    if (len(d) == 17 and type(nid) is str and nid and type(ntype) is str and ntype
            and type(level) is int and -m <= level <= m and type(seq) is int and -m <= seq <= m
            and type(rng) is list and len(rng) == 2 and type(rng[0]) is int and type(rng[1]) is int
            and type(archived) is bool and type(fields) is dict and finite_tree(fields.values())
            and type(importance) is float and importance - importance == 0
            and type(access) is int and -m <= access <= m and type(last_access) is int
            and -m <= last_access <= m and type(created) is int and -m <= created <= m
            and (parent is None or type(parent) is str) and (prev is None or type(prev) is str)
            and (nxt is None or type(nxt) is str) and type(children) is list and type(clusters) is list
            and all(type(x) is str for x in children) and all(type(x) is str for x in clusters)):
        return Node(nid, ntype, fields, seq, rng, level, parent, children, archived, None, importance,
                    access, last_access, created, prev, nxt, clusters, None, {})
    return None


def _fast_edge(d: Any, ids: dict[str, int]) -> Edge | None:
    """The edge when all ten keys are present, typed as bme writes them and its ends exist."""
    try:
        eid, src, dst, rel, strength, etype, created, valid, invalid, expired = _EDGE_ITEMS(d)
    except (KeyError, TypeError):
        return None
    m = _MAX_INT
    if (len(d) == 10 and type(eid) is str and eid and type(src) is str and type(dst) is str
            and src != dst and src in ids and dst in ids and type(rel) is str and rel
            and type(strength) is float and strength - strength == 0
            and type(etype) is int and -m <= etype <= m and type(created) is int and -m <= created <= m
            and type(valid) is int and -m <= valid <= m
            and (invalid is None or type(invalid) is int and -m <= invalid <= m)
            and (expired is None or type(expired) is int and -m <= expired <= m)):
        return Edge(eid, src, dst, rel, strength, etype, created, valid, invalid, expired, {})
    return None


def _build_nodes(items: list, source: str, now: int) -> tuple[list[Node], dict[str, int]]:
    nodes: list[Node] = []
    seen: dict[str, int] = {}
    for i, d in enumerate(items):
        node = _fast_node(d) or _checked_node(i, d, source, now)
        if node.id in seen:
            raise _fail(source, f"node id {quote(node.id)} appears twice (nodes #{seen[node.id]} and #{i})")
        seen[node.id] = i
        nodes.append(node)
    return nodes, seen


def _checked_node(i: int, d: Any, source: str, now: int) -> Node:
    if type(d) is not dict:
        raise _fail(source, f"node #{i} is not an object (found {show(d)})")
    try:
        nid = _required_str(d, "id")
    except _Bad as bad:
        raise _fail(source, f"node #{i} {bad}") from None
    try:
        _required_str(d, "type")
        return _node(d, now)
    except _Bad as bad:
        sep = " " if str(bad).startswith(("has ", "'")) else ": "
        raise _fail(source, f"node {quote(nid)}{sep}{bad}") from None


def _build_edges(items: list, ids: dict[str, int], source: str, now: int) -> list[Edge]:
    edges = [_fast_edge(d, ids) or _checked_edge(i, d, ids, source, now) for i, d in enumerate(items)]
    if len(set(map(_EDGE_ID, edges))) != len(edges):
        seen: set[str] = set()
        dup = next(e.id for e in edges if e.id in seen or seen.add(e.id))
        raise _fail(source, f"edge id {quote(dup)} appears twice")
    return edges


def _checked_edge(i: int, d: Any, ids: dict[str, int], source: str, now: int) -> Edge:
    if type(d) is not dict:
        raise _fail(source, f"edge #{i} is not an object (found {show(d)})")
    try:
        eid = _required_str(d, "id")
    except _Bad as bad:
        raise _fail(source, f"edge #{i} {bad}") from None
    try:
        ends = _required_str(d, "fromId"), _required_str(d, "toId")
    except _Bad as bad:
        raise _fail(source, f"edge {quote(eid)} {bad}") from None
    for end in ends:
        if end not in ids:
            raise _fail(source, f"edge {quote(eid)} points to missing node {quote(end)}")
    if ends[0] == ends[1]:
        raise _fail(source, f"edge {quote(eid)} links node {quote(ends[0])} to itself")
    try:
        return _edge(d, now)
    except _Bad as bad:
        raise _fail(source, f"edge {quote(eid)}: {bad}") from None


def _attach_vectors(nodes: list[Node], items: list, source: str, same_dim: bool) -> None:
    """Turn the document's float lists into float32 rows of one matrix per vector size."""
    pairs = []
    for n, d in zip(nodes, items):
        v = d.get("embedding")
        if v is None or v == []:
            continue
        if type(v) is not list:
            raise _fail(source, f"node {quote(n.id)}: embedding must be a list of numbers or null")
        pairs.append((n, v))
    dims = sorted({len(v) for _, v in pairs})
    if len(dims) > 1 and same_dim:
        raise _fail(source, f"embeddings of different sizes ({', '.join(map(str, dims))}) in one graph")
    for dim in dims:
        group = [p for p in pairs if len(p[1]) == dim]
        matrix = _float32_matrix([v for _, v in group])
        if matrix is None:
            n = next((n for n, v in group if not _finite_vector(v)), group[0][0])
            raise _fail(source, f"node {quote(n.id)}: embedding must hold finite float32 numbers")
        for row, (n, _) in zip(matrix, group):
            n.embedding = row


def _finite_vector(v: list) -> bool:
    return all((type(x) is float or type(x) is int) and abs(x) <= 3.4028234e38 for x in v)


def _float32_matrix(rows: list[list]) -> np.ndarray | None:
    try:
        matrix = np.array(rows)
    except (ValueError, TypeError, OverflowError):
        return None
    if matrix.ndim != 2 or matrix.dtype.kind not in "fiu" or not np.isfinite(matrix).all():
        return None
    with np.errstate(over="ignore"):
        matrix = matrix.astype(np.float32)
    return matrix if np.isfinite(matrix).all() else None


def graph_from_v3_document(data: Any, source: str, now: int, *, same_dim: bool = False) -> Graph:
    """Validate an ST-BME v3 (or older, migrated) graph object and build the Graph.

    Raises GraphFormatError with one line naming `source` and the first problem. Takes
    ownership of nested values (fields, lists) of `data`. With `same_dim`, embeddings of
    different sizes are an error (tagged bme documents); otherwise they are kept as is.
    """
    version = _check_top(data, source)
    if version < GRAPH_VERSION:
        data = migrate_v3(data, now)
    with no_gc():  # the document's many lists would make every GC pass crawl
        nodes, ids = _build_nodes(data["nodes"], source, now)
        graph = Graph(nodes=nodes, edges=_build_edges(data["edges"], ids, source, now))
        _attach_vectors(nodes, data["nodes"], source, same_dim)
    try:
        graph.last_processed_seq = _int(data, "lastProcessedSeq", -1)
        graph.last_recall_result = _str_list(data, "lastRecallResult") if data.get(
            "lastRecallResult") is not None else None
    except _Bad as bad:
        raise _fail(source, str(bad)) from None
    graph.extra = {k: v for k, v in data.items() if k not in _GRAPH_KNOWN}
    if not finite_tree(graph.extra.values()):
        raise _fail(source, "an extra top-level key holds NaN or an infinite number")
    return graph


# -- writing v3 dicts fast (same keys and order as model.Node.to_v3 / Edge.to_v3) -------------
_EMB = [a for a, _ in NODE_KEYS].index("embedding")
_NODE_A = attrgetter(*(a for a, _ in NODE_KEYS[:_EMB]))
_NODE_B = attrgetter(*(a for a, _ in NODE_KEYS[_EMB + 1:]))
_NODE_KEYS_A = tuple(k for _, k in NODE_KEYS[:_EMB])
_NODE_KEYS_B = tuple(k for _, k in NODE_KEYS[_EMB + 1:])
_EDGE_GET = attrgetter(*(a for a, _ in EDGE_KEYS))
_EDGE_KEYS = tuple(k for _, k in EDGE_KEYS)


def node_dict(n: Node) -> dict[str, Any]:
    """`n.to_v3(with_embedding=False)`, about three times faster."""
    d = dict(zip(_NODE_KEYS_A, _NODE_A(n)))
    d["embedding"] = None
    d.update(zip(_NODE_KEYS_B, _NODE_B(n)))
    if n.evolution_history is not None:
        d[EVOLUTION_HISTORY_KEY] = n.evolution_history
    if n.extra:
        d.update(n.extra)
    return d


def edge_dict(e: Edge) -> dict[str, Any]:
    """`e.to_v3()`, faster."""
    d = dict(zip(_EDGE_KEYS, _EDGE_GET(e)))
    if e.extra:
        d.update(e.extra)
    return d


def graph_dict(graph: Graph) -> dict[str, Any]:
    """The graph's top-level v3 object with every embedding null."""
    out: dict[str, Any] = {
        "version": graph.version, "lastProcessedSeq": graph.last_processed_seq,
        "nodes": [node_dict(n) for n in graph.nodes], "edges": [edge_dict(e) for e in graph.edges],
        "lastRecallResult": graph.last_recall_result,
    }
    out.update(graph.extra)
    return out


def dumps_checked(obj: Any, **kwargs: Any) -> str:
    """json.dumps that turns a NaN/Infinity somewhere in the graph into a GraphFormatError."""
    try:
        return json.dumps(obj, ensure_ascii=False, allow_nan=False, **kwargs)
    except ValueError as exc:
        raise GraphFormatError(f"the graph holds a value JSON cannot store ({exc})",
                               hint="nothing was written; this is a bug in the step that set it") from None


# -- export (spec §1.6) -----------------------------------------------------------------------
def _js_numbers(v: Any) -> Any:
    """Integral floats as ints, as JavaScript's JSON.stringify writes them (5.0 -> 5)."""
    t = type(v)
    if t is float:
        return int(v) if v.is_integer() and abs(v) < 1e21 else v
    if t is dict:
        return {k: _js_numbers(x) for k, x in v.items()}
    if t is list:
        return [_js_numbers(x) for x in v]
    return v


def export_document(graph: Graph, with_embeddings: bool = False) -> str:
    """ST-BME's export: 2-space JSON in ST-BME's key order, embeddings null, trailing newline.

    With `with_embeddings`, vectors are written as float lists (each float32 exactly) and
    the model tag goes in a top-level `bmeEmbeddingModel` key that ST-BME ignores.
    """
    doc = _js_numbers(graph_dict(graph))
    doc.pop(EXPORT_MODEL_KEY, None)
    if with_embeddings:
        for n, d in zip(graph.nodes, doc["nodes"]):
            if n.embedding is not None:
                d["embedding"] = np.asarray(n.embedding, dtype=np.float32).tolist()
        doc[EXPORT_MODEL_KEY] = graph.meta.embedding_model
    text = dumps_checked(doc, indent=2) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a "\udXXX" escape: escape it as JS does
        text = _one_line(text)
    return text


# -- detection and import --------------------------------------------------------------------
@dataclass
class ImportedGraph:
    """A graph read from some document, the kind of document, and its vectors' model tag."""

    graph: Graph
    kind: str
    embedding_model: str | None = None

    def drop_embeddings_unless(self, model_id: str | None) -> int:
        """Null every vector unless the document's tag equals model_id; returns how many."""
        if self.embedding_model is not None and self.embedding_model == model_id:
            return 0
        dropped = 0
        for n in self.graph.nodes:
            if n.embedding is not None:
                n.embedding, dropped = None, dropped + 1
        self.graph.meta.embedding_model = self.graph.meta.embedding_dim = None
        return dropped


def detect_document(obj: Any) -> str:
    """Which kind of graph document a parsed JSON value is (one of the KIND_* names)."""
    if not isinstance(obj, dict):
        return KIND_UNKNOWN
    if obj.get("format") == SIDECAR_FORMAT:
        return KIND_SIDECAR
    if "chat_metadata" in obj:
        return KIND_CHAT
    if CHAT_GRAPH_KEY in obj:
        return KIND_METADATA
    if "nodes" in obj or "version" in obj and "edges" in obj:
        return KIND_BME_EXPORT if EXPORT_MODEL_KEY in obj else KIND_STBME
    return KIND_UNKNOWN


_NON_SPACE = re.compile(r"\S")
_NON_SPACE_B = re.compile(rb"\S")


def parse_document(data: str | bytes, source: str) -> Any:
    """Parse a document's text; for a SillyTavern chat parse only its header line."""
    nl, marker, pattern = ((data.find("\n"), '"chat_metadata"', _NON_SPACE) if isinstance(data, str)
                           else (data.find(b"\n"), b'"chat_metadata"', _NON_SPACE_B))
    if nl < 0 or not pattern.search(data, nl + 1):
        return parse_sidecar_text(data, source)
    first = data[:nl]
    if marker in first:
        try:
            header = parse_json(first, source)
        except GraphFormatError:
            header = None
        if isinstance(header, dict) and "chat_metadata" in header:
            return header
    try:
        return parse_sidecar_text(data, source)
    except GraphFormatError:
        header = _first_line_object(first, source)
        if header is not None:
            raise _fail(source, "a SillyTavern chat without a header line (chat_metadata); it "
                                "carries no ST-BME graph") from None
        raise


def _first_line_object(first: str | bytes, source: str) -> dict | None:
    try:
        obj = parse_json(first, source)
    except GraphFormatError:
        return None
    return obj if isinstance(obj, dict) and ("mes" in obj or "is_user" in obj) else None


def parse_sidecar_text(data: str | bytes, source: str) -> Any:
    """Parse JSON text, taking the fast path for a bme sidecar's vector block."""
    from .store import split_vectors  # store imports this module: import it late

    return split_vectors(data, source) if isinstance(data, (bytes, bytearray)) else parse_json(data, source)


def graph_from_any(text_or_obj: Any, source: str, now: int) -> ImportedGraph:
    """Read any supported document (text, bytes or parsed JSON) into an ImportedGraph."""
    obj = parse_document(text_or_obj, source) if isinstance(text_or_obj, (str, bytes, bytearray)) \
        else text_or_obj
    kind = detect_document(obj)
    if kind == KIND_SIDECAR:
        from .store import graph_from_sidecar  # store imports this module: import it late

        graph = graph_from_sidecar(obj, source, now)
        return ImportedGraph(graph, kind, graph.meta.embedding_model)
    if kind in (KIND_CHAT, KIND_METADATA):
        return ImportedGraph(_graph_from_metadata(obj, kind, source, now), kind, None)
    if kind == KIND_UNKNOWN:
        found = f"keys {', '.join(show(k) for k in list(obj)[:5])}" if isinstance(obj, dict) \
            else f"a JSON {type(obj).__name__}"
        raise _fail(source, f"not an ST-BME graph, a bme sidecar or a SillyTavern chat ({found})")
    graph = graph_from_v3_document(obj, source, now, same_dim=kind == KIND_BME_EXPORT)
    tag = graph.extra.pop(EXPORT_MODEL_KEY, None)
    if tag is not None and type(tag) is not str:
        raise _fail(source, f"{EXPORT_MODEL_KEY} must be a string (found {show(tag)})")
    if tag is not None:
        graph.meta.embedding_model = tag
        graph.meta.embedding_dim = next((len(n.embedding) for n in graph.nodes
                                         if n.embedding is not None), None)
    return ImportedGraph(graph, kind, tag)


def _graph_from_metadata(obj: dict, kind: str, source: str, now: int) -> Graph:
    meta = obj.get("chat_metadata") if kind == KIND_CHAT else obj
    if not isinstance(meta, dict) or meta.get(CHAT_GRAPH_KEY) is None:
        raise _fail(source, f"the chat header has no chat_metadata.{CHAT_GRAPH_KEY} "
                            "(no ST-BME graph in this chat)")
    value = meta[CHAT_GRAPH_KEY]
    where = f"{source} (chat_metadata.{CHAT_GRAPH_KEY})"
    if isinstance(value, str):  # ST-BME's deserializeGraph also accepts a JSON string
        value = parse_json(value, where)
    return graph_from_v3_document(value, where, now)
