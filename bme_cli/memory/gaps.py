"""Failed batches: extraction batches the model could not answer, recorded so no batch blocks a chat.

`lastProcessedSeq` keeps ST-BME's meaning of a watermark, widened by one clause: every
assistant turn up to it was *either* extracted *or* belongs to a batch recorded here as
failed. So ingest moves past a batch the model cannot answer (the later batches run, and the
next run does not retry it forever), while its messages are never silently skipped: they are
listed in the sidecar's `bme.failedBatches` (ST-BME's fields carry nothing of it, so an
export stays a valid ST-BME graph), counted as pending by `bme stats`, reported as gaps by
recall, and tried again by `bme ingest --retry-failed` with the same context window.

A failed batch that the offline extractor filled instead (`--on-fail heuristic`) moves to
`bme.filledBatches`: not a gap any more, but the memories came from the heuristic, not the
model, and the record says so.

Record (camelCase, like the rest of the sidecar):
`{"startSeq", "endSeq", "contextStart", "reason", "at" (epoch ms), "attempts"}`, plus
`"by": "heuristic"` on a filled record.
"""
from __future__ import annotations

from dataclasses import dataclass
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from ..graph.model import Graph
if TYPE_CHECKING:  # recall reads gaps without the trigger module
    from .trigger import Batch, ChatLike

FAILED_KEY = "failedBatches"
FILLED_KEY = "filledBatches"
REASON_CHARS = 300


@dataclass(frozen=True)
class FailedBatch:
    """One batch the model could not answer (or, with `by`, that the heuristic filled)."""

    start_seq: int
    end_seq: int
    context_start: int
    reason: str
    at: int
    attempts: int = 1
    by: str | None = None      # "heuristic" on a filled record

    @property
    def span(self) -> str:
        """'#4-#6', the way every message range is shown."""
        return f"#{self.start_seq}-#{self.end_seq}"

    def to_json(self) -> dict[str, Any]:
        """The sidecar form."""
        out: dict[str, Any] = {"startSeq": self.start_seq, "endSeq": self.end_seq,
                               "contextStart": self.context_start, "reason": self.reason,
                               "at": self.at, "attempts": self.attempts}
        if self.by is not None:
            out["by"] = self.by
        return out

    @classmethod
    def from_json(cls, data: Any) -> "FailedBatch | None":
        """A record read back; None for an entry that is not one (hand-edited sidecars)."""
        if not isinstance(data, dict):
            return None
        ints = [data.get(k) for k in ("startSeq", "endSeq")]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ints) or ints[0] > ints[1]:
            return None
        ctx = data.get("contextStart")
        return cls(ints[0], ints[1], ctx if isinstance(ctx, int) and ctx <= ints[0] else ints[0],
                   str(data.get("reason") or ""), int(data.get("at") or 0),
                   max(1, int(data.get("attempts") or 1)), data.get("by") if isinstance(data.get("by"), str) else None)


def _read(graph: Graph, key: str) -> list[FailedBatch]:
    raw = graph.meta.extra.get(key)
    records = [FailedBatch.from_json(r) for r in raw] if isinstance(raw, list) else []
    return sorted((r for r in records if r is not None), key=lambda r: r.start_seq)


def _write(graph: Graph, key: str, records: Iterable[FailedBatch]) -> None:
    records = sorted(records, key=lambda r: r.start_seq)
    if records:
        graph.meta.extra[key] = [r.to_json() for r in records]
    else:
        graph.meta.extra.pop(key, None)


def failed_batches(graph: Graph) -> list[FailedBatch]:
    """The batches still waiting for a model that can answer them, in chat order."""
    return _read(graph, FAILED_KEY)


def filled_batches(graph: Graph) -> list[FailedBatch]:
    """The failed batches the offline extractor filled instead, in chat order."""
    return _read(graph, FILLED_KEY)


def gaps(graph: Graph) -> list[tuple[int, int]]:
    """(first, last) message of every failed batch: what the graph knows nothing about."""
    return [(r.start_seq, r.end_seq) for r in failed_batches(graph)]


def _same(r: FailedBatch, batch: Batch) -> bool:
    return (r.start_seq, r.end_seq) == (batch.start_seq, batch.end_seq)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 1] + "…"


def record_failure(graph: Graph, batch: Batch, reason: str, at: int) -> FailedBatch:
    """Record (or, when retried, update) a failed batch; lastProcessedSeq may now pass it."""
    others = [r for r in failed_batches(graph) if not _same(r, batch)]
    earlier = next((r for r in failed_batches(graph) if _same(r, batch)), None)
    record = FailedBatch(batch.start_seq, batch.end_seq,
                         earlier.context_start if earlier else batch.context_start, _clip(reason), at,
                         earlier.attempts + 1 if earlier else 1)
    _write(graph, FAILED_KEY, [*others, record])
    return record


def resolve(graph: Graph, batch: Batch) -> None:
    """The batch was extracted after all: drop its failure record."""
    _write(graph, FAILED_KEY, [r for r in failed_batches(graph) if not _same(r, batch)])


def record_filled(graph: Graph, batch: Batch, reason: str, at: int, by: str) -> FailedBatch:
    """The model failed the batch and `by` (the offline extractor) filled it: move the record."""
    earlier = next((r for r in failed_batches(graph) if _same(r, batch)), None)
    record = FailedBatch(batch.start_seq, batch.end_seq, earlier.context_start if earlier else batch.context_start,
                         _clip(reason), at, earlier.attempts + 1 if earlier else 1, by)
    resolve(graph, batch)
    _write(graph, FILLED_KEY, [*(r for r in filled_batches(graph) if not _same(r, batch)), record])
    return record


def drop_from(graph: Graph, seq: int) -> int:
    """For a rebuild from seq: forget the records reaching seq; returns the first seq to rebuild from.

    A failed batch reaching seq is re-planned whole, so the rebuild starts at its first message.
    """
    failed, filled = failed_batches(graph), filled_batches(graph)
    start = min([seq] + [r.start_seq for r in failed + filled if r.end_seq >= seq])
    _write(graph, FAILED_KEY, [r for r in failed if r.end_seq < start])
    _write(graph, FILLED_KEY, [r for r in filled if r.end_seq < start])
    return start


def in_gap(graph: Graph, seq: int) -> bool:
    """Whether message seq lies in a failed batch's range."""
    return any(r.start_seq <= seq <= r.end_seq for r in failed_batches(graph))


def retry_batches(messages: Iterable[Any], records: list[FailedBatch],
                  assistant_turns: Sequence[int]) -> Iterator[Batch]:
    """Each failed batch as it first ran (the same turns, the same context window), in record
    order, over messages in seq order read once; a record with no assistant turn left is skipped."""
    from .trigger import Batch
    turns = sorted(assistant_turns)
    wanted = [(r, turns[bisect_left(turns, r.start_seq):bisect_right(turns, r.end_seq)]) for r in records]
    wanted = [(r, ts) for r, ts in wanted if ts]
    contexts: list[list[Any]] = [[] for _ in wanted]
    by_start = sorted(range(len(wanted)), key=lambda i: wanted[i][0].context_start)
    def batch(i: int) -> Batch:
        return Batch(wanted[i][0].start_seq, wanted[i][0].end_seq, wanted[i][1], contexts[i])
    opened, active, done = 0, [], 0  # done: records yielded, each once its last message is read
    for m in messages:
        while done < len(wanted) and m.seq > wanted[done][0].end_seq:
            yield batch(done)
            contexts[done], done = [], done + 1
        if done == len(wanted):
            return
        while opened < len(by_start) and wanted[by_start[opened]][0].context_start <= m.seq:
            active.append(by_start[opened])
            opened += 1
        active = [i for i in active if m.seq <= wanted[i][0].end_seq]  # few: windows rarely overlap
        if not m.is_system:
            for i in active:
                contexts[i].append(m)
    yield from map(batch, range(done, len(wanted)))


def pending_failed_turns(chat: ChatLike, graph: Graph) -> int:
    """Assistant turns inside failed batches: still pending although lastProcessedSeq passed them."""
    ranges = gaps(graph)
    return sum(1 for t in chat.assistant_turns if any(a <= t <= b for a, b in ranges))
