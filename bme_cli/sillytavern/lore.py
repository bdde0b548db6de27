"""The user's lorebooks and cards, read once per `bme ingest` and seeded into each chat's graph."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..chat import Chat
from ..graph.model import Graph
from ..memory.context import MemoryContext
from ..errors import ProviderError
from ..memory.embed import embed_missing
from ..memory.seed import SeedReport, seed_graph
from ..memory.witness import members
from .card import Card, read_card
from .seeds import plan_seeds
from .worldinfo import LoreEntry, read_lorebook


@dataclass
class Lore:
    """Everything read from the lorebook and card files (validated: bad files never get this far)."""

    entries: list[LoreEntry] = field(default_factory=list)
    cards: list[Card] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.entries or self.cards)


def read_lore(lorebooks: list[Path], cards: list[Path]) -> Lore:
    """Read every file first, so a bad one stops the command before any chat is touched."""
    lore = Lore()
    for path in dict.fromkeys(lorebooks):
        lore.entries.extend(read_lorebook(path))
    lore.cards.extend(read_card(path) for path in dict.fromkeys(cards))
    return lore


def seed_chat(graph: Graph, lore: Lore, ctx: MemoryContext, chat: Chat) -> tuple[SeedReport, int]:
    """Seed one chat's graph from the lore (and a group chat's members, every one a character)
    and embed what was created; (report, entries left out)."""
    plan = plan_seeds(lore.entries, lore.cards, user=chat.user_name,
                      members=members(chat) if chat.is_group else [])
    report = seed_graph(graph, plan.seeds, ctx.schema, ctx.now(), ctx.new_id)
    if report.changed:
        try:
            embed_missing(graph, ctx.schema, ctx.embedder)
        except ProviderError:
            pass  # the seeds stay without vectors: the batches and ingest's last pass embed them
    return report, plan.skipped


def seed_summary(chat: Path, report: SeedReport, skipped: int) -> str:
    """One line for the ingest log: what the lorebooks and cards added to this chat's graph."""
    left = f"; {skipped} entries neither a character, a place nor a constant rule were left out" if skipped else ""
    return f"{chat}: seeded {report.created} new nodes, filled {report.filled}{left}"
