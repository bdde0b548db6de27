"""Running extracted operations on the graph (spec §3.5), with the fixes of spec §10.

* Two passes: every node is created or updated first, then every link is resolved, so a
  `targetRef` may name an operation that comes later (§10.4).
* A `latestOnly` create that meets an active node of its type - same `name`, else `title`,
  else `summary` (trimmed, case-insensitive); for a latestOnly type with neither a name nor
  a title column (e.g. synopsis) the latest active node of the type - goes through the
  normal update path (§10.3).
* Updates: refused on archived nodes; the embedding is cleared only when a field changed
  (the embedding text is made of fields only); seqRange widened, seq = max; previous
  `updates` edges into the node are invalidated only when the state really changed;
  the change event is marked `extra["bmeAuto"] = "update"` so the injector can leave it
  out of Core unless `update_events_core` (§10.16). Change-event text is in ctx.language.
  Events get no change event (an event about an edited event is noise), nor does a custom
  schema without an `event` type.
* Delete archives the node and invalidates its edges (§10.19).
* Unknown types, ids and refs, self links and archived endpoints are skipped and counted;
  an unknown relation becomes `related` (as ST-BME) and is counted; merged edges are
  counted apart from new ones. At most MAX_OPS operations run per batch.
* Nodes the user pinned, edited or added are never updated, merged into or deleted (counted
  as `user_kept`; a create naming one adopts it, links and all), and a create naming a node
  the user archived or deleted is dropped (`user_archived`): see memory/edits.py.
* bme bookkeeping for `ingest.rebuild_from` (all kept as unknown keys through ST-BME):
  created nodes cover their batch (`seqRange = [start_seq, end_seq]`); each update keeps a
  snapshot of the state it replaced in `extra["bmeHistory"]` (last 8); a delete records
  `extra["bmeDeleted"]`; new edges record the batch end in `extra["bmeSeq"]`.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields as dc_fields
from typing import TYPE_CHECKING, Any, Sequence

from ..graph.model import Graph, Node, clamp
from ..graph.ops import (UPDATE_EVENT_KEY, UPDATE_EVENT_VALUE, add_edge, add_node, archive_node,  # noqa: F401
                         invalidate_edge, is_update_event, make_node)
from ..graph.schema import RELATION_TYPES, Schema
from ..prompts.extract import MAX_OPS, CreateOp, DeleteOp, LinkSpec, UpdateOp, clean_fields
from ..text import place_short_form, same_person_name, same_place_name
from .people import (aliases_of, fold_into, folded_fields, names_more, norm_name, one_person, person_forms,
                     titled_surname_forms)
from .place_names import fuller_place, one_place
from .context import MemoryContext
from .edits import is_protected, touched_nodes, user_match

if TYPE_CHECKING:  # typing only: conflict.py does not import this module back
    from .conflict import ConflictChecker

HISTORY_KEY = "bmeHistory"
HISTORY_LIMIT = 8
DELETED_KEY = "bmeDeleted"
EDGE_SEQ_KEY = "bmeSeq"
DEFAULT_LINK_STRENGTH = 0.8
TEMPORAL_STRENGTH = 0.95
UPDATES_STRENGTH = 0.9
CHANGE_LIMIT = 3          # changes listed in a change event
CHANGE_VALUE_CHARS = 80   # each before/after value clipped in the change event


@dataclass
class ApplyReport:
    """What one batch's operations did to the graph."""

    created: int = 0
    updated: int = 0
    archived: int = 0
    auto_events: int = 0          # change events made by updates (not counted in created)
    edges_created: int = 0
    edges_merged: int = 0
    edges_invalidated: int = 0
    relations_defaulted: int = 0  # unknown relations stored as `related`
    conflict_checks: int = 0      # conflict questions asked to the model
    conflict_updates: int = 0     # creates turned into updates by the conflict check
    skipped: Counter[str] = field(default_factory=Counter)
    new_node_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def skip(self, reason: str, n: int = 1) -> None:
        """Count n operations or links skipped for a reason."""
        if n:
            self.skipped[reason] += n

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())

    def merge(self, other: "ApplyReport") -> None:
        """Add another report's counts into this one (for run totals)."""
        for f in dc_fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, Counter):
                mine.update(theirs)
            elif isinstance(mine, list):
                mine.extend(theirs)
            else:
                setattr(self, f.name, mine + theirs)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        out = {f.name: getattr(self, f.name) for f in dc_fields(self)}
        out["skipped"] = dict(self.skipped)
        return out


@dataclass
class _Run:
    ctx: MemoryContext
    graph: Graph
    start_seq: int
    end_seq: int
    now: int
    report: ApplyReport
    refs: dict[str, str] = field(default_factory=dict)
    links: list[tuple[str, LinkSpec]] = field(default_factory=list)
    user_nodes: list[Node] | None = None  # nodes the user touched, found once per batch

    @property
    def schema(self) -> Schema:
        return self.ctx.schema


def apply_operations(graph: Graph, ops: Sequence[CreateOp | UpdateOp | DeleteOp], ctx: MemoryContext, *,
                     start_seq: int, end_seq: int, checker: "ConflictChecker | None" = None) -> ApplyReport:
    """Run the operations of one batch covering messages start_seq..end_seq; returns the counts."""
    run = _Run(ctx, graph, start_seq, end_seq, ctx.now(), ApplyReport())
    for op in ops[:MAX_OPS]:
        if isinstance(op, CreateOp):
            _create(run, op, checker)
        elif isinstance(op, UpdateOp):
            _update(run, op)
        elif isinstance(op, DeleteOp):
            _delete(run, op)
        else:
            run.report.skip("invalid_op")
    run.report.skip("too_many_ops", max(0, len(ops) - MAX_OPS))
    for source_id, link in run.links:  # second pass: every node and ref exists now
        _link(run, source_id, link)
    return run.report


# -- create ---------------------------------------------------------------------------------
_norm = norm_name   # names and titles compare whitespace-folded and case-folded


def find_latest(graph: Graph, schema: Schema, type_id: str, fields: dict[str, Any]) -> Node | None:
    """The active node a latestOnly create should update: same name, else title, else summary."""
    candidates = graph.active_nodes(type_id)
    if not candidates:
        return None
    if not set(schema.columns(type_id)) & {"name", "title"}:
        # Identified by nothing but its text (synopsis): "latest only" means one node.
        return max(candidates, key=lambda n: n.seq)
    for key in ("name", "title", "summary"):
        want = _norm(fields.get(key))
        if want:
            same = [n for n in candidates if _norm(n.fields.get(key)) == want]
            if not same and key in ("name", "title"):  # a lorebook's other keys for it (memory/seed.py)
                same = [n for n in candidates if want in aliases_of(n)]
            if not same and key == "name" and type_id == PLACE_TYPE:
                same = [n for n in candidates if same_place_name(want, _norm(n.fields.get(key)))] or \
                    one_place(want, candidates)
            if not same and key == "name" and type_id == PERSON_TYPE:
                same = one_person(want, candidates)
            return max(same, key=lambda n: n.seq) if same else None
    return None


PLACE_TYPE = "location"
PERSON_TYPE = "character"


def _same_form(type_id: str, a: str, b: str) -> bool:
    """One place or one person written two ways (the stored way is kept)."""
    return (type_id == PLACE_TYPE and (same_place_name(a, b) or place_short_form(a, b))) or \
        (type_id == PERSON_TYPE and person_forms(a, b))


def _create(run: _Run, op: CreateOp, checker: "ConflictChecker | None") -> None:
    type_id = (op.type or "").strip()
    if type_id not in run.schema:
        run.report.skip("unknown_type")
        return
    fields = clean_fields(op.fields)
    if not fields:
        run.report.skip("empty_fields")
        return
    if _user_decides(run, type_id, fields, op):
        return
    if run.schema.latest_only(type_id):
        existing = find_latest(run.graph, run.schema, type_id, fields)
        if existing is not None and is_protected(existing):
            run.report.skip("user_kept")
            _adopt(run, existing.id, op.ref, op.links)
            return
        if existing is not None:
            fuller = _fuller_name(run, existing, fields) if type_id == PERSON_TYPE and "name" in fields else \
                fuller_place(existing, fields) if type_id == PLACE_TYPE and "name" in fields else {}
            for key in ("name", "title"):  # the same name in other casing, an alias or form: keep the stored one
                if key in fields and key not in fuller and (_norm(fields[key]) == _norm(existing.fields.get(key))
                                      or _norm(fields[key]) in aliases_of(existing)
                                      or key == "name" and _same_form(type_id, _norm(fields[key]),
                                                                      _norm(existing.fields.get(key)))):
                    fields[key] = existing.fields[key]
            update_node(run, existing, {**fields, **fuller}, update_seq=run.end_seq, importance=op.importance,
                        raise_only=True)
            _adopt(run, existing.id, op.ref, op.links)
            return
    if checker is not None and _conflict(run, op, type_id, fields, checker):
        return
    importance = op.importance if op.importance is not None else 5.0
    node = make_node(type_id, fields, run.end_seq, run.now, importance=importance,
                     seq_range=[min(run.start_seq, run.end_seq), run.end_seq],
                     clusters=op.clusters, new_id=run.ctx.new_id)
    add_node(run.graph, node)
    run.report.created += 1
    run.report.new_node_ids.append(node.id)
    _adopt(run, node.id, op.ref, op.links)
    if checker is not None:
        checker.register(node)


def _fuller_name(run: _Run, existing: Node, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that make `existing` the person's fuller name ("Ike" -> "Ike Mercer", 韩主管 ->
    韩铮; the old one an alias), with the stored forms it shows to be the same person ("Brother
    Mercer") folded in and archived (memory/people.py); {} when the name is no fuller."""
    new, old = _norm(fields["name"]), _norm(existing.fields.get("name"))
    if not old or new == old or new in aliases_of(existing) or not same_person_name(old, new) \
            or not names_more(new, old):
        return {}   # an alias already listed is a name the lorebook or the user chose against
    others = titled_surname_forms(new, existing, run.graph.active_nodes(PERSON_TYPE))
    fuller = folded_fields(existing, others, str(fields["name"]))
    run.report.archived += fold_into(run.graph, existing, others, run.now, run.ctx.new_id)
    return fuller


def _user_decides(run: _Run, type_id: str, fields: dict[str, Any], op: CreateOp) -> bool:
    """A create naming a node the user keeps (adopted as is), archived or deleted (dropped)."""
    if run.user_nodes is None:
        run.user_nodes = touched_nodes(run.graph)
    node, deleted = user_match(run.graph, type_id, fields, run.user_nodes)
    if node is not None and not node.archived:
        run.report.skip("user_kept")
        _adopt(run, node.id, op.ref, op.links)
        return True
    if node is not None or deleted:
        run.report.skip("user_archived")
        return True
    return False


def _conflict(run: _Run, op: CreateOp, type_id: str, fields: dict[str, Any],
              checker: "ConflictChecker") -> bool:
    """Settle a create the conflict check calls a duplicate or an update; True when settled."""
    decision = checker.check(op, type_id, fields)
    if decision.action == "skip" and decision.target_id:
        run.report.skip("duplicate")
        _adopt(run, decision.target_id, op.ref, op.links)
        return True
    if decision.action == "update" and decision.target_id:
        target = run.graph.get(decision.target_id)
        if is_protected(target):  # the user's version stands: the create is a duplicate of it
            run.report.skip("user_kept")
            _adopt(run, target.id, op.ref, op.links)
            return True
        update_node(run, target, {**fields, **decision.merged_fields}, update_seq=run.end_seq,
                    importance=op.importance, raise_only=True)
        run.report.conflict_updates += 1
        _adopt(run, target.id, op.ref, op.links)
        return True
    return False


def _adopt(run: _Run, node_id: str, ref: str | None, links: list[LinkSpec]) -> None:
    """Register the op's ref for node_id and queue its links for the second pass."""
    if ref:
        run.refs[ref] = node_id
    run.links.extend((node_id, link) for link in links)


# -- update ---------------------------------------------------------------------------------
def _active_target(run: _Run, node_id: str) -> Node | None:
    """The active node an update or delete names (by id, or by a ref of this batch); a missing
    or archived one is counted as skipped and gives None."""
    node = run.graph.get(node_id) or run.graph.get(run.refs.get(node_id))
    if node is None or node.archived:
        run.report.skip("unknown_node" if node is None else "archived_target")
        return None
    if is_protected(node):
        run.report.skip("user_kept")
        return None
    return node


def _update(run: _Run, op: UpdateOp) -> None:
    node = _active_target(run, op.node_id)
    if node is None:
        kept = run.graph.get(op.node_id) or run.graph.get(run.refs.get(op.node_id))
        if kept is not None and is_protected(kept):  # its links still count; its fields stay
            _adopt(run, kept.id, op.ref, op.links)
        return
    # A seq beyond the batch would outlive a rebuild of these messages; keep it inside.
    seq = run.end_seq if op.seq is None else int(clamp(op.seq, 0, run.end_seq))
    update_node(run, node, clean_fields(op.fields, keep_none=True), update_seq=seq,
                source_id=op.source_node_id, temporal_strength=op.temporal_strength,
                importance=op.importance)
    _adopt(run, node.id, op.ref, op.links)


def update_node(run: _Run, node: Node, fields: dict[str, Any], *, update_seq: int,
                source_id: str | None = None, temporal_strength: float | None = None,
                importance: float | None = None, raise_only: bool = False) -> None:
    """ST-BME's update path (§3.5 update), shared by update ops, latestOnly and conflict merges."""
    prev = dict(node.fields)
    merged = {k: v for k, v in {**prev, **fields}.items() if v is not None and v != ""}
    changes = [(k, prev.get(k), merged.get(k)) for k in dict.fromkeys([*prev, *merged])
               if prev.get(k) != merged.get(k)]
    new_range = [min(node.seq_range[0], update_seq), max(node.seq_end, update_seq)]
    invalidated: list[str] = []
    for e in run.graph.edges if changes or source_id else ():
        # A new state supersedes the previous change events; a new temporal edge the old one.
        superseded = (e.to_id == node.id and (
            (changes and e.relation == "updates")
            or (source_id and e.relation == "temporal_update" and e.from_id == source_id)))
        if superseded and invalidate_edge(e, run.now):
            invalidated.append(e.id)
    if changes or new_range != node.seq_range or update_seq > node.seq:
        _snapshot(node, update_seq, invalidated)
    old_importance = node.importance
    node.fields = merged
    node.seq = max(node.seq, update_seq)
    node.seq_range = new_range
    if changes:
        node.embedding = None
    if importance is not None:
        value = clamp(float(importance), 0.0, 10.0)
        node.importance = max(node.importance, value) if raise_only else value
    run.report.updated += 1
    run.report.edges_invalidated += len(invalidated)
    if source_id and source_id != node.id and run.graph.get(source_id) is not None:
        strength = temporal_strength if temporal_strength is not None else TEMPORAL_STRENGTH
        _edge(run, source_id, node.id, "temporal_update", strength)
    if changes:
        _change_event(run, node, changes, update_seq,
                      importance if importance is not None else old_importance)


def _snapshot(node: Node, update_seq: int, invalidated: list[str]) -> None:
    """Keep the state this update replaces, so a rebuild can roll it back."""
    hist = node.extra.get(HISTORY_KEY)
    if not isinstance(hist, dict) or not isinstance(hist.get("entries"), list):
        hist = {"lost": -1, "entries": []}
    hist["entries"].append({"seq": update_seq, "fields": dict(node.fields), "nodeSeq": node.seq,
                            "seqRange": list(node.seq_range), "importance": node.importance,
                            "invalidated": invalidated})
    while len(hist["entries"]) > HISTORY_LIMIT:
        dropped = hist["entries"].pop(0)
        hist["lost"] = max(int(hist.get("lost", -1)), int(dropped.get("seq", -1)))
    node.extra[HISTORY_KEY] = hist


def _show(value: Any, language: str) -> str:
    if value is None or value == "":
        return "空" if language == "zh" else "empty"
    text = " ".join(str(value).split())
    return text if len(text) <= CHANGE_VALUE_CHARS else text[:CHANGE_VALUE_CHARS - 1] + "…"


def change_summary(type_id: str, changes: list[tuple[str, Any, Any]], language: str) -> str:
    """'<type> state update: k: a -> b; ...' (Chinese: '<type> 状态更新：...；...'), first 3 changes."""
    parts = [f"{k}: {_show(a, language)} -> {_show(b, language)}" for k, a, b in changes[:CHANGE_LIMIT]]
    if language == "zh":
        return f"{type_id} 状态更新：" + "；".join(parts)
    return f"{type_id} state update: " + "; ".join(parts)


def _change_event(run: _Run, node: Node, changes: list[tuple[str, Any, Any]], update_seq: int,
                  importance: float) -> None:
    if "event" not in run.schema or node.type == "event":
        return  # no events in the schema; or an event about an event, which says nothing new
    who = node.fields.get("name") or node.fields.get("title") or node.id
    fields = {"summary": change_summary(node.type, changes, run.ctx.language),
              "participants": str(who), "status": "resolved"}
    event = make_node("event", fields, update_seq, run.now, importance=clamp(importance, 4.0, 8.0),
                      new_id=run.ctx.new_id)
    event.extra[UPDATE_EVENT_KEY] = UPDATE_EVENT_VALUE
    add_node(run.graph, event)
    run.report.auto_events += 1
    _edge(run, event.id, node.id, "updates", UPDATES_STRENGTH)


# -- delete and links -----------------------------------------------------------------------
def _delete(run: _Run, op: DeleteOp) -> None:
    node = _active_target(run, op.node_id)
    if node is None:
        return
    active = run.graph.edges_of(node.id)
    run.report.edges_invalidated += archive_node(run.graph, node, run.now)
    node.extra[DELETED_KEY] = {"seq": run.end_seq, "edges": [e.id for e in active]}
    run.report.archived += 1


def _edge(run: _Run, from_id: str, to_id: str, relation: str, strength: float) -> None:
    res = add_edge(run.graph, from_id, to_id, relation, strength, run.now, new_id=run.ctx.new_id)
    if res.edge is None:
        run.report.skip("unknown_node")
    elif res.created:
        res.edge.extra[EDGE_SEQ_KEY] = run.end_seq
        run.report.edges_created += 1
    else:
        run.report.edges_merged += 1


def _link(run: _Run, source_id: str, link: LinkSpec) -> None:
    target = link.target_node_id
    if target and target not in run.graph:
        target = run.refs.get(target)  # a ref given as an id: lenient, it is unambiguous
    if not target and link.target_ref:
        target = run.refs.get(link.target_ref)
    if not target or target not in run.graph:
        run.report.skip("unknown_ref" if link.target_ref and not link.target_node_id else "unknown_node")
        return
    if target == source_id:
        run.report.skip("self_link")
        return
    if run.graph.get(target).archived or run.graph.get(source_id).archived:
        run.report.skip("archived_target")
        return
    relation = "_".join((link.relation or "related").strip().lower().split())
    if relation not in RELATION_TYPES:
        relation = "related"
        run.report.relations_defaulted += 1
    strength = link.strength if link.strength is not None else DEFAULT_LINK_STRENGTH
    _edge(run, source_id, target, relation, strength)
