"""The synopsis (spec §6.3) with bounded input (§10.23), and its offline heuristic."""
from __future__ import annotations

import itertools
import re

import numpy as np

from fakes import ScriptedReplies as ScriptedChat
from bme_cli.graph.model import Graph, Node
from bme_cli.graph.ops import add_node, make_node
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.synopsis import (MAX_EVENT_LINES, build_synopsis_input, generate_synopsis,
                                     select_events)
from bme_cli.prompts.synopsis import (CharacterState, SynopsisEvent, SynopsisInput, ThreadState,
                                      build_synopsis_task)
from bme_cli.providers.heuristic.synopsis import answer
from bme_cli.providers.offline import OfflineChatModel

NOW = 1_700_000_000_000


def make_ctx(chat=None, language="en") -> MemoryContext:
    counter = itertools.count(1)
    return MemoryContext(chat=chat or OfflineChatModel(), embedder=None, now=lambda: NOW,
                         new_id=lambda: f"id{next(counter)}", language=language)


def events(g: Graph, ctx: MemoryContext, n: int, start: int = 1, level: int = 0) -> list[Node]:
    return [add_node(g, make_node("event", {"summary": f"At {i}, Mira crossed bridge number {i} under fire.",
                                            "participants": "Mira"}, i, NOW, level=level,
                                  importance=5 + (i % 3), new_id=ctx.new_id))
            for i in range(start, start + n)]


def test_fewer_than_three_events_write_no_synopsis_and_ask_nothing():
    g, ctx = Graph(), make_ctx(ScriptedChat())
    events(g, ctx, 2)
    assert generate_synopsis(g, ctx, current_seq=5) is None


def test_creates_a_synopsis_node_then_updates_the_same_one():
    chat = ScriptedChat({"summary": "Mira crosses bridge after bridge under fire."},
                        {"summary": "Mira crossed every bridge."})
    g, ctx = Graph(), make_ctx(chat)
    events(g, ctx, 5, start=3)
    first = generate_synopsis(g, ctx, current_seq=20)
    assert (first.type, first.importance, first.seq, first.seq_range) == ("synopsis", 9.0, 20, [3, 20])
    assert first.fields == {"summary": "Mira crosses bridge after bridge under fire.", "scope": "messages 3 ~ 20"}
    first.embedding = np.ones(4, dtype=np.float32)
    events(g, ctx, 2, start=30)
    second = generate_synopsis(g, ctx, current_seq=40)
    assert second is first and len(g.active_nodes("synopsis")) == 1
    assert first.fields["summary"] == "Mira crossed every bridge." and first.fields["scope"] == "messages 3 ~ 40"
    assert (first.seq, first.seq_range, first.embedding) == (40, [3, 40], None)
    assert "Mira crosses bridge after bridge under fire." in chat.tasks[1].user  # the previous text is shown


def test_scope_is_written_in_the_memory_language():
    g, ctx = Graph(), make_ctx(ScriptedChat({"summary": "米拉过了河。"}), language="zh")
    events(g, ctx, 3)
    node = generate_synopsis(g, ctx, current_seq=9)
    assert node.fields["scope"] == "楼 1 ~ 9"
    assert "Chinese" in build_synopsis_task(build_synopsis_input(g, ctx, 9)).system


def test_empty_summary_changes_nothing():
    g, ctx = Graph(), make_ctx(ScriptedChat({"summary": "  "}))
    events(g, ctx, 3)
    assert generate_synopsis(g, ctx, current_seq=9) is None and not g.active_nodes("synopsis")


def test_input_stays_bounded_on_a_500_event_graph():
    g, ctx = Graph(), make_ctx()
    events(g, ctx, 30, start=1, level=2)
    events(g, ctx, 60, start=100, level=1)
    leaves = events(g, ctx, 410, start=1000)
    for i in range(30):
        add_node(g, make_node("character", {"name": f"C{i}", "state": "x" * 900}, i, NOW, new_id=ctx.new_id))
    inp = build_synopsis_input(g, ctx, 2000)
    assert len(inp.events) == MAX_EVENT_LINES and inp.omitted_events == 460
    assert sum(e.level == 2 for e in inp.events) == 20              # highest level first
    assert [e.seq for e in inp.events][-20:] == [n.seq for n in leaves[-20:]]   # then the latest
    assert [e.seq for e in inp.events] == sorted(e.seq for e in inp.events)
    assert len(inp.characters) <= 12 and all(len(c.state) <= 300 for c in inp.characters)
    task = build_synopsis_task(inp)
    assert len(task.user) < 12_000


def test_small_graphs_send_every_event():
    g, ctx = Graph(), make_ctx()
    made = events(g, ctx, 12)
    assert select_events(g) == made


def test_offline_synopsis_uses_top_events_and_current_character_states():
    inp = SynopsisInput(current_seq=50, events=[
        SynopsisEvent(seq=1, summary="They chatted about the weather.", importance=2),
        SynopsisEvent(seq=5, level=1, importance=8,
                      summary="Kael betrayed the guild and stole the crown because of his debts."),
        SynopsisEvent(seq=40, importance=6, summary="Mira found the crown hidden in the old forge.")],
        characters=[CharacterState(name="Mira", state="wounded but free")],
        threads=[ThreadState(title="The stolen crown", status="active"),
                 ThreadState(title="The old feud", status="resolved")])
    text = answer(inp).summary
    assert "betrayed" in text and "forge" in text and "weather" not in text
    assert "Mira - wounded but free" in text and "The stolen crown" in text and "feud" not in text
    assert len(text) <= 900


def test_offline_synopsis_keeps_only_sentences_that_stand_alone():
    weighty = "Kael betrayed the guild and stole the crown because of his debts."
    leaning = ["Because Kael asked the guild for one, the vault was left open all night.",
               "She hasn't come home since Kael left the guild three days ago.",
               '"Kael is staying until the ship from Vael comes on Friday.',
               "Four days ago (30 Oct 2025) the night was cold and wet and long."]
    inp = SynopsisInput(current_seq=50, events=[SynopsisEvent(seq=i, importance=9, summary=t)
                                                 for i, t in enumerate([*leaning, weighty])])
    text = answer(inp).summary
    assert weighty in text and not any(t[:20] in text for t in leaning)
    zh = SynopsisInput(current_seq=9, language="zh", events=[
        SynopsisEvent(seq=1, importance=9, summary="所以叶知秋得护着阿蛮，别让阿蛮在半路上死掉。"),
        SynopsisEvent(seq=2, importance=9, summary="阿蛮拉着叶知秋钻进一家挂着破旧酒旗的客栈。")],
        characters=[CharacterState(name="叶知秋", state=""), CharacterState(name="阿蛮", state="")])
    assert answer(zh).summary.count("所以") == 0 and "客栈" in answer(zh).summary


def test_offline_synopsis_never_joins_the_words_before_a_quote_to_the_next_sentence():
    # "苏晚晴低声说：……" cut at its colon leaves "苏晚晴低声说", which read on into the next
    # sentence says she said it; a part cut at a colon ends as a sentence of its own.
    zh = SynopsisInput(current_seq=9, language="zh", events=[
        SynopsisEvent(seq=1, importance=9, summary="苏晚晴在窗边压低了声音说：“萧寒，我们今晚必须离开。”"),
        SynopsisEvent(seq=2, importance=9, summary="萧寒拔出长剑挡在苏晚晴的身前，守住了院门。"),
        SynopsisEvent(seq=3, importance=9, summary="师父玄真留下的地图：通往北山古寺的小路")],
        characters=[CharacterState(name="苏晚晴", state=""), CharacterState(name="萧寒", state="")])
    text = answer(zh).summary
    assert "压低了声音说" not in text and "萧寒拔出长剑" in text
    assert not re.search(r"[\u4e00-\u9fff]萧寒拔出", text)
    en = SynopsisInput(current_seq=9, events=[
        SynopsisEvent(seq=1, importance=9, summary="Mira turned to the captain and said: we sail at dawn."),
        SynopsisEvent(seq=2, importance=9, summary="Kael burned the harbour master's ledger before the guards came."),
        SynopsisEvent(seq=3, importance=9, summary="The map Kael found in the vault: a road through the northern pass")],
        characters=[CharacterState(name="Mira", state=""), CharacterState(name="Kael", state="")])
    text = answer(en).summary
    assert "and said" not in text and not re.search(r"[a-z] Kael burned", text)


def test_offline_synopsis_end_to_end_in_chinese():
    g, ctx = Graph(), make_ctx(language="zh")
    for i, s in enumerate(["米拉发现了凯尔的秘密。", "凯尔背叛了公会，因为他欠了债。", "米拉终于找到了王冠。"]):
        add_node(g, make_node("event", {"summary": s}, i + 1, NOW, new_id=ctx.new_id))
    add_node(g, make_node("character", {"name": "米拉", "state": "受伤"}, 3, NOW, new_id=ctx.new_id))
    node = generate_synopsis(g, ctx, current_seq=3)
    assert "王冠" in node.fields["summary"] and "米拉受伤" in node.fields["summary"]
    assert len(node.fields["summary"]) <= 300
