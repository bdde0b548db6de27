"""Issue 17 (10): `ingest --dry-run` streams a chat in two passes and plans it holding about
one batch; its plan and estimates are exactly those of the chat read whole."""
from __future__ import annotations

import bisect
import json
import os
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

import pytest

from bme_cli import render
from bme_cli.chat import read_chat
from bme_cli.chat_stream import open_streamed
from bme_cli.errors import BadInputError
from bme_cli.graph.model import Graph
from bme_cli.memory.ingest import dry_run_plan, dry_run_stream
from bme_cli.memory import gaps
from bme_cli.memory.trigger import Batch, plan_stream, smart_trigger
from bme_cli.settings import MemorySettings
from bme_cli.story import StoryOptions
from cli_support import SAMPLES, cli_env, ok  # noqa: F401

ROOT = Path(__file__).resolve().parent
CHATS = sorted([*SAMPLES.glob("*.jsonl"), *(ROOT / "data").rglob("*.jsonl")])
SETTINGS = {"default": MemorySettings(),
            "smart trigger": MemorySettings(extract_every=4, enable_smart_trigger=True, extract_context_turns=5),
            "every 3, greeting": MemorySettings(extract_every=3, include_greeting=True, extract_context_turns=0)}


def _graph(state: str) -> Graph:
    """An empty graph, or one half-way through with failed batches recorded (overlapping windows, one
    hand-edited record holding another)."""
    graph = Graph()
    if state == "half, with failed batches":
        graph.last_processed_seq = 12
        graph.meta.extra["failedBatches"] = [
            {"startSeq": 3, "endSeq": 6, "contextStart": 0, "reason": "x", "at": 1},
            {"startSeq": 7, "endSeq": 10, "contextStart": 4, "reason": "y", "at": 1},
            {"startSeq": 11, "endSeq": 11, "contextStart": 11, "reason": "z", "at": 1},
            {"startSeq": 14, "endSeq": 21, "contextStart": 12, "reason": "hand-edited: nests the next", "at": 1},
            {"startSeq": 15, "endSeq": 17, "contextStart": 15, "reason": "w", "at": 1}]
    return graph


def _rows(plan: list[tuple[Batch, int]]) -> list[tuple]:
    return [(b.start_seq, b.end_seq, b.turns, [m.seq for m in b.context], [m.text for m in b.context],
             b.triggered, tokens) for b, tokens in plan]


@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
@pytest.mark.parametrize("state", ["empty", "half, with failed batches"])
@pytest.mark.parametrize("path", CHATS, ids=[p.name for p in CHATS])
def test_the_streamed_plan_equals_the_plan_of_the_chat_read_whole(path, state, settings):
    story = StoryOptions(drop_tags=("think",))
    whole = read_chat(path, story=story)
    expected = dry_run_plan(whole, _graph(state), settings, language="en", retry_failed=True)
    assert expected
    with open_streamed(path, story=story, head=5) as chat:
        assert (chat.header, chat.user_name, chat.character_name, chat.is_group, chat.count, chat.assistant_turns) == \
            (whole.header, whole.user_name, whole.character_name, whole.is_group, len(whole.messages),
             whole.assistant_turns)
        assert chat.head == whole.messages[:5]
        assert list(chat.stream()) == whole.messages  # every field, story text included
        streamed = list(dry_run_stream(chat.stream, chat, _graph(state), settings, language="en",
                                       retry_failed=True))
    assert _rows(streamed) == _rows(expected)


def _reference_plan(chat, lp: int, settings: MemorySettings, include_greeting: bool) -> list[Batch]:
    """The plan as plan_batches made it over a whole list before it streamed (the oracle)."""
    messages = sorted(chat.messages, key=lambda m: m.seq)
    seqs, all_turns = [m.seq for m in messages], sorted(chat.assistant_turns)
    greeting = include_greeting and len(all_turns) > 1   # a greeting alone waits for a reply
    turns = [t for t in all_turns if t > lp and (greeting or t != 0)]

    def make(turns: list[int], triggered: bool) -> Batch:
        first = max(0, turns[0] - 2 * settings.extract_context_turns)
        lo, hi = bisect.bisect_left(seqs, first), bisect.bisect_right(seqs, turns[-1])
        return Batch(turns[0], turns[-1], list(turns), [m for m in messages[lo:hi] if not m.is_system], triggered)
    batches, pending = [], []
    for t in turns:
        pending.append(t)
        triggered = False
        if len(pending) < settings.extract_every and settings.enable_smart_trigger:
            i = bisect.bisect_right(all_turns, t)
            stop = all_turns[i] if i < len(all_turns) else None
            lo = bisect.bisect_left(seqs, max(0, lp + 1))
            hi = bisect.bisect_left(seqs, stop) if stop is not None else len(seqs)
            triggered = smart_trigger(messages[lo:hi], lp, settings).triggered
        if len(pending) >= settings.extract_every or triggered:
            batches.append(make(pending, triggered))
            lp, pending = pending[-1], []
    return batches + ([make(pending, False)] if pending else [])


def _reference_retries(chat, graph: Graph) -> list[Batch]:
    """The failed batches as gaps.retry_batch rebuilt them one by one over the whole list."""
    out = []
    for r in gaps.failed_batches(graph):
        turns = [t for t in chat.assistant_turns if r.start_seq <= t <= r.end_seq]
        if turns:
            out.append(Batch(r.start_seq, r.end_seq, turns, [m for m in chat.messages
                                                             if r.context_start <= m.seq <= r.end_seq and not m.is_system]))
    return out


@pytest.mark.parametrize("settings", [*SETTINGS.values(), MemorySettings(extract_every=2, enable_smart_trigger=True,
                                                                          smart_trigger_threshold=4)])
@pytest.mark.parametrize("path", CHATS, ids=[p.name for p in CHATS])
def test_the_streaming_planner_plans_what_the_whole_list_planner_did(path, settings):
    chat = read_chat(path)
    for state in ("empty", "half, with failed batches"):
        graph = _graph(state)
        greeting = settings.include_greeting
        got = list(plan_stream(iter(chat.messages), chat.assistant_turns, graph.last_processed_seq, settings,
                               include_greeting=greeting))
        assert got == _reference_plan(chat, graph.last_processed_seq, settings, greeting)
        assert list(gaps.retry_batches(iter(chat.messages), gaps.failed_batches(graph), chat.assistant_turns)) == \
            _reference_retries(chat, graph)


@dataclass(eq=False)  # hashable, for the weak set
class _Msg:
    seq: int
    is_user: bool
    text: str
    name: str = "Bo"
    is_system: bool = False
    raw: str = ""
    swipe_id: int | None = None
    send_date: object = None

    @property
    def role(self) -> str:
        return "user" if self.is_user else "assistant"


@pytest.mark.parametrize("settings", SETTINGS.values(), ids=SETTINGS.keys())
def test_the_planner_reads_ahead_only_as_far_as_a_batch_needs_and_lets_go_of_the_rest(settings):
    alive: weakref.WeakSet = weakref.WeakSet()
    read = [0]

    def messages(n: int = 3000):
        for seq in range(n):
            m = _Msg(seq, seq % 2 == 1, f"Bo walks to gate {seq}! Suddenly, a secret?" if seq % 7 else "")
            alive.add(m)
            read[0] = seq + 1
            yield m
    turns = list(range(0, 3000, 2))
    bound = 2 * settings.extract_context_turns + 2 * settings.extract_every + 3
    for batch in plan_stream(messages(), turns, -1, settings, include_greeting=settings.include_greeting):
        assert read[0] <= batch.end_seq + 3          # the next assistant turn at most
        assert len(alive) <= bound + len(batch.context)
        del batch
    assert read[0] == 3000


def test_a_chat_changed_in_place_between_the_passes_is_one_clear_error(tmp_path):
    path = tmp_path / "c.jsonl"
    lines = [{"user_name": "Ana", "character_name": "Bo", "chat_metadata": {}},
             {"name": "Ana", "is_user": True, "mes": "Hello."}, {"name": "Bo", "is_user": False, "mes": "Hi."}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    with open_streamed(path) as chat:
        with path.open("r+b") as f:  # the same bytes but Bo is the user now
            f.write(path.read_bytes().replace(b'"is_user": false', b'"is_user": true '))
        with pytest.raises(BadInputError, match="changed while bme was reading it"):
            list(chat.stream())


def test_a_line_appended_after_the_first_pass_waits_for_the_next_run(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"name": "Bo", "is_user": False, "mes": "Hi."}) + "\n", encoding="utf-8")
    with open_streamed(path) as chat:
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"name": "Bo", "is_user": False, "mes": "More."}) + "\n")
        assert [m.text for m in chat.stream()] == ["Hi."] and chat.assistant_turns == [0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_pipe_is_read_whole_since_it_cannot_be_read_twice(tmp_path):
    source = SAMPLES / "group.jsonl"
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(source.read_bytes()), daemon=True)
    writer.start()
    with open_streamed(fifo) as chat:
        streamed = list(chat.stream())
    writer.join(10)
    assert [(m.seq, m.text) for m in streamed] == [(m.seq, m.text) for m in read_chat(source).messages]


@pytest.mark.usefixtures("cli_env")
def test_a_skipped_bad_line_is_reported_once_although_the_chat_is_read_twice(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = (SAMPLES / "group.jsonl").read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*good[:4], "{bad", *good[4:]]) + "\n", encoding="utf-8")
    result = ok("ingest", "--dry-run", "--skip-bad-lines", path)
    assert result.stderr.count("line 5: not valid JSON") == 1
    assert "batch(es)" in result.stdout


def test_the_table_keeps_the_first_and_last_rows_numbered_within_their_chats():
    rows = render.DryRunRows()
    for chat in ("a.jsonl", "b.jsonl"):
        for seq in range(30):
            rows.add(chat, Batch(seq, seq, [seq], []), 10)
    assert (rows.count, rows.tokens) == (60, 600)
    assert [(c, n) for c, n, _, _ in rows.head] == [("a.jsonl", n) for n in range(1, 21)]
    assert [(c, n) for c, n, _, _ in rows.tail] == [("b.jsonl", n) for n in range(11, 31)]
    assert render.dry_run_total(rows, type("E", (), {"price_prompt_per_m": None})()).startswith(
        "60 batch(es), ~600 prompt tokens")
    for seq in range(10_000):
        rows.add("c.jsonl", Batch(seq, seq, [seq], []), 1)
    assert len(rows.head) + len(rows.tail) == render.DRY_RUN_ROWS and rows.count == 10_060  # bounded
    assert rows.tail[-1][:2] == ("c.jsonl", 10_000)


def test_a_streamed_chat_knows_its_own_calendar_as_a_read_one_does(tmp_path: Path) -> None:
    lines = [{"user_name": "Ruth", "character_name": "Asylum", "chat_metadata": {}}]
    for i in range(4):
        lines.append({"name": "Asylum", "is_user": False, "send_date": "March 25, 2025 9:19pm",
                      "mes": f"Date: Wednesday, October {14 + i}, 1953\nThe ward is cold."})
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) for o in lines),
                    encoding="utf-8")
    with open_streamed(path, head=1) as chat:
        streamed = [m.dated for m in chat.stream()]
    assert chat.own_calendar and streamed == [False] * 4
    assert read_chat(path).own_calendar
