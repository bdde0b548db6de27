"""Upkeep on its cadences after an extraction batch (spec §3.1 item 10, fixed per §10.17).

The cadence counter is the graph's persisted `meta.extraction_count` (the caller increments
it after a successful extraction, before calling `run_cadence`), so cadences neither reset
between runs nor leak across chats. Order: evolution (if enabled and there are new nodes),
synopsis every `synopsis_every_n`, reflection every `reflect_every_n`, sleep every
`sleep_every_n` (story-time age by default), then compression, then embedding of any
node left without a vector (new synopsis or reflection, evolved neighbours).

Each step runs in its own `try/except BmeError`: a failure is recorded in the report and
the next step still runs; nothing is raised, so the caller, which saved the extracted
memories before upkeep, saves again afterwards and loses nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import BmeError, Interrupted
from ..graph.model import Graph, Node
from .compress import CompressReport, compress_all
from .context import MemoryContext
from .embed import embed_missing
from .evolve import EvolveReport, evolve
from .guard import RejectedReply
from .reflect import generate_reflection
from .sleep import SleepReport, sleep_cycle
from .synopsis import generate_synopsis


@dataclass
class StepFailure:
    """One upkeep step that failed: its name and the error (with its hint)."""

    step: str
    error: BmeError

    def __str__(self) -> str:
        return f"{self.step}: {self.error}"


@dataclass
class UpkeepReport:
    """Which steps ran, what each produced, and which failed."""

    extraction_count: int = 0
    ran: list[str] = field(default_factory=list)
    failures: list[StepFailure] = field(default_factory=list)
    evolve: EvolveReport | None = None
    synopsis: Node | None = None
    reflection: Node | None = None
    sleep: SleepReport | None = None
    compress: CompressReport | None = None
    embedded: int = 0

    @property
    def changed(self) -> bool:
        """Whether any step modified the graph."""
        return bool((self.evolve and self.evolve.changed) or self.synopsis or self.reflection
                    or (self.sleep and self.sleep.changed) or (self.compress and self.compress.changed)
                    or self.embedded)

    @property
    def rejected_replies(self) -> int:
        """Model replies the upkeep guard rejected in every step (the old nodes were kept)."""
        return (sum(isinstance(f.error, RejectedReply) for f in self.failures)
                + (self.compress.rejected if self.compress else 0)
                + (self.evolve.rejected_replies if self.evolve else 0))

    def as_dict(self) -> dict[str, Any]:
        """Plain data for `--format json`."""
        return {"extraction_count": self.extraction_count, "ran": list(self.ran), "changed": self.changed,
                "rejected_replies": self.rejected_replies,
                "failures": [{"step": f.step, "error": str(f.error)} for f in self.failures],
                "evolve": self.evolve.as_dict() if self.evolve else None,
                "synopsis": self.synopsis.id if self.synopsis else None,
                "reflection": self.reflection.id if self.reflection else None,
                "sleep": self.sleep.as_dict() if self.sleep else None,
                "compress": self.compress.as_dict() if self.compress else None,
                "embedded": self.embedded}


# Key in graph.meta.extra: the extraction count before which cadence compression is paused.
COMPRESS_PAUSED_UNTIL = "compressPausedUntil"
# After a compression chunk the model could not answer (or answered with junk the guard
# rejected), wait this many extractions: a model
# that cannot do the task would otherwise pay full retries after every single batch.
COMPRESS_PAUSE = 5


def _pause_compression_after_failures(graph: Graph, result: Any, count: int) -> None:
    if result is not None and (getattr(result, "skipped", 0) or getattr(result, "rejected", 0)):
        graph.meta.extra[COMPRESS_PAUSED_UNTIL] = count + COMPRESS_PAUSE
    else:
        graph.meta.extra.pop(COMPRESS_PAUSED_UNTIL, None)


def due(count: int, every: int) -> bool:
    """Whether a step with period `every` runs at extraction number `count` (1, 2, ...)."""
    return count > 0 and every > 0 and count % every == 0


def _run(report: UpkeepReport, step: str, fn: Callable[[], Any]) -> Any:
    report.ran.append(step)
    try:
        return fn()
    except Interrupted:
        raise               # the user asked to stop: not a step failure
    except BmeError as e:
        report.failures.append(StepFailure(step, e))
        return None


def run_cadence(graph: Graph, ctx: MemoryContext, *, current_seq: int,
                new_node_ids: list[str]) -> UpkeepReport:
    """Run the upkeep steps due at `graph.meta.extraction_count`; failures are collected, never raised."""
    s = ctx.settings
    count = graph.meta.extraction_count
    report = UpkeepReport(extraction_count=count)
    if s.enable_evolution and new_node_ids:
        report.evolve = _run(report, "evolve", lambda: evolve(graph, ctx, new_node_ids))
    if s.enable_synopsis and due(count, s.synopsis_every_n):
        report.synopsis = _run(report, "synopsis", lambda: generate_synopsis(graph, ctx, current_seq=current_seq))
    if s.enable_reflection and due(count, s.reflect_every_n):
        report.reflection = _run(report, "reflect", lambda: generate_reflection(graph, ctx, current_seq=current_seq))
    if s.enable_sleep_cycle and due(count, s.sleep_every_n):
        report.sleep = _run(report, "sleep", lambda: sleep_cycle(graph, ctx, current_seq=current_seq))
    if count >= int(graph.meta.extra.get(COMPRESS_PAUSED_UNTIL, 0)):
        report.compress = _run(report, "compress", lambda: compress_all(graph, ctx))
        _pause_compression_after_failures(graph, report.compress, count)
    if ctx.embedder is not None:
        report.embedded = _run(report, "embed", lambda: embed_missing(graph, ctx.schema, ctx.embedder)) or 0
    return report
