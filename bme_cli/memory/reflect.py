"""Reflection (spec §6.4): one higher-level insight from the latest events.

Inputs as in ST-BME: the 6 latest active events (at least 2), the 5 latest characters,
the 4 latest threads and the last 5 valid `contradicts` edges (shown by label, not id).
The new reflection gets importance clamp(reply ?? 7, 5, 10) and `evolves` edges
(strength 0.75) to the last 3 of those events.
"""
from __future__ import annotations

from ..graph.model import Graph, Node, clamp
from ..graph.ops import add_edge, add_node, make_node
from ..prompts.common import cell_text
from ..prompts.reflect import (Contradiction, ReflectEntity, ReflectEvent, ReflectInput,
                               build_reflect_task)
from . import guard
from .context import MemoryContext

RECENT_EVENTS = 6
MIN_EVENTS = 2
RECENT_CHARACTERS = 5
RECENT_THREADS = 4
RECENT_CONTRADICTIONS = 5
EVOLVES_TARGETS = 3
EVOLVES_STRENGTH = 0.75
DEFAULT_IMPORTANCE = 7.0
LINE_CHARS = 300


def _clip(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def recent_events(graph: Graph, limit: int = RECENT_EVENTS) -> list[Node]:
    """The `limit` highest-seq active events, oldest first."""
    return sorted(graph.active_nodes("event"), key=lambda n: n.seq)[-limit:]


def _latest(graph: Graph, type_id: str, limit: int) -> list[Node]:
    return sorted(graph.active_nodes(type_id), key=lambda n: n.seq_end)[-limit:]


def _state(node: Node, keys: tuple[str, ...], default: str) -> str:
    return next((cell_text(node.fields.get(k)) for k in keys if cell_text(node.fields.get(k))), default)


def build_reflect_input(graph: Graph, ctx: MemoryContext) -> ReflectInput | None:
    """The reflection input, or None with fewer than 2 active events."""
    events = recent_events(graph)
    if len(events) < MIN_EVENTS or "reflection" not in ctx.schema:
        return None
    contradictions = [e for e in graph.edges if e.relation == "contradicts" and e.is_active()]
    return ReflectInput(
        language=ctx.language,
        events=[ReflectEvent(seq=n.seq, summary=_clip(_state(n, ("summary",), n.label())),
                             participants=_clip(cell_text(n.fields.get("participants")), 120),
                             status=_clip(cell_text(n.fields.get("status")), 60)) for n in events],
        characters=[ReflectEntity(label=_clip(n.label(), 80), state=_clip(_state(n, ("state", "summary"), "")))
                    for n in _latest(graph, "character", RECENT_CHARACTERS)],
        threads=[ReflectEntity(label=_clip(n.label(), 120), state=_clip(_state(n, ("status", "summary"), "active")))
                 for n in _latest(graph, "thread", RECENT_THREADS)],
        contradictions=[Contradiction(source=_clip(_label(graph, e.from_id), 120),
                                      target=_clip(_label(graph, e.to_id), 120))
                        for e in contradictions[-RECENT_CONTRADICTIONS:]])


def _label(graph: Graph, node_id: str) -> str:
    node = graph.get(node_id)
    return node.label() if node is not None else node_id


def generate_reflection(graph: Graph, ctx: MemoryContext, *, current_seq: int) -> Node | None:
    """Ask for one insight and store it as a reflection node; None when there is nothing to reflect on.

    Raises RejectedReply (nothing stored) when the upkeep guard rejects the text."""
    inp = build_reflect_input(graph, ctx)
    if inp is None:
        return None
    task = build_reflect_task(inp)
    reply = ctx.chat.complete_json(task)
    insight = reply.insight.strip()
    if not insight:
        return None
    why = guard.review(task, {"insight": insight, "trigger": reply.trigger, "suggestion": reply.suggestion},
                       ["insight"])
    if why is not None:
        raise guard.rejected(task, why)  # nothing is stored
    events = recent_events(graph)
    trigger = reply.trigger.strip() or cell_text(events[-1].fields.get("summary"))
    importance = clamp(DEFAULT_IMPORTANCE if reply.importance is None else reply.importance, 5.0, 10.0)
    now = ctx.now()
    node = add_node(graph, make_node("reflection", {"insight": insight, "trigger": trigger,
                                                    "suggestion": reply.suggestion.strip()},
                                     current_seq, now, importance=importance, new_id=ctx.new_id))
    for event in events[-EVOLVES_TARGETS:]:
        add_edge(graph, node.id, event.id, "evolves", EVOLVES_STRENGTH, now, new_id=ctx.new_id)
    return node
