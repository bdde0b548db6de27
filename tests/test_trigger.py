"""Smart trigger (spec §3.2, §9.3) and batch planning (spec §3.1) with bme's fixes."""
from __future__ import annotations

from fakes import FakeChat, FakeMessage, make_chat

from bme_cli.memory import trigger
from bme_cli.memory.trigger import (TriggerDecision, first_turn, plan_batches, plan_stream, smart_trigger,
                                      split_patterns)
from bme_cli.settings import MemorySettings


def _msgs(*items: tuple[bool, str], system: set[int] = frozenset()) -> list[FakeMessage]:
    return [FakeMessage(seq=i, name="U" if user else "A", is_user=user, text=text, is_system=i in system)
            for i, (user, text) in enumerate(items)]


# -- the five checks of ST-BME's smart-trigger test ------------------------------------------
def test_calm_text_does_not_trigger_at_threshold_3():
    msgs = _msgs((True, "今天天气不错。"), (False, "是啊，我们去散步吧。"))
    d = smart_trigger(msgs, -1, MemorySettings(smart_trigger_threshold=3))
    assert not d.triggered and d.score < 3


def test_keywords_trigger_at_threshold_2():
    msgs = _msgs((True, "我突然发现了一个秘密。"), (False, "原来如此。"))
    d = smart_trigger(msgs, -1, MemorySettings(smart_trigger_threshold=2))
    assert d.triggered and d.score >= 2
    assert any(r.startswith("keyword") for r in d.reasons)


def test_custom_pattern_triggers_and_is_named_in_reasons():
    msgs = _msgs((True, "他终于说出了真相。"))
    d = smart_trigger(msgs, -1, MemorySettings(trigger_patterns="真相|背叛", smart_trigger_threshold=2))
    assert d.triggered
    assert any(r.startswith("custom trigger") for r in d.reasons)


def test_messages_up_to_last_processed_are_ignored():
    msgs = _msgs((True, "突然发现秘密！！"), (False, "原来是背叛？！"))
    d = smart_trigger(msgs, 1, MemorySettings())
    assert (d.triggered, d.score, d.reasons) == (False, 0, [])


def test_system_blank_and_invalid_patterns_are_ignored_safely():
    msgs = _msgs((True, "突然发现秘密，原来如此"), (False, "   "), (True, "Alpha城发生了什么？！"), system={0})
    d = smart_trigger(msgs, -1, MemorySettings(trigger_patterns="([\n真相", smart_trigger_threshold=2))
    assert d.triggered and d.score == 2
    assert any(r.startswith("punctuation") for r in d.reasons)
    assert not any(r.startswith("keyword") for r in d.reasons)


# -- bme's fixes and additions ---------------------------------------------------------------
def test_patterns_split_on_newlines_only_so_regex_with_commas_works():
    assert [p.pattern for p in split_patterns("ba{1,3}c\n\n  other  \n([")] == ["ba{1,3}c", "other"]
    msgs = _msgs((True, "xbaacx"))
    d = smart_trigger(msgs, -1, MemorySettings(trigger_patterns="ba{1,3}c", smart_trigger_threshold=2))
    assert d.triggered and "custom trigger: ba{1,3}c" in d.reasons


def test_two_role_switches_add_a_point_and_one_does_not():
    calm = MemorySettings(smart_trigger_threshold=1)   # words that score nothing else: no keyword, entity or !?
    two = smart_trigger(_msgs((True, "hello"), (False, "hi"), (True, "fine")), -1, calm)
    assert (two.triggered, two.score, two.reasons) == (True, 1, ["role switch: 2"])
    assert smart_trigger(_msgs((True, "hello"), (False, "hi")), -1, calm) == TriggerDecision(False, 0, [])


def test_english_keywords_count_like_chinese_ones():
    msgs = _msgs((True, "she suddenly discovered the secret"))
    d = smart_trigger(msgs, -1, MemorySettings(smart_trigger_threshold=2))
    assert d.triggered and d.score == 2


# -- batch planning ---------------------------------------------------------------------------
def _chat(n_turns: int) -> FakeChat:
    # seq 0 greeting, then user/assistant pairs: assistant turns at 0, 2, 4, ...
    return make_chat([f"line {i}" for i in range(2 * n_turns + 1)])


def test_the_greeting_follows_the_setting_unless_the_call_says_otherwise():
    chat = _chat(3)
    assert [b.turns for b in plan_batches(chat, -1, MemorySettings(include_greeting=False))] == [[2], [4], [6]]
    assert [b.turns for b in plan_batches(chat, -1, MemorySettings())][0] == [0]   # bme's default
    assert [b.turns for b in plan_batches(chat, -1, MemorySettings(), include_greeting=False)][0] == [2]
    assert [b.turns for b in plan_batches(chat, -1, MemorySettings(include_greeting=False),
                                          include_greeting=True)][0] == [0]


def test_a_greeting_alone_waits_for_the_reply_it_may_still_be_swiped_before():
    alone, answered, replied = _chat(0), make_chat(["hello", "hi"]), _chat(1)
    assert plan_batches(alone, -1, MemorySettings(), include_greeting=True) == []
    assert plan_batches(answered, -1, MemorySettings(), include_greeting=True) == []
    assert [b.turns for b in plan_batches(replied, -1, MemorySettings(), include_greeting=True)] == [[0], [2]]
    assert (first_turn([0], True), first_turn([0, 2], True), first_turn([0, 2], False)) == (1, 0, 1)


def test_batches_hold_extract_every_turns_and_the_tail_is_drained():
    chat = _chat(5)  # turns 2, 4, 6, 8, 10
    batches = plan_batches(chat, -1, MemorySettings(extract_every=2, include_greeting=False))
    assert [b.turns for b in batches] == [[2, 4], [6, 8], [10]]
    assert [(b.start_seq, b.end_seq) for b in batches] == [(2, 4), (6, 8), (10, 10)]
    held = plan_batches(chat, -1, MemorySettings(extract_every=2, include_greeting=False), flush_tail=False)
    assert [b.turns for b in held] == [[2, 4], [6, 8]]


def test_context_window_reaches_back_twice_the_context_turns_without_system_messages():
    chat = _chat(6)
    chat.messages[7].is_system = True  # a hidden message inside the window
    batch = plan_batches(chat, 8, MemorySettings(extract_context_turns=2))[0]
    assert batch.turns == [10]
    assert [m.seq for m in batch.context] == [6, 8, 9, 10]
    wide = plan_batches(chat, 8, MemorySettings(extract_context_turns=20))[0]
    assert wide.context[0].seq == 0


def test_until_stops_early_and_last_processed_is_respected():
    chat = _chat(6)
    assert [b.turns for b in plan_batches(chat, 4, MemorySettings(), until=9)] == [[6], [8]]


def test_smart_trigger_cuts_a_batch_short_at_an_eventful_turn():
    texts = ["hello", "hi there", "calm reply", "tell me", "she suddenly discovered the secret",
             "and then", "quiet", "more", "quiet again"]
    chat = make_chat(texts)  # turns 2, 4, 6, 8
    s = MemorySettings(extract_every=3, enable_smart_trigger=True, smart_trigger_threshold=3)
    assert [b.turns for b in plan_batches(chat, 0, s)] == [[2, 4], [6, 8]]
    assert plan_batches(chat, 0, s)[0].triggered
    off = MemorySettings(extract_every=3)
    assert [b.turns for b in plan_batches(chat, 0, off)] == [[2, 4, 6], [8]]


def test_a_long_chat_is_planned_reading_one_batch_ahead_and_triggering_on_pending_messages(monkeypatch):
    # What keeps planning linear in the chat's length, checked as behaviour rather than time.
    chat, read, shown = _chat(10_000), [], []

    def source():
        for m in chat.messages:
            read.append(m.seq)
            yield m

    def spy(messages, last_processed, settings):
        shown.append(len(messages))
        return smart_trigger(messages, last_processed, settings)
    monkeypatch.setattr(trigger, "smart_trigger", spy)
    s = MemorySettings(extract_every=3, enable_smart_trigger=True, include_greeting=False)
    plan = plan_stream(source(), chat.assistant_turns, -1, s)
    first = next(plan)
    assert first.turns == [2, 4, 6] and max(read) <= 8     # read only up to the next assistant turn
    batches = [first, *plan]
    assert [t for b in batches for t in b.turns] == chat.assistant_turns[1:]   # every turn, once, in order
    assert len(shown) > 6_000 and max(shown) <= 2 * s.extract_every      # the pending messages, never the chat
