"""RecallIndex and ExcerptIndex as flat arrays and back, so a process can load them instead of
building them (bme_cli/index_cache.py keeps them in a file beside the sidecar).

`pack_*` turns an index into (meta, arrays): plain JSON-able values and numpy arrays of
numbers; strings and node data travel as UTF-8 JSON in uint8 arrays. `unpack_*` rebuilds an
index that gives exactly the same recall (tests/test_index_cache.py): the arrays are the same
numbers, and nodes and excerpt units are materialised one at a time, when recall first
touches them, from the JSON they were packed from (`LazyNodes`, `LazyUnits`), so a 100k-node
graph is never turned into 100k Python objects to print a 1,500-token block.

`IndexedGraph` stands in for the Graph on that path: what recall reads of a graph besides its
nodes (lastProcessedSeq, bme's per-graph records), and no edges, so it can never be saved.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import orjson

from ..graph.jsonio import parse_json
from ..graph.model import Graph, GraphMeta, Node
from ..graph.schema import Schema
from .diffusion import Csr
from .excerpt_vectors import VECTORS_KEY
from .excerpts import ExcerptIndex, Unit
from .index import RecallIndex
from .lexical import Bm25Index

Arrays = dict[str, np.ndarray]
_PER_ROW = ("active", "detail", "recallable", "summary", "type_code", "core_type", "update_event", "pinned",
            "importance", "created", "seq", "seq_start", "seq_end", "level", "emb", "emb_norm", "emb_rows",
            "text_chars", "specificity", "events_by_seq")


# -- JSON in byte arrays -----------------------------------------------------------------------
def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # a lone surrogate (read by the stdlib from an ST-BME file): the stdlib writes it
        import json
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _blob(value: Any) -> np.ndarray:
    return np.frombuffer(_dumps(value), dtype=np.uint8)


def _unblob(a: np.ndarray) -> Any:
    return parse_json(memoryview(a), "the index cache")


def _concat(items: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """One byte array of all items and the (n+1) offsets of their starts."""
    off = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, items), dtype=np.int64, count=len(items)), out=off[1:])
    return np.frombuffer(b"".join(items), dtype=np.uint8), off


def _pack_strings(strings: Sequence[str], name: str) -> Arrays:
    """Strings as one UTF-8 byte array and their offsets (`_Strings` reads them back one at a time)."""
    data, off = _concat([t.encode("utf-8", "surrogatepass") for t in strings])
    return {name: data, f"{name}_off": off}


class _Strings(Sequence):
    """The i-th string of `_pack_strings`, decoded when asked: a lookup among 50k terms decodes
    the few a bisection probes, not all of them (tens of ms per process at 100k nodes)."""

    def __init__(self, arrays: Arrays, name: str):
        self.data, self.off = arrays[name], arrays[f"{name}_off"]

    def __len__(self) -> int:
        return len(self.off) - 1

    def __getitem__(self, i: Any) -> Any:  # noqa: ANN401 - one string, or a list for a slice
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        lo, hi = self.off[i:i + 2].tolist()
        return self.data[lo:hi].tobytes().decode("utf-8", "surrogatepass")

    def find(self, s: str) -> int:
        """The position of `s` among these sorted strings, or -1: a bisection over the UTF-8 bytes
        (whose order is the strings' code point order), decoding none of them."""
        target, data, off = s.encode("utf-8", "surrogatepass"), self.data, self.off
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if data[off[mid]:off[mid + 1]].tobytes() < target:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(self) and data[off[lo]:off[lo + 1]].tobytes() == target else -1


class _Records(Sequence):
    """The i-th JSON record of a byte array, decoded on first use and kept (`where`: key -> i)."""

    def __init__(self, data: np.ndarray, off: np.ndarray, make: Any, key: Any):
        self.data, self.off, self.make, self.key = data, off, make, key
        self.made: dict[int, Any] = {}
        self.where: dict[Any, int] = {}

    def __len__(self) -> int:
        return len(self.off) - 1

    def __getitem__(self, i: Any) -> Any:  # noqa: ANN401 - one record, or a list for a slice
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = int(i)
        if i < 0:
            i += len(self)
        got = self.made.get(i)
        if got is None:
            if not 0 <= i < len(self):
                raise IndexError(i)
            record = parse_json(memoryview(self.data[self.off[i]:self.off[i + 1]]), "the index cache")
            got = self.made[i] = self.make(i, record)
            self.where[self.key(got)] = i
        return got

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))


class _RowOf(Mapping):
    """key -> row: the rows already materialised first, else one dict of all keys built on first miss."""

    def __init__(self, records: _Records, all_keys: Any):
        self.records, self.all_keys = records, all_keys
        self.full: dict | None = None

    def _dict(self) -> dict:
        if self.full is None:
            self.full = {k: i for i, k in enumerate(self.all_keys())}
        return self.full

    def __getitem__(self, k: Any) -> int:
        i = self.records.where.get(k)
        return i if i is not None else self._dict()[k]

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._dict())


@dataclass
class IndexedGraph:
    """What recall reads of a graph besides its nodes, for a graph loaded as a packed index."""

    nodes: Sequence[Node]
    last_processed_seq: int
    last_recall_result: list[str] | None
    meta: GraphMeta = field(default_factory=GraphMeta)
    embedded: int = 0  # nodes with a vector


# -- RecallIndex ---------------------------------------------------------------------------
def time_window(graph: Graph, now: int) -> tuple[float, float]:
    """[from, until): the times at which the same edges are active as at `now` (the index's span)."""
    times = [t for e in graph.edges for t in (e.invalid_at, e.expired_at) if t]
    past, future = [t for t in times if t <= now], [t for t in times if t > now]
    return (float(max(past)) if past else float("-inf")), (float(min(future)) if future else float("inf"))


def pack_recall_index(index: RecallIndex, graph: Graph) -> tuple[dict[str, Any], Arrays]:
    """(meta, arrays) of an index built from `graph` (which supplies what the index does not hold)."""
    from ..graph.v3 import node_dict
    arrays: Arrays = {name: getattr(index, name) for name in _PER_ROW}
    bm, csr = index.bm25, index.csr
    arrays.update(bm_ptr=bm.post_ptr, bm_doc=bm.post_doc, bm_weight=bm.post_weight, bm_idf=bm.idf,
                  csr_indptr=csr.indptr, csr_nbr=csr.nbr, csr_strength=csr.strength,
                  csr_inhibitory=csr.inhibitory, csr_edge=csr.edge, relay_strength=index.relay.strength)
    arrays["node_data"], arrays["node_off"] = _concat([_dumps(node_dict(n)) for n in index.nodes])
    arrays["ids"] = _blob(list(index.ids))
    arrays["graph_extra"] = _blob({k: v for k, v in graph.meta.extra.items() if k != VECTORS_KEY})
    arrays.update(_pack_vocab(index.bm25.vocab, "vocab"))
    arrays.update(_pack_names(index.names))
    arrays["restricted"] = _blob({str(r): sorted(v) for r, v in index.restricted.items()})
    meta = {"nodes": index.n, "type_names": index.type_names, "bm25_docs": bm.n_docs,
            "last_processed_seq": graph.last_processed_seq, "last_recall_result": graph.last_recall_result,
            "graph_meta": {"embedding_model": graph.meta.embedding_model, "embedding_dim": graph.meta.embedding_dim,
                           "extraction_count": graph.meta.extraction_count},
            "embedded": sum(n.embedding is not None for n in graph.nodes)}
    return meta, arrays


def _node_id(node: Node) -> str:
    return node.id


def _unit_key(unit: Unit) -> tuple[int, int]:
    return unit.seq, unit.part


def _node_from(arrays: Arrays, now: int) -> Any:
    emb, emb_rows = arrays["emb"], arrays["emb_rows"]  # emb_rows ascending

    def make(i: int, data: dict) -> Node:
        node = Node.from_v3(data, now)
        k = int(np.searchsorted(emb_rows, i))
        node.embedding = emb[k] if k < len(emb_rows) and emb_rows[k] == i else None
        return node
    return make


class _Vocab(Mapping):
    """term -> id over the sorted terms (a bisection per query term instead of a 50k-key dict)."""

    def __init__(self, terms: Sequence[str], ids: np.ndarray):
        self.terms, self.ids = terms, ids
        self.found: dict[str, int] = {}  # terms looked up before: a session's queries share many

    def __getitem__(self, term: str) -> int:
        got = self.found.get(term)
        if got is None:
            got = self.found[term] = _position(self.terms, term)
        if got < 0:
            raise KeyError(term)
        return int(self.ids[got])

    def __len__(self) -> int:
        return len(self.terms)

    def __iter__(self) -> Iterator[str]:
        order = np.argsort(self.ids, kind="stable").tolist()
        return (self.terms[k] for k in order)


def _position(terms: Sequence[str], term: str) -> int:
    if isinstance(terms, _Strings):
        return terms.find(term)
    i = bisect.bisect_left(terms, term)
    return i if i < len(terms) and terms[i] == term else -1


def _pack_vocab(vocab: Mapping[str, int], prefix: str) -> Arrays:
    if isinstance(vocab, _Vocab) and isinstance(vocab.terms, _Strings):  # unpacked: its arrays as they were
        return {prefix: vocab.terms.data, f"{prefix}_off": vocab.terms.off, f"{prefix}_ids": vocab.ids}
    pairs = sorted(vocab.items())
    return {**_pack_strings([t for t, _ in pairs], prefix),
            f"{prefix}_ids": np.fromiter((i for _, i in pairs), dtype=np.int64, count=len(pairs))}


class _Names(Mapping):
    """The name index (name token -> [(row, lowercased name)]) over its sorted tokens: a bisection
    per token asked, and only that token's names decoded."""

    def __init__(self, arrays: Arrays):
        self.arrays = {k: arrays[k] for k in _NAMES_ARRAYS}
        self.keys, self.names = _Strings(arrays, "names_keys"), _Strings(arrays, "names_text")
        self.ptr, self.rows = arrays["names_ptr"], arrays["names_rows"]

    def __getitem__(self, key: str) -> list[tuple[int, str]]:
        i = self.keys.find(key)
        if i < 0:
            raise KeyError(key)
        lo, hi = int(self.ptr[i]), int(self.ptr[i + 1])
        return list(zip(self.rows[lo:hi].tolist(), self.names[lo:hi]))

    def __len__(self) -> int:
        return len(self.keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys)


_NAMES_ARRAYS = ("names_keys", "names_keys_off", "names_ptr", "names_rows", "names_text", "names_text_off")


def _pack_names(names: Mapping[str, list[tuple[int, str]]]) -> Arrays:
    if isinstance(names, _Names):  # unpacked: its arrays as they were
        return dict(names.arrays)
    items = sorted(names.items())
    ptr = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(np.fromiter((len(v) for _, v in items), dtype=np.int64, count=len(items)), out=ptr[1:])
    entries = [e for _, v in items for e in v]
    return {**_pack_strings([k for k, _ in items], "names_keys"), "names_ptr": ptr,
            "names_rows": np.fromiter((r for r, _ in entries), dtype=np.int64, count=len(entries)),
            **_pack_strings([n for _, n in entries], "names_text")}


def unpack_recall_index(meta: dict[str, Any], arrays: Arrays, schema: Schema, now: int, *,
                        nodes: Sequence[Node] | None = None, graph: Any = None) -> RecallIndex:
    """The RecallIndex of `pack_recall_index`, at time `now`. With `nodes` (the loaded graph's, in
    the same order) those are the index's nodes; else they are materialised from the packed data."""
    if nodes is None:
        lazy = _Records(arrays["node_data"], arrays["node_off"], _node_from(arrays, now), _node_id)
        node_seq: Sequence[Node] = lazy
        ids: Sequence[str] = _Ids(lazy)
        row_of: Mapping[str, int] = _RowOf(lazy, lambda: _unblob(arrays["ids"]))
    else:
        node_seq, ids = nodes, [n.id for n in nodes]
        row_of = {nid: i for i, nid in enumerate(ids)}
    vocab = _Vocab(_Strings(arrays, "vocab"), arrays["vocab_ids"])
    bm25 = Bm25Index(int(meta["bm25_docs"]), vocab, arrays["bm_ptr"], arrays["bm_doc"], arrays["bm_weight"],
                     arrays["bm_idf"])
    csr = Csr(arrays["csr_indptr"], arrays["csr_nbr"], arrays["csr_strength"], arrays["csr_inhibitory"],
              arrays["csr_edge"])
    relay = Csr(csr.indptr, csr.nbr, arrays["relay_strength"], csr.inhibitory, csr.edge)
    per_row = {name: arrays[name] for name in _PER_ROW}
    per_row["importance"] = np.array(per_row["importance"])  # reinforcement writes here
    names = _Names(arrays)
    restricted = {int(r): frozenset(v) for r, v in _unblob(arrays["restricted"]).items()}
    return RecallIndex(graph=graph, schema=schema, now=now, nodes=node_seq, ids=ids, row_of=row_of,  # type: ignore[arg-type]
                       type_names=list(meta["type_names"]), bm25=bm25, csr=csr, relay=relay, names=names,
                       restricted=restricted, **per_row)


class _Ids(Sequence):
    """Node ids by row, read from the packed nodes (a node is materialised to read its id)."""

    def __init__(self, nodes: _Records):
        self.nodes = nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def __getitem__(self, i: Any) -> Any:  # noqa: ANN401
        return [n.id for n in self.nodes[i]] if isinstance(i, slice) else self.nodes[i].id


def indexed_graph(meta: dict[str, Any], arrays: Arrays, index: RecallIndex) -> IndexedGraph:
    """The IndexedGraph of a packed index."""
    gm, extra = meta["graph_meta"], _unblob(arrays["graph_extra"])
    lrr = meta.get("last_recall_result")
    return IndexedGraph(index.nodes, int(meta["last_processed_seq"]), list(lrr) if lrr is not None else None,
                        GraphMeta(embedding_model=gm["embedding_model"], embedding_dim=gm["embedding_dim"],
                                  extraction_count=gm["extraction_count"], extra=extra),
                        embedded=int(meta.get("embedded", 0)))


# -- ExcerptIndex ----------------------------------------------------------------------------
def pack_excerpts(ex: ExcerptIndex) -> tuple[dict[str, Any], Arrays]:
    """(meta, arrays) of an excerpt index."""
    if ex.packed is not None:  # unpacked, and an excerpt index never changes: as it was
        return ex.packed
    data, off = _concat([_dumps([u.seq, u.part, u.parts, u.speaker, u.when.isoformat() if u.when else None, u.text])
                         for u in ex.units])
    speakers = {name: np.flatnonzero(mask).tolist() for name, mask in ex.speaker_of.items()}
    part = np.fromiter((u.part for u in ex.units), dtype=np.int64, count=ex.n)
    arrays = {"x_seq": ex.seq, "x_part": part, "x_emb": ex.emb, "x_emb_rows": ex.emb_rows, "x_data": data, "x_off": off,
              "x_bm_ptr": ex.bm25.post_ptr, "x_bm_doc": ex.bm25.post_doc, "x_bm_weight": ex.bm25.post_weight,
              "x_bm_idf": ex.bm25.idf, **_pack_vocab(ex.bm25.vocab, "x_vocab"), "x_speakers": _blob(speakers)}
    return {"units": ex.n, "bm25_docs": ex.bm25.n_docs}, arrays


def _unit(i: int, r: list) -> Unit:
    return Unit(r[0], r[1], r[2], r[3], datetime.fromisoformat(r[4]) if r[4] else None, r[5])


def unpack_excerpts(meta: dict[str, Any], arrays: Arrays) -> ExcerptIndex:
    """The ExcerptIndex of `pack_excerpts`, its units materialised on first use."""
    units = _Records(arrays["x_data"], arrays["x_off"], _unit, _unit_key)
    vocab = _Vocab(_Strings(arrays, "x_vocab"), arrays["x_vocab_ids"])
    bm25 = Bm25Index(int(meta["bm25_docs"]), vocab, arrays["x_bm_ptr"], arrays["x_bm_doc"], arrays["x_bm_weight"],
                     arrays["x_bm_idf"])
    n = len(units)
    masks = {}
    for name, rows in _unblob(arrays["x_speakers"]).items():
        mask = np.zeros(n, dtype=bool)
        mask[np.asarray(rows, dtype=np.int64)] = True
        masks[name] = mask
    seq = arrays["x_seq"]
    row_of = _RowOf(units, lambda: zip(seq.tolist(), arrays["x_part"].tolist()))
    packed = (meta, {k: v for k, v in arrays.items() if k.startswith("x_")})
    return ExcerptIndex(units, seq, bm25, arrays["x_emb"], arrays["x_emb_rows"], masks, row_of,  # type: ignore[arg-type]
                        packed=packed)
