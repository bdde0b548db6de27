"""Node types and relations of ST-BME v3 (spec §2), and validation of custom schemas."""
from __future__ import annotations

import copy
from typing import Any

from ..errors import GraphFormatError

RELATION_TYPES: tuple[str, ...] = (
    "related", "involved_in", "occurred_at", "advances",
    "updates", "contradicts", "evolves", "temporal_update",
)
INHIBITORY_EDGE_TYPE = 255


def edge_type_for(relation: str) -> int:
    """edgeType for a relation: 255 (inhibitory) for `contradicts`, else 0."""
    return INHIBITORY_EDGE_TYPE if relation == "contradicts" else 0


def _col(name: str, hint: str, required: bool = False) -> dict[str, Any]:
    return {"name": name, "hint": hint, "required": required}


def _compression(mode: str = "none", threshold: int = 0, fan_in: int = 0, max_depth: int = 0,
                 keep: int = 0, instruction: str = "") -> dict[str, Any]:
    return {"mode": mode, "threshold": threshold, "fanIn": fan_in, "maxDepth": max_depth,
            "keepRecentLeaves": keep, "instruction": instruction}


# Labels are ST-BME's Chinese labels (they appear in exported schemas and Chinese
# injection blocks); hints are bme's own English wording of the same intent.
DEFAULT_NODE_SCHEMA: list[dict[str, Any]] = [
    {"id": "event", "label": "事件", "tableName": "event_table",
     "columns": [_col("summary", "what happened, with cause and result", True),
                 _col("participants", "names of those involved, comma-separated"),
                 _col("status", "ongoing / resolved / blocked")],
     "alwaysInject": True, "latestOnly": False, "forceUpdate": True,
     "compression": _compression("hierarchical", 9, 3, 10, 6,
                                 "Turn these events into high-value plot milestones; keep causality, "
                                 "irreversible outcomes and unresolved foreshadowing.")},
    {"id": "character", "label": "角色", "tableName": "character_table",
     "columns": [_col("name", "canonical name only", True), _col("traits", "stable personality traits"),
                 _col("state", "current condition and situation"), _col("goal", "what they want now"),
                 _col("inventory", "notable possessions"), _col("core_note", "what must never be forgotten")],
     "alwaysInject": False, "latestOnly": True, "forceUpdate": False, "compression": _compression()},
    {"id": "location", "label": "地点", "tableName": "location_table",
     "columns": [_col("name", "canonical place name", True), _col("state", "current condition"),
                 _col("features", "notable features"), _col("danger", "threats or hazards")],
     "alwaysInject": False, "latestOnly": True, "forceUpdate": False, "compression": _compression()},
    {"id": "rule", "label": "规则", "tableName": "rule_table",
     "columns": [_col("title", "short name of the rule", True), _col("constraint", "what the rule requires", True),
                 _col("scope", "where or to whom it applies"), _col("status", "active / suspended / revoked")],
     "alwaysInject": True, "latestOnly": False, "forceUpdate": False, "compression": _compression()},
    {"id": "thread", "label": "主线", "tableName": "thread_table",
     "columns": [_col("title", "name of the plot thread", True), _col("summary", "where it stands"),
                 _col("status", "active / completed / abandoned")],
     "alwaysInject": True, "latestOnly": False, "forceUpdate": False,
     "compression": _compression("hierarchical", 6, 3, 5, 3,
                                 "Turn these into stage-progress summaries; keep turning points and "
                                 "the current goal.")},
    {"id": "synopsis", "label": "全局概要", "tableName": "synopsis_table",
     "columns": [_col("summary", "the story so far", True), _col("scope", "message range covered")],
     "alwaysInject": True, "latestOnly": True, "forceUpdate": False, "compression": _compression()},
    {"id": "reflection", "label": "反思", "tableName": "reflection_table",
     "columns": [_col("insight", "a higher-level conclusion", True), _col("trigger", "what prompted it"),
                 _col("suggestion", "guidance for later narration")],
     "alwaysInject": False, "latestOnly": False, "forceUpdate": False,
     "compression": _compression("hierarchical", 6, 3, 3, 3,
                                 "Merge these into higher-level narrative guidance principles.")},
]


class Schema:
    """A validated node-type schema with fast lookups by type id."""

    def __init__(self, types: list[dict[str, Any]]):
        validate_schema(types)
        self.types = types
        self.by_id: dict[str, dict[str, Any]] = {t["id"]: t for t in types}

    @classmethod
    def default(cls) -> "Schema":
        """The built-in ST-BME schema (a private copy, safe to mutate)."""
        return cls(copy.deepcopy(DEFAULT_NODE_SCHEMA))

    def __contains__(self, type_id: object) -> bool:
        return type_id in self.by_id

    def get(self, type_id: str) -> dict[str, Any] | None:
        return self.by_id.get(type_id)

    def columns(self, type_id: str) -> list[str]:
        """Column names of a type, in schema order ([] for unknown types)."""
        t = self.by_id.get(type_id)
        return [c["name"] for c in t["columns"]] if t else []

    def always_inject(self, type_id: str) -> bool:
        t = self.by_id.get(type_id)
        return bool(t and t.get("alwaysInject"))

    def latest_only(self, type_id: str) -> bool:
        t = self.by_id.get(type_id)
        return bool(t and t.get("latestOnly"))


def validate_schema(types: Any) -> None:
    """Raise GraphFormatError naming the first problem of a custom schema (spec §2 rules)."""
    if not isinstance(types, list) or not types:
        raise GraphFormatError("schema: must be a non-empty list of node types")
    ids: set[str] = set()
    tables: set[str] = set()
    for i, t in enumerate(types):
        where = f"schema type #{i + 1}"
        if not isinstance(t, dict):
            raise GraphFormatError(f"{where}: must be an object")
        for key in ("id", "label", "tableName"):
            if not isinstance(t.get(key), str) or not t[key]:
                raise GraphFormatError(f"{where}: needs a string {key!r}")
        where = f"schema type {t['id']!r}"
        if t["id"] in ids:
            raise GraphFormatError(f"{where}: duplicate id")
        if t["tableName"] in tables:
            raise GraphFormatError(f"{where}: duplicate tableName {t['tableName']!r}")
        ids.add(t["id"])
        tables.add(t["tableName"])
        cols = t.get("columns")
        if not isinstance(cols, list) or not cols:
            raise GraphFormatError(f"{where}: needs a non-empty 'columns' list")
        names = [c.get("name") if isinstance(c, dict) else None for c in cols]
        if not all(isinstance(n, str) and n for n in names):
            raise GraphFormatError(f"{where}: every column needs a string 'name'")
        if len(set(names)) != len(names):
            raise GraphFormatError(f"{where}: column names must be unique")
        if not any(isinstance(c, dict) and c.get("required") for c in cols):
            raise GraphFormatError(f"{where}: at least one column must be required")
        if t.get("latestOnly") and not {"name", "title", "summary"} & set(names):
            raise GraphFormatError(f"{where}: a latestOnly type needs a 'name', 'title' or 'summary' column")
