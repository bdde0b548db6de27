"""A graph's state at a glance (spec §1.7, extended): what `bme stats` shows."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..chat import Chat
from ..graph.model import Graph
from ..graph.schema import Schema
from ..text import estimate_tokens
from . import gaps
from .inject import format_block
from .trigger import first_turn


@dataclass
class GraphStats:
    """Counts for one chat and its graph; `as_dict()` is the `--format json` shape."""

    chat: str
    graph_path: str
    graph_exists: bool
    messages: int
    hidden_messages: int
    assistant_turns: int
    last_processed_seq: int
    pending_turns: int
    total_nodes: int
    active_nodes: int
    archived_nodes: int
    active_by_type: dict[str, int] = field(default_factory=dict)
    archived_by_type: dict[str, int] = field(default_factory=dict)
    edges_valid: dict[str, int] = field(default_factory=dict)
    edges_invalidated: dict[str, int] = field(default_factory=dict)
    embedded_nodes: int = 0
    embedding_model: str | None = None
    embedding_dim: int | None = None
    core_tokens: int = 0
    extraction_count: int = 0
    chat_bytes: int = 0
    graph_bytes: int = 0
    levels: dict[str, dict[int, int]] = field(default_factory=dict)
    # batches the model could not answer (still pending) and those the offline extractor filled
    failed_batches: list[dict[str, Any]] = field(default_factory=list)
    filled_batches: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["levels"] = {t: {str(k): v for k, v in lv.items()} for t, lv in self.levels.items()}
        return out


def pending_turns(chat: Chat, graph: Graph, include_greeting: bool) -> int:
    """Assistant turns not extracted yet: after lastProcessedSeq, or inside a failed batch."""
    first = first_turn(chat.assistant_turns, include_greeting)
    after = sum(1 for s in chat.assistant_turns if s > graph.last_processed_seq and s >= first)
    return after + gaps.pending_failed_turns(chat, graph)


def core_block_tokens(graph: Graph, schema: Schema, language: str) -> int:
    """Token estimate (§5.4) of the unbudgeted Core block: what ST-BME would inject every turn."""
    core = [n for n in graph.nodes if not n.archived and schema.always_inject(n.type)]
    return estimate_tokens(format_block(core, [], schema, language)) if core else 0


def collect_stats(chat: Chat, graph: Graph, schema: Schema, *, graph_path: str, graph_exists: bool,
                  language: str, include_greeting: bool) -> GraphStats:
    """Every number `bme stats` reports for one chat (file sizes are filled in by the caller)."""
    active = Counter(n.type for n in graph.nodes if not n.archived)
    archived = Counter(n.type for n in graph.nodes if n.archived)
    valid = Counter(e.relation for e in graph.edges if e.is_active())
    invalid = Counter(e.relation for e in graph.edges if not e.is_active())
    levels: dict[str, Counter] = {}
    for n in graph.nodes:
        if not n.archived:
            levels.setdefault(n.type, Counter())[n.level] += 1
    return GraphStats(
        chat=str(chat.path), graph_path=graph_path, graph_exists=graph_exists,
        messages=len(chat.messages), hidden_messages=sum(m.is_system for m in chat.messages),
        assistant_turns=len(chat.assistant_turns), last_processed_seq=graph.last_processed_seq,
        pending_turns=pending_turns(chat, graph, include_greeting),
        total_nodes=len(graph.nodes), active_nodes=sum(active.values()),
        archived_nodes=sum(archived.values()),
        active_by_type=_ordered(active, schema), archived_by_type=_ordered(archived, schema),
        edges_valid=dict(sorted(valid.items())), edges_invalidated=dict(sorted(invalid.items())),
        embedded_nodes=sum(n.embedding is not None for n in graph.nodes if not n.archived),
        embedding_model=graph.meta.embedding_model, embedding_dim=graph.meta.embedding_dim,
        core_tokens=core_block_tokens(graph, schema, language),
        extraction_count=graph.meta.extraction_count,
        levels={t: dict(sorted(c.items())) for t, c in levels.items() if max(c) > 0},
        failed_batches=[r.to_json() for r in gaps.failed_batches(graph)],
        filled_batches=[r.to_json() for r in gaps.filled_batches(graph)],
    )


def _ordered(counts: Counter, schema: Schema) -> dict[str, int]:
    """Counts in schema order (every schema type, zeros included), then unknown types."""
    out = {t["id"]: counts.get(t["id"], 0) for t in schema.types}
    out.update({k: v for k, v in sorted(counts.items()) if k not in out})
    return out
