"""One extraction batch (spec §3.3-3.7): the prompt, the reply model, and what a batch does."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from fakes import Clock, FakeChat, FakeMessage, ScriptedChatModel, WordHashEmbedder, counter_ids, make_chat

from bme_cli.errors import ConfigError, ProviderError
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_node, make_node
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.extract import BatchFailed, build_extract_input, extract_batch, extract_task
from bme_cli.memory.trigger import plan_batches
from bme_cli.prompts.extract import ExtractReply
from bme_cli.settings import MemorySettings

REPLY = {"thought": "they met", "operations": [
    {"action": "create", "type": "event", "ref": "e", "fields": {"summary": "Rowan hired Mira"},
     "links": [{"targetRef": "m", "relation": "involved_in"}]},
    {"action": "create", "type": "character", "ref": "m", "fields": {"name": "Mira"}},
]}


def chat() -> FakeChat:
    c = make_chat(["Welcome to Saltmere.", "I need a guide.", "I am Mira; I can guide you.",
                   "Deal.", "We leave at dawn."], user="Rowan", char="Mira")
    c.messages[2].send_date = datetime(2025, 3, 25, 21, 19, tzinfo=timezone.utc)
    return c


def context(replies=None, **settings) -> MemoryContext:
    return MemoryContext(chat=ScriptedChatModel(replies or {"extract": [REPLY]}), embedder=WordHashEmbedder(),
                         settings=MemorySettings(**settings), new_id=counter_ids(), now=Clock())


def first_batch(c=None, **settings):
    return plan_batches(c or chat(), -1, MemorySettings(**{"include_greeting": False, **settings}))[0]


def test_a_batch_runs_the_operations_embeds_and_advances_last_processed():
    g, ctx = Graph(), context()
    report = extract_batch(g, first_batch(), ctx, user_name="Rowan", character_name="Mira")
    assert report.created == 2 and report.edges_created == 1
    assert g.last_processed_seq == 2
    assert all(n.embedding is not None for n in g.nodes)
    assert [n.seq_range for n in g.nodes] == [[1, 2], [1, 2]]  # the user turn before + the reply


def test_the_prompt_shows_dialogue_lines_overview_ids_and_schema():
    g, ctx = Graph(), context()
    mira = add_node(g, make_node("character", {"name": "Mira", "state": "calm"}, 0, 1, new_id=lambda: "c-1"))
    task = extract_task(g, first_batch(extract_context_turns=2), ctx)
    assert "#0 [assistant] Mira: Welcome to Saltmere." in task.user
    assert "#1 [user] Rowan: I need a guide.\n\n#2 [assistant] Mira (25 Mar 2025): I am Mira" in task.user
    assert f"[{mira.id}] Mira (state: calm)" in task.user
    assert 'type "character" (角色) - one node per name' in task.user
    assert "name (required): canonical name only" in task.user
    assert "only" in task.system and "targetRef" in task.system and "English" in task.system
    assert task.max_retries == 2 and task.kind == "extract"
    assert [m.new for m in task.data.messages] == [False, True, True]


def test_chinese_memories_are_asked_for_a_chinese_chat():
    ctx = context()
    ctx.language = "zh"
    task = extract_task(Graph(), first_batch(), ctx)
    assert "Chinese" in task.system and "Chinese" in task.user


def test_a_custom_prompt_replaces_the_system_prompt_but_not_the_output_request():
    ctx = context(extract_prompt="You are a terse archivist.")
    task = extract_task(Graph(), first_batch(), ctx)
    assert task.system == "You are a terse archivist."
    assert '"operations"' in task.user


def test_the_overview_lists_the_last_ten_per_type_without_change_events():
    g, ctx = Graph(), context()
    for i in range(15):
        add_node(g, make_node("event", {"summary": f"event {i}"}, i, 1, new_id=lambda i=i: f"e{i}"))
    auto = add_node(g, make_node("event", {"summary": "auto"}, 20, 1, new_id=lambda: "auto"))
    auto.extra["bmeAuto"] = "update"
    groups = {gr.type: gr for gr in build_extract_input(g, first_batch(), ctx).overview}
    assert groups["event"].count == 15
    assert [n.id for n in groups["event"].nodes] == [f"e{i}" for i in range(5, 15)]


def test_the_overview_orders_by_seq_and_keeps_graph_order_among_equal_seqs():
    g, ctx = Graph(), context()
    seqs = [7, 3, 3, 9, 3, 1, 7, 8, 3, 2, 9, 0, 3]   # out of order, with ties
    for i, seq in enumerate(seqs):
        add_node(g, make_node("event", {"summary": f"event {i}"}, seq, 1, new_id=lambda i=i: f"e{i}"))
    groups = {gr.type: gr for gr in build_extract_input(g, first_batch(), ctx).overview}
    by_seq = sorted(range(len(seqs)), key=lambda i: seqs[i])   # a stable sort: graph order on ties
    assert [n.id for n in groups["event"].nodes] == [f"e{i}" for i in by_seq[-10:]]


def test_a_batch_the_model_cannot_answer_fails_and_changes_nothing():
    g, ctx = Graph(), context({"extract": [{"thought": "no operations key"}]})
    with pytest.raises(BatchFailed) as err:
        extract_batch(g, first_batch(), ctx)
    assert isinstance(err.value, ProviderError) and "#2-#2" in str(err.value)
    assert g.last_processed_seq == -1 and not g.nodes


def test_a_lenient_reply_is_read_and_its_bad_operations_are_counted():
    reply = {"thought": 3, "extra": "ignored", "operations": [
        {"action": "CREATE", "type": "event", "fields": {"summary": "ok"}, "importance": "6", "unknown": 1},
        {"action": "explode"}, {"action": "update"}, "junk"]}
    g, ctx = Graph(), context({"extract": [reply]})
    report = extract_batch(g, first_batch(), ctx)
    assert report.created == 1 and g.nodes[0].importance == 6.0
    assert report.skipped == {"invalid_op": 3}


def test_blank_messages_are_not_sent_to_the_model():
    c = make_chat(["hi", "hello?", "  ", "", ""], user="U", char="C")  # a failed generation at #4
    g, ctx = Graph(), context({})
    report = extract_batch(g, plan_batches(c, 2, MemorySettings())[0], ctx)
    assert report.created == 0 and g.last_processed_seq == 4 and not ctx.chat.tasks


class FailingEmbedder(WordHashEmbedder):
    def embed(self, texts):
        raise ProviderError("embeddings endpoint down")


def test_an_embedding_failure_keeps_the_batch_and_warns():
    g, ctx = Graph(), context(enable_precise_conflict=False)
    ctx.embedder = FailingEmbedder()
    report = extract_batch(g, first_batch(), ctx)
    assert report.created == 2 and g.last_processed_seq == 2
    assert all(n.embedding is None for n in g.nodes)
    assert any("embedding failed" in w for w in report.warnings)


def test_a_graph_embedded_by_another_model_is_refused_before_any_change():
    g, ctx = Graph(), context()
    n = add_node(g, make_node("event", {"summary": "x"}, 0, 1))
    n.embedding = WordHashEmbedder().embed(["x"])[0]
    g.meta.embedding_model = "another-model"
    with pytest.raises(ConfigError):
        extract_batch(g, first_batch(), ctx)
    assert len(g.nodes) == 1 and not ctx.chat.tasks


def test_the_reply_model_ignores_unknown_keys_in_links_and_takes_a_single_link_object():
    reply = ExtractReply.model_validate({"operations": [
        {"action": "create", "type": "event", "fields": {"summary": "s"},
         "links": {"targetNodeId": 5, "relation": "related", "why": "x"}}]})
    (op,) = reply.operations
    assert op.links[0].target_node_id == "5"


def test_messages_are_typed_as_user_or_assistant_with_speaker_names():
    c = FakeChat([FakeMessage(0, "Nar", False, "Night falls."), FakeMessage(1, "Ann", True, "I wait."),
                  FakeMessage(2, "Bob", False, "Bob arrives.")])
    inp = build_extract_input(Graph(), plan_batches(c, 0, MemorySettings())[0], context())
    assert [(m.seq, m.role, m.name) for m in inp.messages] == [(0, "assistant", "Nar"), (1, "user", "Ann"),
                                                               (2, "assistant", "Bob")]


def test_a_cut_off_reply_keeps_its_operations_and_the_report_says_so():
    g = Graph()
    report = extract_batch(g, first_batch(), context({"extract": [{**REPLY, "cut_off": 1}]}))
    assert report.created == 2 and report.skipped["cut_off"] == 1
    assert any("cut off" in w and "2 complete operation(s)" in w for w in report.warnings)
    assert g.last_processed_seq == 2
