"""Upkeep cadences (spec §3.1 item 10) on the persisted counter, with failures collected."""
from __future__ import annotations

import itertools
import json

import openai_stub as stub_lib
import pytest

from bme_cli.errors import Interrupted, InvalidReplyError, ProviderError
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_node, make_node
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.upkeep import COMPRESS_PAUSE, COMPRESS_PAUSED_UNTIL, due, run_cadence
from bme_cli.providers.base import Usage
from bme_cli.providers.offline import HashEmbedder, OfflineChatModel
from bme_cli.providers.openai import OpenAIChatModel
from bme_cli.settings import ChatEndpoint, MemorySettings

NOW = 1_700_000_000_000
CADENCE = dict(enable_synopsis=True, synopsis_every_n=2, enable_reflection=True, reflect_every_n=3,
               enable_sleep_cycle=True, sleep_every_n=4)


class FailingFor(OfflineChatModel):
    """The offline model, except that tasks of some kinds fail like a dead endpoint."""

    def __init__(self, *kinds: str):
        super().__init__(Usage())
        self.kinds = kinds

    def complete_json(self, task):
        if task.kind in self.kinds:
            raise ProviderError(f"{task.kind}: connection refused")
        return super().complete_json(task)


def make_ctx(chat=None, embedder=None, **settings) -> MemoryContext:
    counter = itertools.count(1)
    return MemoryContext(chat=chat or OfflineChatModel(), embedder=embedder,
                         settings=MemorySettings(**settings), now=lambda: NOW,
                         new_id=lambda: f"id{next(counter)}")


def add_event(g: Graph, ctx: MemoryContext, i: int, who: str = "Mira") -> str:
    fields = {"summary": f"At {i}, {who} found clue {i} about the stolen crown because Kael lied.",
              "participants": f"{who}, Kael", "status": "ongoing"}
    return add_node(g, make_node("event", fields, i, NOW, importance=5, new_id=ctx.new_id)).id


@pytest.mark.parametrize("count, every, expected", [(0, 5, False), (5, 5, True), (6, 5, False),
                                                    (10, 5, True), (3, 1, True)])
def test_due_on_multiples_of_the_period_only(count, every, expected):
    assert due(count, every) is expected


def test_steps_run_by_the_persisted_extraction_counter():
    g, ctx = Graph(), make_ctx(enable_evolution=False, **CADENCE)
    ran = {}
    for count in range(1, 13):
        g.meta.extraction_count = count
        ran[count] = run_cadence(g, ctx, current_seq=count, new_node_ids=[]).ran
    assert [c for c in ran if "synopsis" in ran[c]] == [2, 4, 6, 8, 10, 12]
    assert [c for c in ran if "reflect" in ran[c]] == [3, 6, 9, 12]
    assert [c for c in ran if "sleep" in ran[c]] == [4, 8, 12]
    assert all(r[-1] == "compress" for r in ran.values())
    assert ran[12] == ["synopsis", "reflect", "sleep", "compress"]


def test_disabled_steps_never_run_and_evolution_needs_new_ids():
    g, ctx = Graph(), make_ctx(enable_synopsis=False, enable_reflection=False, enable_sleep_cycle=False)
    g.meta.extraction_count = 60
    assert run_cadence(g, ctx, current_seq=1, new_node_ids=[]).ran == ["compress"]
    assert run_cadence(g, ctx, current_seq=1, new_node_ids=["x"]).ran == ["evolve", "compress"]


def test_a_failing_step_is_collected_and_the_rest_still_runs():
    g, ctx = Graph(), make_ctx(FailingFor("synopsis"), **CADENCE)
    for i in range(12):
        add_event(g, ctx, i)
    g.meta.extraction_count = 12
    report = run_cadence(g, ctx, current_seq=12, new_node_ids=[])
    assert [f.step for f in report.failures] == ["synopsis"]
    assert "connection refused" in str(report.failures[0])
    assert report.reflection is not None and report.compress.created and report.changed


def test_nothing_due_and_nothing_to_compress_reports_no_change():
    g, ctx = Graph(), make_ctx(**CADENCE)
    add_event(g, ctx, 1)
    g.meta.extraction_count = 1
    report = run_cadence(g, ctx, current_seq=1, new_node_ids=[])
    assert not report.changed and report.failures == []


def test_new_synopsis_and_reflection_are_embedded_at_the_end():
    g, ctx = Graph(), make_ctx(embedder=HashEmbedder(32), enable_evolution=False, **CADENCE)
    for i in range(5):
        add_event(g, ctx, i)
    g.meta.extraction_count = 6
    report = run_cadence(g, ctx, current_seq=6, new_node_ids=[])
    assert report.synopsis.embedding is not None and report.reflection.embedding is not None
    assert report.embedded == 7 and report.ran[-1] == "embed"


def test_a_long_offline_chat_keeps_its_core_bounded():
    g, ctx = Graph(), make_ctx(embedder=HashEmbedder(32), **CADENCE)
    sizes = []
    for i in range(1, 241):
        new = [add_event(g, ctx, i, who=("Mira", "Oren", "Lise")[i % 3])]
        g.meta.extraction_count += 1
        report = run_cadence(g, ctx, current_seq=i, new_node_ids=new)
        assert report.failures == []
        sizes.append(len(g.active_nodes("event")))
    assert max(sizes[-120:]) <= 30                   # 240 events, at most ~30 active at any time
    assert max(n.level for n in g.active_nodes("event")) >= 2
    assert len(g.active_nodes("synopsis")) == 1


def test_compression_against_an_openai_compatible_server_skips_a_bad_reply(openai_stub):
    good = {"fields": {"summary": "Mira pieced the clues together.", "participants": "Mira", "status": "ongoing"}}
    openai_stub.enqueue(stub_lib.malformed(), stub_lib.malformed(),
                        stub_lib.reply_json(good))
    chat = OpenAIChatModel(ChatEndpoint(base_url=openai_stub.base_url, max_retries=0, json_mode="plain"),
                           sleep=lambda s: None, json_modes={})
    g, ctx = Graph(), make_ctx(chat, enable_evolution=False, enable_synopsis=False)
    ids = [add_event(g, ctx, i) for i in range(12)]
    report = run_cadence(g, ctx, current_seq=12, new_node_ids=[])
    assert report.failures == [] and report.compress.skipped == 1
    parent = g.get(report.compress.created[0])
    assert parent.fields["summary"] == "Mira pieced the clues together."
    assert parent.child_ids == ids[3:6] and not any(g.get(i).archived for i in ids[:3])



def test_report_is_plain_json_data():
    g, ctx = Graph(), make_ctx(FailingFor("reflect"), **CADENCE)
    for i in range(12):
        add_event(g, ctx, i)
    g.meta.extraction_count = 12
    data = json.loads(json.dumps(run_cadence(g, ctx, current_seq=300, new_node_ids=[]).as_dict()))
    assert data["failures"] == [{"step": "reflect", "error": "reflect: connection refused"}]
    assert data["sleep"]["archived"] == len(data["sleep"]["items"]) > 0
    assert data["compress"]["chunks"] == [] and data["changed"] is True


def test_an_interrupt_is_not_swallowed_as_a_step_failure():
    class Stop(OfflineChatModel):
        def complete_json(self, task):
            raise Interrupted("interrupted by the user")
    g, ctx = Graph(), make_ctx(Stop(), **CADENCE)
    for i in range(12):
        add_event(g, ctx, i)
    with pytest.raises(Interrupted):
        run_cadence(g, ctx, current_seq=12, new_node_ids=[])


class UnusableFor(OfflineChatModel):
    """The offline model, except that tasks of some kinds never get a usable reply."""

    def __init__(self, *kinds: str):
        super().__init__(Usage())
        self.kinds, self.calls = kinds, 0

    def complete_json(self, task):
        if task.kind in self.kinds:
            self.calls += 1
            raise InvalidReplyError(f"{task.kind}: no usable reply")
        return super().complete_json(task)


def test_compression_pauses_for_a_few_extractions_after_a_model_that_cannot_do_it():
    model = UnusableFor("compress")
    g, ctx = Graph(), make_ctx(model)
    for i in range(12):
        add_event(g, ctx, i)
    calls = []
    for count in range(1, 12):
        g.meta.extraction_count = count
        before = model.calls
        run_cadence(g, ctx, current_seq=count, new_node_ids=[])
        calls.append(model.calls - before)
    assert calls[0] > 0                                  # tried, failed: paused ...
    assert calls[1:COMPRESS_PAUSE] == [0] * (COMPRESS_PAUSE - 1)
    assert calls[COMPRESS_PAUSE] > 0                     # ... and tried again after the pause
    assert g.meta.extra[COMPRESS_PAUSED_UNTIL] > g.meta.extraction_count - COMPRESS_PAUSE


def test_a_successful_compression_clears_the_pause():
    g, ctx = Graph(), make_ctx()
    for i in range(12):
        add_event(g, ctx, i)
    g.meta.extra[COMPRESS_PAUSED_UNTIL] = 3
    g.meta.extraction_count = 3
    report = run_cadence(g, ctx, current_seq=3, new_node_ids=[])
    assert report.compress.created and COMPRESS_PAUSED_UNTIL not in g.meta.extra
