"""Token estimates of many extraction prompts while the graph stays as it is (`ingest --dry-run`).

Building each batch's whole prompt (graph overview, schema, reply schema) to estimate it made a
dry run of a 200 MB chat take many minutes. Here the parts that do not change between batches
are measured once, and each message's dialogue line once: `token_units` is additive over
concatenation, so the sum is exactly `estimate_tokens` of the prompt `extract_task` builds.
"""
from __future__ import annotations

import math

from ..graph.model import Graph
from ..prompts.extract import render_dialogue
from ..text import estimate_tokens, token_units
from .context import MemoryContext
from .extract import dialogue_message, extract_task
from .trigger import Batch

_SEPARATOR = token_units("\n\n")  # between dialogue lines (render_dialogue)


class PromptSizer:
    """estimate_tokens(system) + estimate_tokens(user) of each batch's extraction prompt."""

    def __init__(self, graph: Graph, ctx: MemoryContext, **names: str | None):
        self.language = ctx.language
        empty = extract_task(graph, Batch(0, 0, [0], []), ctx, **names)  # "#0 to #0", no dialogue
        self.system = estimate_tokens(empty.system)
        self.fixed = token_units(empty.user) - 2 * len("0")
        self._lines: dict[int, int] = {}  # seq -> units of its dialogue line, for the batches ahead

    def tokens(self, batch: Batch) -> int:
        """The estimate of `batch`'s prompt, as if extract_task built it on this graph."""
        for seq in [s for s in self._lines if s < batch.context_start]:
            del self._lines[seq]  # batches come in seq order: earlier lines are not shown again
        lines = batch.context
        units = sum(self._line(m) for m in lines) + _SEPARATOR * max(0, len(lines) - 1)
        units += self.fixed + len(str(batch.start_seq)) + len(str(batch.end_seq))
        return self.system + math.ceil(units / 4)

    def _line(self, message) -> int:  # noqa: ANN001 - a MessageLike
        """Units of the message's dialogue line (its `new` mark is not rendered, so one per seq)."""
        units = self._lines.get(message.seq)
        if units is None:
            line = dialogue_message(message, self.language)
            units = self._lines[message.seq] = token_units(render_dialogue([line]))
        return units
