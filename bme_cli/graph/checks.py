"""One node or edge of a v3 document, checked field by field, and the v1/v2 migration (spec §1.5).

This is the careful path: it applies ST-BME's defaults to missing values and names the
first wrong one. Whole documents usually take the bulk path in `graph.v3_bulk` first,
which falls back to this one when anything is unusual.
"""
from __future__ import annotations

import math
from typing import Any

from .jsonio import finite_tree, show
from .model import EDGE_KEYS, EVOLUTION_HISTORY_KEY, GRAPH_VERSION, NODE_KEYS, Edge, Node

MAX_INT = 2 ** 53  # JavaScript's safe integers: ST-BME cannot hold more
NODE_KNOWN = frozenset(k for _, k in NODE_KEYS) | {EVOLUTION_HISTORY_KEY}
EDGE_KNOWN = frozenset(k for _, k in EDGE_KEYS)
GRAPH_KNOWN = frozenset({"version", "lastProcessedSeq", "nodes", "edges", "lastRecallResult"})


class Bad(Exception):
    """A field-level problem; the caller adds which node or edge it was."""


# -- field checks (each returns the value or raises Bad) ----------------------------------
def int_field(d: dict, key: str, default: Any) -> Any:
    """d[key] as a safe integer (an integral float is accepted), or default when missing."""
    v = d.get(key)
    if v is None:
        return default
    if type(v) is int and -MAX_INT <= v <= MAX_INT:
        return v
    if type(v) is float and v.is_integer() and abs(v) <= MAX_INT:
        return int(v)
    raise Bad(f"{key} must be an integer (found {show(v)})")


def num_field(d: dict, key: str, default: float) -> float:
    """d[key] as a finite float, or default when missing."""
    v = d.get(key)
    if v is None:
        return default
    try:
        if (type(v) is float or type(v) is int) and math.isfinite(v):
            return float(v)
    except OverflowError:  # an integer beyond the double range
        pass
    raise Bad(f"{key} must be a finite number (found {show(v)})")


def str_field(d: dict, key: str) -> str | None:
    """d[key] as a string or None."""
    v = d.get(key)
    if v is None or type(v) is str:
        return v
    raise Bad(f"{key} must be a string or null (found {show(v)})")


def str_list_field(d: dict, key: str) -> list[str]:
    """d[key] as a list of strings ([] when missing)."""
    v = d.get(key)
    if v is None:
        return []
    if type(v) is list and all(type(x) is str for x in v):
        return v
    raise Bad(f"{key} must be a list of strings (found {show(v)})")


def required_str(d: dict, key: str) -> str:
    """d[key] as a non-empty string."""
    v = d.get(key)
    if type(v) is str and v:
        return v
    raise Bad(f"has no '{key}'" if v is None else f"'{key}' must be a non-empty string (found {show(v)})")


def finite_extras(d: dict, known: frozenset[str]) -> dict[str, Any]:
    """The keys of d that are not in `known`, in order; NaN or infinity in them is refused."""
    extra = {} if d.keys() <= known else {k: v for k, v in d.items() if k not in known}
    if not finite_tree(extra.values()):
        raise Bad("an extra key holds NaN or an infinite number")
    return extra


def history_field(d: dict) -> list | None:
    """The node's `_evolutionHistory`: a list of finite JSON values, or None."""
    history = d.get(EVOLUTION_HISTORY_KEY)
    if history is not None and (type(history) is not list or not finite_tree(history)):
        raise Bad(f"{EVOLUTION_HISTORY_KEY} must be a list of JSON values (found {show(history)})")
    return history


# -- one node or edge --------------------------------------------------------------------
def checked_node(d: dict, now: int) -> Node:
    """One validated node with ST-BME's normalisation defaults (spec §1.5)."""
    seq = int_field(d, "seq", 0)
    rng = d.get("seqRange")
    if rng is None:
        rng = [seq, seq]
    elif not (type(rng) is list and len(rng) == 2 and all(type(x) is int for x in rng)):
        raise Bad(f"seqRange must be two integers (found {show(rng)})")
    fields = d.get("fields")
    if fields is None:
        fields = {}
    elif type(fields) is not dict:
        raise Bad(f"fields must be an object (found {show(fields)})")
    elif not finite_tree(fields.values()):
        raise Bad("fields holds NaN or an infinite number")
    archived = d.get("archived")
    if archived is not None and type(archived) is not bool:
        raise Bad(f"archived must be true or false (found {show(archived)})")
    history = history_field(d)
    created = int_field(d, "createdTime", None)
    last_access = int_field(d, "lastAccessTime", None)
    return Node(
        id=d["id"], type=d["type"], fields=fields, seq=seq, seq_range=rng,
        level=int_field(d, "level", 0), parent_id=str_field(d, "parentId"),
        child_ids=str_list_field(d, "childIds"), archived=bool(archived), embedding=None,
        importance=num_field(d, "importance", 5.0), access_count=int_field(d, "accessCount", 0),
        last_access_time=(created or now) if last_access is None else last_access,
        created_time=now if created is None else created,
        prev_id=str_field(d, "prevId"), next_id=str_field(d, "nextId"),
        clusters=str_list_field(d, "clusters"), evolution_history=history,
        extra=finite_extras(d, NODE_KNOWN),
    )


def checked_edge(d: dict, now: int) -> Edge:
    """One validated edge with ST-BME's normalisation defaults (spec §1.5)."""
    relation = d.get("relation")
    if relation is not None and type(relation) is not str:
        raise Bad(f"relation must be a string (found {show(relation)})")
    created = int_field(d, "createdTime", None)
    return Edge(
        id=d["id"], from_id=d["fromId"], to_id=d["toId"], relation=relation or "related",
        strength=num_field(d, "strength", 0.8), edge_type=int_field(d, "edgeType", 0),
        created_time=now if created is None else created,
        valid_at=int_field(d, "validAt", created or now),
        invalid_at=int_field(d, "invalidAt", None), expired_at=int_field(d, "expiredAt", None),
        extra=finite_extras(d, EDGE_KNOWN),
    )


# -- migration -----------------------------------------------------------------------------
def migrate_v3(data: dict, now: int) -> dict:
    """ST-BME's v1/v2 -> v3 migration plus node/edge normalisation (spec §1.5), on a copy.

    Only missing (or null) values get defaults; a value of the wrong type is left for the
    validator to report, where ST-BME would coerce it silently. Expects `nodes`/`edges`
    to be lists of objects (anything else is left alone for the validator). `now` (epoch
    ms, the caller's clock) fills missing times.
    """
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
