"""Ingest's saver: writes skipped while the work since the last write is short next to it."""
from __future__ import annotations

from bme_cli.graph.model import Graph
from bme_cli.ingest_runner import CoalescedSave


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_saves_are_coalesced_until_the_work_outweighs_the_write_and_flush_writes_the_last():
    clock, written = Clock(), []
    graphs = [Graph() for _ in range(6)]

    def write(graph: Graph) -> None:
        written.append(graph)
        clock.now += 1.0          # every write takes one second

    save = CoalescedSave(write, share=0.2, clock=clock)   # work >= 4x the last write
    save(graphs[0])               # nothing written yet: the first request writes
    assert written == [graphs[0]]
    for g in graphs[1:4]:         # a second of work each: 3 s < 4 s, no write
        clock.now += 1.0
        save(g)
    assert written == [graphs[0]]
    clock.now += 1.0
    save(graphs[4])               # 4 s of work since the write: written
    assert written == [graphs[0], graphs[4]]
    save(graphs[5])
    save.flush()                  # the end of the run writes what was asked last
    save.flush()                  # and only once
    assert written == [graphs[0], graphs[4], graphs[5]]


def test_a_slow_batch_is_written_every_time():
    clock, written = Clock(), []
    save = CoalescedSave(lambda g: written.append(g), share=0.2, clock=clock)  # instant writes
    for _ in range(3):
        clock.now += 2.0          # a model call per batch
        save(Graph())
    assert len(written) == 3


def test_quick_cheap_batches_are_written_at_most_once_a_gap():
    clock, written = Clock(), []
    save = CoalescedSave(lambda g: written.append(g), share=0.2, clock=clock, gap=1.0)  # instant writes
    for _ in range(10):
        clock.now += 0.25         # four offline batches a second
        save(Graph())
    assert len(written) == 1 + 2  # the first request, then one a second (at 1.25 s and 2.25 s)
    save.flush()
    assert len(written) == 4
