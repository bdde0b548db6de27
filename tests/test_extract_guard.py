"""Extraction operations copied from the prompt or made up are dropped; real ones are kept."""
from __future__ import annotations

from pathlib import Path

import pytest
from fakes import make_chat

from bme_cli.chat import read_chat
from bme_cli.graph.model import Graph
from bme_cli.graph.schema import Schema
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.extract import BatchFailed, extract_batch, extract_task
from bme_cli.memory.extract_guard import screen
from bme_cli.memory.ingest import ingest_chat
from bme_cli.memory.trigger import plan_batches
from bme_cli.prompts.extract import CreateOp, DeleteOp, ExtractReply, UpdateOp
from bme_cli.providers.offline import HashEmbedder, OfflineChatModel
from bme_cli.settings import MemorySettings

SAMPLES = Path(__file__).resolve().parent.parent / "sample_chats"


class Replying:
    """A chat model that answers every extraction with the given operations."""

    name, offline = "scripted", False

    def __init__(self, operations: list[dict]):
        self.operations = operations

    def complete_json(self, task):  # noqa: ANN001, ANN201
        return ExtractReply.model_validate({"thought": "", "operations": self.operations})


def _batch_and_task(chat_name: str = "adventure.jsonl", index: int = 1):
    chat = read_chat(SAMPLES / chat_name)
    batch = plan_batches(chat, -1, MemorySettings())[index]
    ctx = MemoryContext(chat=None, embedder=None)  # type: ignore[arg-type]
    task = extract_task(Graph(), batch, ctx, user_name=chat.user_name, character_name=chat.character_name)
    return chat, batch, task


def _types(op):  # noqa: ANN001, ANN202
    return op.type if isinstance(op, CreateOp) else "event"


def test_what_a_tiny_model_copies_from_the_prompt_is_dropped():
    _, _, task = _batch_and_task()
    ops = [CreateOp(type="location", fields={"name": "loc1", "state": "..."}),
           CreateOp(type="event", fields={"summary": "The story so far", "participants": "A, B"}),
           CreateOp(type="character", fields={"name": "Zorblax Quintarian"})]
    kept, out = screen(task, ops, _types)
    assert kept == []
    assert [d.split(":")[1].strip() for d in out.dropped_ops] == ["copied from the prompt"] * 2 + ["in no message"]


def test_real_operations_pass_and_only_their_bad_fields_go():
    chat, batch, task = _batch_and_task()
    said = " ".join(m.text for m in batch.context)
    name = next(w.strip(".,!?") for w in said.split() if w[:1].isupper() and len(w) > 3)
    summary = " ".join(said.split()[:12])
    ops = [CreateOp(type="event", fields={"summary": summary, "participants": "A, B"}),
           CreateOp(type="character", fields={"name": name, "state": "current_condition"}),
           UpdateOp(nodeId="n1", fields={"state": "tired"}), DeleteOp(nodeId="n2")]
    kept, out = screen(task, ops, _types)
    assert kept == ops
    assert "participants" not in ops[0].fields and ops[0].fields["summary"] == summary
    assert "state" not in ops[1].fields and ops[1].fields["name"] == name
    assert ops[2].fields == {"state": "tired"}   # one word, like a status: not judged
    assert len(out.dropped_fields) == 2 and not out.dropped_ops


def test_a_summary_that_quotes_a_line_as_the_prompt_shows_it_is_from_the_messages():
    chat = make_chat(["The gate is shut.", "Who guards it?", "No one."], user="Rowan", char="Narrator")
    batch = plan_batches(chat, -1, MemorySettings(), include_greeting=True)[0]
    ctx = MemoryContext(chat=None, embedder=None)  # type: ignore[arg-type]
    task = extract_task(Graph(), batch, ctx, user_name="Rowan", character_name="Narrator")
    assert "Narrator: The gate is shut." in task.user    # an undated line, as the prompt renders it
    kept, out = screen(task, [CreateOp(type="event", fields={"summary": "Narrator: The gate is shut."})], _types)
    assert len(kept) == 1 and not out.dropped_ops


def test_a_summary_that_quotes_a_dated_line_as_the_prompt_shows_it_is_from_the_messages():
    _, batch, task = _batch_and_task()
    m = next(m for m in task.data.messages if m.date and len(m.text.split()) >= 6)
    line = f"{m.name} ({m.date}): {' '.join(m.text.split()[:6])}"
    assert line in task.user
    kept, out = screen(task, [CreateOp(type="event", fields={"summary": line})], _types)
    assert len(kept) == 1 and not out.dropped_ops


def test_a_reply_that_is_only_junk_fails_the_batch_so_it_is_recorded():
    chat, batch, _ = _batch_and_task()
    ctx = MemoryContext(chat=Replying([{"action": "create", "type": "location", "fields": {"name": "loc1"}}]),
                        embedder=None, schema=Schema.default())
    with pytest.raises(BatchFailed, match="copied from the prompt"):
        extract_batch(Graph(), batch, ctx, user_name=chat.user_name, character_name=chat.character_name)


@pytest.mark.parametrize("name", ["adventure.jsonl", "chinese.jsonl", "group.jsonl"])
def test_the_offline_extractor_passes_the_screen_on_every_sample(name: str):
    chat = read_chat(SAMPLES / name)
    graph = Graph()
    ctx = MemoryContext(chat=OfflineChatModel(), embedder=HashEmbedder(), schema=Schema.default())
    report = ingest_chat(chat, graph, ctx, save=lambda g: None)
    assert report.batches_done > 3
    assert report.totals.skipped["junk_op"] == 0
    assert not [w for w in report.totals.warnings if "copied" in w], report.totals.warnings


def test_a_loop_and_the_same_event_again_are_dropped():
    from bme_cli.prompts.extract import OverviewGroup, OverviewNode
    _, batch, task = _batch_and_task()
    said = " ".join(m.text for m in batch.context).split()
    event = " ".join(said[:14])
    task.data.overview = [OverviewGroup(type="event", label="Event", count=1,
                                        nodes=[OverviewNode(id="e1", label=f"[1 May 2024] {event}")])]
    loop = " ".join(said[:3]) + ", and then " + ", and then ".join([" ".join(said[3:6])] * 6)
    ops = [CreateOp(type="event", fields={"summary": event + " again"}),      # begins as e1 does
           CreateOp(type="event", fields={"summary": loop}),
           CreateOp(type="event", fields={"summary": " ".join(said[2:16])}),   # new: kept
           CreateOp(type="event", fields={"summary": " ".join(said[2:16]) + "."})]  # the same twice in one reply
    kept, out = screen(task, ops, _types)
    assert kept == [ops[2]]
    assert [d.rsplit(": ", 1)[1] for d in out.dropped_ops] == ["already in the graph", "repeats itself",
                                                               "already in the graph"]
