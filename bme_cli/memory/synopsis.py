"""The global synopsis (spec §6.3), with bounded input (spec §10.23).

ST-BME sends every active event each time, so the prompt grows with the chat. bme sends
at most `MAX_EVENT_LINES` events: up to `MAX_COMPRESSED_LINES` compressed ones (highest
level first, then most recent), the rest the most recent events, all in story order;
plus the previous synopsis (which carries what was left out), the most recent characters'
states and threads, each line clipped.
"""
from __future__ import annotations

from ..graph.model import Graph, Node
from ..graph.ops import add_node, make_node
from ..prompts.common import cell_text
from ..prompts.synopsis import (CharacterState, SynopsisEvent, SynopsisInput, ThreadState,
                                build_synopsis_task)
from . import guard
from .context import MemoryContext
from .edits import is_protected

MIN_EVENTS = 3
MAX_EVENT_LINES = 40
MAX_COMPRESSED_LINES = 20
MAX_CHARACTERS = 12
MAX_THREADS = 8
LINE_CHARS = 300
PREVIOUS_CHARS = 1500
SYNOPSIS_IMPORTANCE = 9.0


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def select_events(graph: Graph, limit: int = MAX_EVENT_LINES,
                  compressed_limit: int = MAX_COMPRESSED_LINES) -> list[Node]:
    """The events a synopsis reads: compressed ones (highest level, latest first), then the latest."""
    events = sorted(graph.active_nodes("event"), key=lambda n: n.seq)
    if len(events) <= limit:
        return events
    compressed = sorted((n for n in events if n.level > 0), key=lambda n: (-n.level, -n.seq))
    chosen = {n.id for n in compressed[:compressed_limit]}
    for n in reversed(events):
        if len(chosen) >= limit:
            break
        chosen.add(n.id)
    return [n for n in events if n.id in chosen]


def _latest(graph: Graph, type_id: str, limit: int) -> list[Node]:
    return sorted(graph.active_nodes(type_id), key=lambda n: n.seq_end)[-limit:]


def current_synopsis(graph: Graph) -> Node | None:
    """The first active synopsis node, as ST-BME picks it."""
    return next(iter(graph.active_nodes("synopsis")), None)


def build_synopsis_input(graph: Graph, ctx: MemoryContext, current_seq: int) -> SynopsisInput | None:
    """The bounded synopsis input, or None when there are fewer than 3 active events."""
    if "synopsis" not in ctx.schema:
        return None         # a custom schema without a synopsis type: nothing to write into
    active_events = graph.active_nodes("event")
    if len(active_events) < MIN_EVENTS:
        return None
    events = select_events(graph)
    previous = current_synopsis(graph)
    return SynopsisInput(
        language=ctx.language, current_seq=current_seq,
        events=[SynopsisEvent(seq=n.seq, level=n.level, importance=n.importance,
                              summary=_clip(cell_text(n.fields.get("summary")) or n.label(), LINE_CHARS))
                for n in events],
        characters=[CharacterState(name=_clip(n.label(), 80),
                                   state=_clip(cell_text(n.fields.get("state")), LINE_CHARS))
                    for n in _latest(graph, "character", MAX_CHARACTERS)],
        threads=[ThreadState(title=_clip(n.label(), 120),
                             status=_clip(cell_text(n.fields.get("status")) or "active", 60))
                 for n in _latest(graph, "thread", MAX_THREADS)],
        previous=_clip(cell_text(previous.fields.get("summary")), PREVIOUS_CHARS) if previous else "",
        omitted_events=len(active_events) - len(events))


def _scope(language: str, start: int, end: int) -> str:
    return f"楼 {start} ~ {end}" if language == "zh" else f"messages {start} ~ {end}"


def _first_seq(graph: Graph) -> int:
    starts = [n.seq_range[0] if n.seq_range else n.seq for n in graph.nodes_of_type("event")]
    return min(starts) if starts else 0


def generate_synopsis(graph: Graph, ctx: MemoryContext, *, current_seq: int) -> Node | None:
    """Write or rewrite the synopsis node; None when there is too little to summarise.

    Raises RejectedReply (the old synopsis kept) when the upkeep guard rejects the text."""
    current = current_synopsis(graph)
    if current is not None and is_protected(current):
        return None  # the user wrote or pinned this synopsis: it is not rewritten
    inp = build_synopsis_input(graph, ctx, current_seq)
    if inp is None:
        return None
    task = build_synopsis_task(inp)
    reply = ctx.chat.complete_json(task)
    summary = reply.summary.strip()
    if not summary:
        return None
    why = guard.review(task, {"summary": summary}, ["summary"])
    if why is not None:
        raise guard.rejected(task, why)  # the old synopsis stays
    start = _first_seq(graph)
    fields = {"summary": summary, "scope": _scope(ctx.language, start, current_seq)}
    node = current_synopsis(graph)
    if node is not None:
        node.fields.update(fields)
        node.seq = max(node.seq, current_seq)
        node.seq_range = [min(node.seq_range[0], start), max(node.seq_end, current_seq)]
        node.embedding = None
        return node
    node = make_node("synopsis", fields, current_seq, ctx.now(), importance=SYNOPSIS_IMPORTANCE,
                     seq_range=[start, current_seq], new_id=ctx.new_id)
    return add_node(graph, node)
