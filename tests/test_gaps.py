"""Failed batches: recorded in the sidecar and passed, retried with the same window, filled
offline on request, rolled back consistently, never silently skipped."""
from __future__ import annotations

import copy

from fakes import NOW, ScriptedChatModel, counter_ids, heuristic
from test_ingest import Saves, content, context, story_chat

from bme_cli.errors import ProviderError
from bme_cli.graph.model import Graph
from bme_cli.memory import gaps
from bme_cli.memory.ingest import check_edits, ingest_chat, rebuild_from
from bme_cli.providers.offline import OfflineChatModel

BAD = {"thought": "no operations"}  # does not validate: InvalidReplyError, as after a provider's retries


def failing_second_batch() -> ScriptedChatModel:
    return ScriptedChatModel({"extract": [heuristic, BAD]}, fallback=heuristic)


def windows(model: ScriptedChatModel) -> list[list[int]]:
    """The message seqs each extraction prompt showed."""
    return [[m.seq for m in t.data.messages] for t in model.tasks_of("extract")]


def test_a_failed_batch_is_recorded_and_the_later_batches_still_run():
    model, g, saves, seen = failing_second_batch(), Graph(), Saves(), []
    report = ingest_chat(story_chat(), g, context(model), save=saves, on_batch=seen.append)
    assert (report.batches_done, report.batches_failed, report.ok) == (4, 1, False)
    assert g.last_processed_seq == 10 and g.meta.extraction_count == 4
    [record] = gaps.failed_batches(g)
    assert (record.start_seq, record.end_seq, record.attempts) == (4, 4, 1)
    assert record.context_start == 0 and "validate" in record.reason and record.at > 0
    assert report.recorded == [record] and report.outstanding == [record]
    assert gaps.gaps(g) == [(4, 4)]
    # the record and the watermark are saved together, before the next batch runs
    assert [s.last_processed_seq for s in saves.graphs] == [2, 4, 6, 8, 10]
    assert gaps.gaps(saves.graphs[1]) == [(4, 4)]
    assert [(p.index, p.report is None, p.error is not None) for p in seen][:3] == [
        (1, False, False), (2, True, True), (3, False, False)]
    assert sorted(g.meta.fingerprints) == list(range(11))  # the failed messages too
    # ST-BME's fields carry nothing of it: the record lives in bme's own block
    assert "failedBatches" not in g.to_v3() and "failedBatches" in g.meta.extra


def test_a_plain_rerun_does_not_retry_and_retry_failed_fills_it_with_the_same_window():
    model, g = failing_second_batch(), Graph()
    ingest_chat(story_chat(), g, context(model), save=lambda g: None)
    again = ingest_chat(story_chat(), g, context(), save=lambda g: None)
    assert again.batches_planned == 0 and again.outstanding and not again.recorded
    retry_model = ScriptedChatModel(fallback=heuristic)
    retried = ingest_chat(story_chat(), g, context(retry_model), save=lambda g: None, retry_failed=True)
    assert retried.ok and (retried.retried, retried.batches_done) == (1, 1)
    assert gaps.failed_batches(g) == [] and "failedBatches" not in g.meta.extra
    assert windows(retry_model) == [windows(model)[1]]
    assert g.meta.extraction_count == 5 and g.last_processed_seq == 10
    events = {n.seq_range[1] for n in g.active_nodes("event")}
    assert 4 in events


def test_retrying_a_batch_that_fails_again_counts_the_attempt():
    g = Graph()
    ingest_chat(story_chat(), g, context(failing_second_batch()), save=lambda g: None)
    still_bad = ScriptedChatModel({"extract": [BAD]}, fallback=heuristic)
    report = ingest_chat(story_chat(), g, context(still_bad), save=lambda g: None, retry_failed=True)
    [record] = gaps.failed_batches(g)
    assert record.attempts == 2 and report.recorded == [record] and g.meta.extraction_count == 4


def test_on_fail_heuristic_fills_the_batch_offline_and_says_so():
    g = Graph()
    report = ingest_chat(story_chat(), g, context(failing_second_batch()), save=lambda g: None,
                         fallback=OfflineChatModel())
    assert report.ok and report.batches_done == 5 and not gaps.failed_batches(g)
    [filled] = gaps.filled_batches(g)
    assert (filled.start_seq, filled.end_seq, filled.by) == (4, 4, "heuristic") and "validate" in filled.reason
    assert report.filled == [filled]
    assert gaps.gaps(g) == []
    assert 4 in {n.seq_range[1] for n in g.active_nodes("event")}


def test_retry_failed_with_the_fallback_fills_what_the_model_fails_again():
    g = Graph()
    ingest_chat(story_chat(), g, context(failing_second_batch()), save=lambda g: None)
    report = ingest_chat(story_chat(), g, context(ScriptedChatModel({"extract": [BAD]})), save=lambda g: None,
                         retry_failed=True, fallback=OfflineChatModel())
    assert report.ok and not gaps.failed_batches(g)
    assert [f.attempts for f in gaps.filled_batches(g)] == [2]


def test_a_provider_error_still_stops_the_chat_where_it_was():
    down = ProviderError("connection refused")
    model = ScriptedChatModel({"extract": [heuristic, down]}, fallback=heuristic)
    g = Graph()
    report = ingest_chat(story_chat(), g, context(model), save=lambda g: None, fallback=OfflineChatModel())
    assert (report.batches_done, report.batches_failed) == (1, 1)
    assert g.last_processed_seq == 2 and not gaps.failed_batches(g) and not gaps.filled_batches(g)
    again = ingest_chat(story_chat(), g, context(), save=lambda g: None)
    assert again.ok and again.batches_done == 4 and g.last_processed_seq == 10


def test_a_run_killed_after_a_failure_was_recorded_resumes_to_the_same_graph():
    whole = Graph()
    ingest_chat(story_chat(), whole, context(failing_second_batch(), ids=counter_ids()), save=lambda g: None)
    part, saves, done = Graph(), Saves(), []
    ingest_chat(story_chat(), part, context(failing_second_batch(), ids=counter_ids()), save=saves,
                on_batch=done.append, should_stop=lambda: len(done) >= 2)
    resumed = copy.deepcopy(saves.graphs[-1])  # on disk after the kill: the failure record included
    assert gaps.gaps(resumed) == [(4, 4)]
    ingest_chat(story_chat(), resumed, context(ids=counter_ids("x")), save=lambda g: None)
    assert content(resumed) == content(whole)
    assert gaps.failed_batches(resumed) == gaps.failed_batches(whole)


def test_rebuild_before_a_failed_batch_drops_its_record_and_plans_it_again():
    g = Graph()
    ingest_chat(story_chat(), g, context(failing_second_batch()), save=lambda g: None)
    rebuild_from(g, 3, 10**13, assistant_turns=story_chat().assistant_turns)
    assert gaps.failed_batches(g) == [] and g.last_processed_seq == 2
    report = ingest_chat(story_chat(), g, context(), save=lambda g: None)
    assert report.ok and report.batches_done == 4


def test_rebuild_from_inside_a_failed_batch_starts_at_its_first_message():
    chat = story_chat()
    g = Graph()
    ingest_chat(chat, g, context(ScriptedChatModel({"extract": [heuristic, BAD]}, fallback=heuristic),
                                 extract_every=2), save=lambda g: None)
    assert gaps.gaps(g) == [(6, 8)]
    rebuild_from(g, 8, 10**13, assistant_turns=chat.assistant_turns)
    assert gaps.failed_batches(g) == [] and g.last_processed_seq == 4  # not 6: the whole batch again
    assert max(g.meta.fingerprints) < 6


def test_rebuild_after_a_failed_batch_keeps_its_record():
    g = Graph()
    ingest_chat(story_chat(), g, context(failing_second_batch()), save=lambda g: None)
    rebuild_from(g, 7, 10**13, assistant_turns=story_chat().assistant_turns)
    assert gaps.gaps(g) == [(4, 4)] and g.last_processed_seq == 6


def test_an_edit_inside_a_failed_batch_is_no_edit_and_the_retry_reads_the_new_text():
    chat, g = story_chat(), Graph()
    ingest_chat(chat, g, context(failing_second_batch()), save=lambda g: None)
    chat.messages[4].text = chat.messages[4].raw = "Mira buys a lantern instead."
    assert check_edits(chat, g) == []
    model = ScriptedChatModel(fallback=heuristic)
    ingest_chat(chat, g, context(model), save=lambda g: None, retry_failed=True)
    assert "lantern" in model.tasks_of("extract")[0].user
    chat.messages[4].text = chat.messages[4].raw = "Edited once more."
    assert [e.kind for e in check_edits(chat, g)] == ["edited"]  # extracted now: a real edit


def test_a_deletion_inside_a_failed_batch_is_still_reported():
    chat, g = story_chat(), Graph()
    ingest_chat(chat, g, context(failing_second_batch()), save=lambda g: None)
    del chat.messages[4]
    for i, m in enumerate(chat.messages):
        m.seq = i
    assert [e.kind for e in check_edits(chat, g)][:1] == ["deleted"]


def test_failed_records_survive_the_sidecar_and_bad_entries_are_ignored(tmp_path):
    from bme_cli.graph import store
    g = Graph()
    ingest_chat(story_chat(), g, context(failing_second_batch()), save=lambda g: None)
    store.save_graph(tmp_path / "c.bme.json", g)
    back = store.load_graph(tmp_path / "c.bme.json", NOW)
    assert gaps.failed_batches(back) == gaps.failed_batches(g)
    g.meta.extra["failedBatches"] += [{"startSeq": "x"}, {"startSeq": 9, "endSeq": 3}, "junk"]
    assert gaps.gaps(g) == [(4, 4)]


def test_pending_turns_count_the_failed_ones():
    chat, g = story_chat(), Graph()
    ingest_chat(chat, g, context(failing_second_batch()), save=lambda g: None)
    assert gaps.pending_failed_turns(chat, g) == 1
