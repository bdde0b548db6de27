"""The bulk path of reading a v3 document: its `nodes` and `edges` lists built into Node and
Edge objects, for the items that are complete and typed as ST-BME and bme write them.

One loop with the checks inline (no function call per item) builds them, 2x faster than
checking field by field. Any item that is not such a node or edge goes to `slow(i, item)`,
the checked path of `graph.checks`, which applies defaults and names the problem. Both
paths build the same objects.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable

from .checks import EDGE_KNOWN, MAX_INT, NODE_KNOWN, Bad, finite_extras, history_field
from .jsonio import SCALARS, finite_tree
from .model import EDGE_KEYS, NODE_KEYS, Edge, Node

_NODE_ITEMS = itemgetter(*(k for _, k in NODE_KEYS))
_EDGE_ITEMS = itemgetter(*(k for _, k in EDGE_KEYS))
_NODE_SIZE, _EDGE_SIZE = len(NODE_KEYS), len(EDGE_KEYS)


def _strs(values: list) -> bool:
    return all(type(x) is str for x in values)


def _node_extras(d: dict) -> tuple[Any, dict] | None:
    """(history, unknown keys) of a node with keys beyond the 17 known; None if one is bad."""
    try:
        return history_field(d), finite_extras(d, NODE_KNOWN)
    except Bad:
        return None


def bulk_nodes(items: list, slow: Callable[[int, Any], Node]) -> list[Node]:
    """The nodes of a v3 `nodes` list; ids are not checked for uniqueness here."""
    out: list[Node] = []
    append, get, m, is_plain = out.append, _NODE_ITEMS, MAX_INT, SCALARS.issuperset
    for i, d in enumerate(items):
        try:
            (nid, ntype, level, parent, children, seq, rng, archived, fields, _emb, importance, access,
             last_access, created, prev, nxt, clusters) = get(d)
        except (KeyError, TypeError):  # a missing key (defaults are due) or not an object
            append(slow(i, d))
            continue
        if type(importance) is int and -m <= importance <= m:  # JavaScript writes 5.0 as 5
            importance = float(importance)
        if not (type(nid) is str and nid and type(ntype) is str and ntype
                and type(level) is int and -m <= level <= m and type(seq) is int and -m <= seq <= m
                and type(rng) is list and len(rng) == 2 and type(rng[0]) is int and type(rng[1]) is int
                and type(archived) is bool and type(fields) is dict
                and (is_plain(map(type, fields.values())) or finite_tree(fields.values()))
                and type(importance) is float and importance - importance == 0
                and type(access) is int and -m <= access <= m and type(last_access) is int
                and -m <= last_access <= m and type(created) is int and -m <= created <= m
                and (parent is None or type(parent) is str) and (prev is None or type(prev) is str)
                and (nxt is None or type(nxt) is str) and type(children) is list and type(clusters) is list
                and (not children or _strs(children)) and (not clusters or _strs(clusters))):
            append(slow(i, d))
            continue
        extras = (None, {}) if len(d) == _NODE_SIZE else _node_extras(d)
        if extras is None:
            append(slow(i, d))
            continue
        append(Node(nid, ntype, fields, seq, rng, level, parent, children, archived, None, importance,
                    access, last_access, created, prev, nxt, clusters, extras[0], extras[1]))
    return out


def bulk_edges(items: list, ids: dict[str, int], slow: Callable[[int, Any], Edge]) -> list[Edge]:
    """The edges of a v3 `edges` list, both ends among `ids` and no self-loop; ids not deduplicated."""
    out: list[Edge] = []
    append, get, m = out.append, _EDGE_ITEMS, MAX_INT
    for i, d in enumerate(items):
        try:
            eid, src, dst, rel, strength, etype, created, valid, invalid, expired = get(d)
        except (KeyError, TypeError):
            append(slow(i, d))
            continue
        if type(strength) is int and -m <= strength <= m:
            strength = float(strength)
        if not (type(eid) is str and eid and type(src) is str and type(dst) is str
                and src in ids and dst in ids and src != dst and type(rel) is str and rel
                and type(strength) is float and strength - strength == 0
                and type(etype) is int and -m <= etype <= m and type(created) is int and -m <= created <= m
                and type(valid) is int and -m <= valid <= m
                and (invalid is None or type(invalid) is int and -m <= invalid <= m)
                and (expired is None or type(expired) is int and -m <= expired <= m)):
            append(slow(i, d))
            continue
        if len(d) == _EDGE_SIZE:
            extra: dict = {}
        else:
            try:
                extra = finite_extras(d, EDGE_KNOWN)
            except Bad:
                append(slow(i, d))
                continue
        append(Edge(eid, src, dst, rel, strength, etype, created, valid, invalid, expired, extra))
    return out
