"""A user's own changes to the memory (`bme node ...`), and the rules that make them stick.

Every node a user touches carries `extra["bmeUser"]` (kept through ST-BME as an unknown key;
a plain `bme export` drops it with bme's other bookkeeping):

    {"pinned": bool, "archived": bool, "edited": bool, "added": bool,
     "identities": [{"name": "Mira"}, ...],   # the node's names before the user's edits
     "log": [{"action": "edit", "by": "user", "at": <ms>, "changes": {"state": ["hurt", "well"]}}]}

* **Protected** (`is_protected`): pinned, edited or added by the user. The model and upkeep
  never overwrite, merge, delete, compress, evolve or forget such a node, and a rebuild
  (`ingest --rebuild[-from]`) neither archives nor rolls it back.
* **Tombstoned**: archived by the user, or deleted (a deleted node leaves its identity in the
  sidecar's `bme.userDeleted`). A create that names the same thing (same type; same name,
  else title, else summary, else insight, trimmed and case-insensitive, against the node's
  current and earlier identities) is skipped, so re-ingest never brings it back.
* Pinned nodes are always in Core (memory.index marks them; recall fills them first).

Nothing here prints or opens files: the CLI (cli/node_cmds.py) loads, calls, saves.
"""
from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from ..errors import UsageError
from ..graph.model import Graph, IdFactory, Node, new_uuid
from ..graph.ops import add_node, archive_node, make_node
from ..graph.schema import Schema

USER_KEY = "bmeUser"
DELETED_META_KEY = "userDeleted"   # GraphMeta.extra: identities of nodes the user deleted
IDENTITY_KEYS = ("name", "title", "summary", "insight")
EXTRA_FIELDS = ("visibility",)     # fields ST-BME allows beside the schema's columns
PROTECTING = ("pinned", "edited", "added")
LOG_LIMIT = 50
_MARKERS = ("bmeDeleted", "bmeForgotten")  # apply.DELETED_KEY, sleep.FORGOTTEN_KEY


# -- reading the marks ------------------------------------------------------------------
def user_record(node: Node) -> dict[str, Any] | None:
    """The node's `bmeUser` record, or None when the user never touched it."""
    rec = node.extra.get(USER_KEY)
    return rec if isinstance(rec, dict) else None


def is_pinned(node: Node) -> bool:
    """Pinned by the user (always in Core)."""
    rec = user_record(node)
    return bool(rec and rec.get("pinned"))


def is_protected(node: Node) -> bool:
    """Pinned, edited or added by the user: the model and upkeep leave it as it is."""
    rec = user_record(node)
    return bool(rec and any(rec.get(k) for k in PROTECTING))


def is_user_archived(node: Node) -> bool:
    """Archived by the user (a tombstone: re-extraction never brings it back)."""
    rec = user_record(node)
    return bool(node.archived and rec and rec.get("archived"))


def _norm(value: Any) -> str:
    return " ".join(str(value).split()).casefold() if value is not None else ""


def identity(fields: dict[str, Any]) -> tuple[str, str] | None:
    """(key, normalised value) that names a memory: its name, else title, summary, insight."""
    for key in IDENTITY_KEYS:
        value = _norm(fields.get(key))
        if value:
            return key, value
    return None


def _identities(node: Node) -> list[dict[str, Any]]:
    rec = user_record(node) or {}
    return [node.fields, *[i for i in rec.get("identities") or [] if isinstance(i, dict)]]


# graph -> (its node list, how many of them were looked at, _records made by then, the nodes among
# them with a user record). Every batch of an ingest asks for the touched nodes; only _record
# gives a node its record in place, so the nodes appended since the last look are all that can
# be new (a new list, or a shorter one, is looked at whole).
_MARKED: "WeakKeyDictionary[Graph, tuple[list[Node], int, int, list[Node]]]" = WeakKeyDictionary()
_records_made = 0


def touched_nodes(graph: Graph) -> list[Node]:
    """Nodes the user protects or archived, in graph order."""
    nodes, seen = graph.nodes, _MARKED.get(graph)
    if seen is not None and seen[0] is nodes and seen[1] <= len(nodes) and seen[2] == _records_made:
        marked = seen[3] + [n for n in nodes[seen[1]:] if USER_KEY in n.extra]
    else:
        marked = [n for n in nodes if USER_KEY in n.extra]
    _MARKED[graph] = (nodes, len(nodes), _records_made, marked)
    return [n for n in marked if is_protected(n) or is_user_archived(n)]


def user_match(graph: Graph, type_id: str, fields: dict[str, Any],
               touched: list[Node] | None = None) -> tuple[Node | None, bool]:
    """The protected or user-archived node a create names, and whether a deleted one matches.

    Returns (node, False) for a node the user keeps or archived, (None, True) when the user
    deleted a node of that identity, else (None, False)."""
    want = identity(fields)
    if want is None:
        return None, False
    key, value = want
    for node in touched_nodes(graph) if touched is None else touched:
        if node.type == type_id and any(_norm(f.get(key)) == value for f in _identities(node)):
            return node, False
    deleted = graph.meta.extra.get(DELETED_META_KEY) or []
    gone = any(isinstance(d, dict) and d.get("type") == type_id and _norm((d.get("fields") or {}).get(key)) == value
               for d in deleted)
    return None, gone


# -- changing them ----------------------------------------------------------------------
def _record(node: Node) -> dict[str, Any]:
    global _records_made
    rec = user_record(node)
    if rec is None:
        _records_made += 1
        rec = node.extra[USER_KEY] = {"pinned": False, "archived": False, "edited": False,
                                      "added": False, "identities": [], "log": []}
    return rec


def _log(node: Node, action: str, now: int, **details: Any) -> dict[str, Any]:
    rec = _record(node)
    entry = {"action": action, "by": "user", "at": now, **details}
    rec.setdefault("log", []).append(entry)
    del rec["log"][:-LOG_LIMIT]
    return entry


def find_node(graph: Graph, node_id: str) -> Node:
    """The node with this id, or with the only id starting with it (at least 4 characters)."""
    node = graph.get(node_id)
    if node is not None:
        return node
    found = [n for n in graph.nodes if len(node_id) >= 4 and n.id.startswith(node_id)]
    if len(found) == 1:
        return found[0]
    if found:
        raise UsageError(f"{node_id}: {len(found)} nodes have ids starting so", "give more of the id")
    raise UsageError(f"no node with id {node_id}", "find it with `bme search CHAT TEXT` or `bme show CHAT --timeline`")


def _active(graph: Graph, node_id: str, verb: str) -> Node:
    node = find_node(graph, node_id)
    if node.archived:
        raise UsageError(f"node {node.id} is archived; cannot {verb} it", "restore it first: bme node restore")
    return node


def pin(graph: Graph, node_id: str, now: int) -> Node:
    """Pin an active node: always in Core, never changed by the model or upkeep."""
    node = _active(graph, node_id, "pin")
    if not is_pinned(node):
        _record(node)["pinned"] = True
        _log(node, "pin", now)
    return node


def unpin(graph: Graph, node_id: str, now: int) -> Node:
    """Take the pin off (an edited or added node stays protected)."""
    node = find_node(graph, node_id)
    if is_pinned(node):
        _record(node)["pinned"] = False
        _log(node, "unpin", now)
    return node


def archive(graph: Graph, node_id: str, now: int) -> Node:
    """Archive a node for good: its edges are invalidated and re-ingest never brings it back."""
    node = find_node(graph, node_id)
    if is_user_archived(node):
        return node
    active = [e.id for e in graph.edges_of(node.id)]
    if not node.archived:
        archive_node(graph, node, now)
    for key in _MARKERS:  # neither a rebuild nor `sleep --restore` may undo the user's archive
        node.extra.pop(key, None)
    rec = _record(node)
    rec["archived"], rec["pinned"] = True, False
    _log(node, "archive", now, edges=active)
    return node


def restore(graph: Graph, node_id: str, now: int) -> Node:
    """Bring back an archived node, with the edges the user's archive invalidated."""
    node = find_node(graph, node_id)
    if not node.archived:
        return node
    parent = graph.get(node.parent_id)
    if parent is not None and not parent.archived:
        raise UsageError(f"node {node.id} was compressed into {parent.id}",
                         "edit or pin the summary node instead")
    revive = _ended_edges(node)
    node.archived = False
    for key in _MARKERS:
        node.extra.pop(key, None)
    live = {(e.from_id, e.to_id, e.relation) for e in graph.edges if e.is_active()}
    for e in graph.edges:
        other = graph.get(e.other(node.id))
        triple = (e.from_id, e.to_id, e.relation)
        if e.id in revive and other is not None and not other.archived and triple not in live:
            e.invalid_at = e.expired_at = None
            live.add(triple)
    _record(node)["archived"] = False
    _log(node, "restore", now)
    return node


def _ended_edges(node: Node) -> set[str]:
    """The edges archiving ended: the user's last archive, a model's delete, the sleep cycle."""
    rec = user_record(node) or {}
    last = next((e for e in reversed(rec.get("log") or []) if e.get("action") == "archive"), {})
    ids = set(last.get("edges") or [])
    for key in _MARKERS:
        marker = node.extra.get(key)
        if isinstance(marker, dict):
            ids.update(str(i) for i in marker.get("edges") or [])
    return ids


def check_fields(schema: Schema, type_id: str, fields: dict[str, Any], *, partial: bool) -> None:
    """Refuse unknown types, unknown field names, non-text values and empty required fields."""
    if type_id not in schema:
        known = ", ".join(t["id"] for t in schema.types)
        raise UsageError(f"unknown node type {type_id!r}", f"the schema's types are: {known}")
    columns = schema.columns(type_id)
    for key, value in fields.items():
        if key not in columns and key not in EXTRA_FIELDS:
            raise UsageError(f"{type_id} has no field {key!r}", f"its fields are: {', '.join(columns)}")
        if value is not None and not isinstance(value, (str, list)):
            raise UsageError(f"field {key!r}: give text, not {type(value).__name__}")
    required = [c["name"] for c in schema.get(type_id)["columns"] if c.get("required")]
    for key in required:
        if (key in fields or not partial) and not _norm(fields.get(key)):
            raise UsageError(f"{type_id} needs a {key!r}", f"give it, e.g. --set {key}=...")


def edit(graph: Graph, node_id: str, changes: dict[str, Any], schema: Schema, now: int) -> tuple[Node, dict]:
    """Change fields of an active node (None or "" removes one); returns it and the changes."""
    node = _active(graph, node_id, "edit")
    check_fields(schema, node.type, changes, partial=True)
    merged = {k: v for k, v in {**node.fields, **changes}.items() if v is not None and v != "" and v != []}
    diff = {k: [node.fields.get(k), merged.get(k)] for k in dict.fromkeys([*node.fields, *merged])
            if node.fields.get(k) != merged.get(k)}
    if not diff:
        return node, {}
    rec = _record(node)
    old = identity(node.fields)
    if old is not None and old != identity(merged):
        rec.setdefault("identities", []).append({old[0]: node.fields.get(old[0])})
    node.fields = merged
    node.embedding = None   # the embedding text is made of the fields
    rec["edited"] = True
    _log(node, "edit", now, changes=diff)
    return node, diff


def add(graph: Graph, type_id: str, fields: dict[str, Any], schema: Schema, now: int, *, seq: int,
        importance: float = 5.0, new_id: IdFactory = new_uuid) -> Node:
    """Add a node the user wrote; it is protected like an edited one."""
    fields = {k: v for k, v in fields.items() if v is not None and v != ""}
    check_fields(schema, type_id, fields, partial=False)
    node = add_node(graph, make_node(type_id, fields, seq, now, importance=importance, new_id=new_id))
    _record(node)["added"] = True
    _log(node, "add", now)
    return node


def delete(graph: Graph, node_id: str, now: int) -> Node:
    """Remove a node and its edges for good (a tombstone keeps re-ingest from re-creating it)."""
    node = find_node(graph, node_id)
    if any(graph.get(c) is not None for c in node.child_ids):
        raise UsageError(f"node {node.id} summarises {len(node.child_ids)} compressed nodes",
                         "archive it instead (bme node archive)")
    prev, nxt = graph.get(node.prev_id), graph.get(node.next_id)
    if prev is not None:
        prev.next_id = nxt.id if nxt is not None else None
    if nxt is not None:
        nxt.prev_id = prev.id if prev is not None else None
    parent = graph.get(node.parent_id)
    if parent is not None:
        parent.child_ids = [c for c in parent.child_ids if c != node.id]
    graph.nodes = [n for n in graph.nodes if n is not node]
    graph.reindex()
    graph.edges = [e for e in graph.edges if node.id not in (e.from_id, e.to_id)]
    key = identity(node.fields)
    if key is not None:
        tomb = {"id": node.id, "type": node.type, "fields": {key[0]: node.fields.get(key[0])},
                "by": "user", "at": now}
        graph.meta.extra.setdefault(DELETED_META_KEY, []).append(tomb)
    return node
