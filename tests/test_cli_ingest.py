"""`bme ingest` through the command line: paths, --until, --dry-run, --jobs, incremental
runs, edited chats, --quiet, and a graph locked by another process."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from bme_cli.graph import store
from cli_support import (chats, cli_env, copy_samples, error_lines, ingested, ingested_template,  # noqa: F401
                         invoke, ok, point_chat_at_nothing, sidecar, stats_json)

pytestmark = pytest.mark.usefixtures("cli_env")


def _folder_listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _graph_shape(chat: Path) -> tuple:
    """What ingest produced, without ids or timestamps."""
    d = stats_json(chat)
    return (d["last_processed_seq"], d["total_nodes"], d["active_by_type"], d["archived_by_type"],
            d["edges_valid"], d["edges_invalidated"], d["extraction_count"])


def _edit_message(chat: Path, seq: int, text: str) -> None:
    lines = chat.read_text(encoding="utf-8").split("\n")
    offset = 1 if "chat_metadata" in lines[0] else 0
    message = json.loads(lines[seq + offset])
    message["mes"] = text
    lines[seq + offset] = json.dumps(message, ensure_ascii=False)
    chat.write_text("\n".join(lines), encoding="utf-8")


def test_ingest_a_folder_builds_every_graph_like_one_by_one(ingested: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    copy_samples(folder)
    result = ok("ingest", folder)
    assert result.stdout == ""                       # progress and the summary go to stderr
    assert "ingest" in result.stderr and "ok" in result.stderr
    for name, chat in ingested.items():
        assert _graph_shape(folder / f"{name}.jsonl") == _graph_shape(chat)
        assert stats_json(folder / f"{name}.jsonl")["pending_turns"] == 0


def test_ingest_a_glob_takes_only_the_matching_chats(tmp_path: Path) -> None:
    folder = tmp_path / "g"
    copy_samples(folder, ("group", "chinese"))
    ok("ingest", "--quiet", f"{folder}/gr*.jsonl")
    assert sidecar(folder / "group.jsonl").exists()
    assert not sidecar(folder / "chinese.jsonl").exists()
    nothing = invoke("ingest", f"{folder}/*.txt")
    assert nothing.exit_code == 2 and len(error_lines(nothing)) == 1


def test_jobs_2_over_the_three_samples_gives_the_same_graphs(ingested: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "jobs"
    fresh = copy_samples(folder)
    result = ok("ingest", "--jobs", "2", *fresh.values())
    for name in ("adventure.jsonl", "chinese.jsonl", "group.jsonl"):
        assert name in result.stderr
    for name, chat in ingested.items():
        assert _graph_shape(fresh[name]) == _graph_shape(chat)


def test_until_stops_early_and_the_next_run_continues(chats: dict[str, Path]) -> None:
    chat = chats["group"]
    ok("ingest", "--quiet", "--until", "12", chat)
    part = stats_json(chat)
    assert 0 < part["last_processed_seq"] <= 12
    assert part["pending_turns"] > 0
    ok("ingest", "--quiet", chat)
    assert stats_json(chat)["pending_turns"] == 0


def test_dry_run_lists_batches_and_writes_nothing(chats: dict[str, Path]) -> None:
    chat = chats["group"]
    before = _folder_listing(chat.parent)
    result = ok("ingest", "--dry-run", chat)
    pending = stats_json(chat)["pending_turns"]
    assert f"{pending} batch(es)" in result.stdout and "prompt tokens" in result.stdout
    assert "…" not in result.stdout
    assert _folder_listing(chat.parent) == before
    until = ok("ingest", "--dry-run", "--until", "12", chat)
    assert "#12-#12" in until.stdout and "#13-#13" not in until.stdout


def test_dry_run_on_an_ingested_chat_shows_no_batches_and_keeps_the_sidecar(ingested: dict[str, Path]) -> None:
    chat = ingested["group"]
    before = sidecar(chat).read_bytes()
    result = ok("ingest", "--dry-run", chat)
    assert "0 batch(es)" in result.stdout
    assert sidecar(chat).read_bytes() == before


def test_a_rerun_is_incremental_and_changes_nothing(ingested: dict[str, Path]) -> None:
    before = {n: sidecar(c).read_bytes() for n, c in ingested.items()}
    result = ok("ingest", *ingested.values())
    for name, chat in ingested.items():
        assert f"{chat}: up to date" in result.stderr
        assert sidecar(chat).read_bytes() == before[name]
    assert "0/0" in result.stderr


def test_quiet_prints_nothing_on_success(chats: dict[str, Path]) -> None:
    result = ok("ingest", "--quiet", chats["group"])
    assert result.stdout == "" and result.stderr == ""
    assert sidecar(chats["group"]).exists()


def test_progress_lines_are_not_one_per_batch(chats: dict[str, Path]) -> None:
    result = ok("ingest", chats["adventure"])
    batch_lines = [line for line in result.stderr.splitlines() if ": batch " in line]
    assert 1 <= len(batch_lines) <= 3          # 49 batches in about a second: the last one only
    assert "batch 49/49" in batch_lines[-1]    # 48 replies and the greeting
    assert "…" not in result.stderr            # the summary table is not cut to 80 columns


def test_verbose_logs_every_batch(chats: dict[str, Path]) -> None:
    result = ok("--verbose", "ingest", chats["group"])
    assert sum(": batch " in line for line in result.stderr.splitlines()) == stats_json(chats["group"])[
        "extraction_count"]


def test_an_edited_message_stops_ingest_naming_its_seq_until_rebuild_from(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    before = sidecar(chat).read_bytes()
    _edit_message(chat, 10, "Mira says something else entirely.")
    result = invoke("ingest", chat)
    assert result.exit_code not in (0, 3)
    errors = error_lines(result)
    assert len(errors) == 1
    assert "#10" in errors[0] and "--rebuild-from 10" in errors[0]
    assert sidecar(chat).read_bytes() == before
    ok("ingest", "--quiet", "--rebuild-from", "10", chat)
    after = stats_json(chat)
    assert after["pending_turns"] == 0 and after["last_processed_seq"] == 96
    again = ok("ingest", chat)
    assert "up to date" in again.stderr


def test_rebuild_and_rebuild_from_together_is_a_usage_error(chats: dict[str, Path]) -> None:
    result = invoke("ingest", "--rebuild", "--rebuild-from", "3", chats["group"])
    assert result.exit_code == 2 and len(error_lines(result)) == 1
    assert not sidecar(chats["group"]).exists()


def test_a_locked_graph_is_a_clean_error_naming_the_holder(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat = ingested["group"]
    exported = tmp_path / "group.json"
    ok("export", chat, "-o", exported)
    before = sidecar(chat).read_bytes()
    with store.GraphLock(sidecar(chat)):
        for args in (["ingest", chat, "--wait", "0"], ["recall", chat, "--wait", "0"], ["sleep", chat],
                     ["import", chat, exported, "--force"]):
            result = invoke(*args)
            assert result.exit_code == 1, args
            assert result.stdout == ""
            errors = error_lines(result)
            assert len(errors) == 1, result.stderr
            assert f"locked by pid {os.getpid()}" in errors[0] and "--wait" in errors[0]
            assert "┃" not in result.stderr          # no summary table for a chat that never started
    assert sidecar(chat).read_bytes() == before
    assert not store.backup_path(sidecar(chat)).exists()


def test_one_failing_chat_fails_the_run_but_the_others_complete(chats: dict[str, Path]) -> None:
    bad = chats["chinese"]
    bad.write_text(bad.read_text(encoding="utf-8") + "\n{oops\n", encoding="utf-8")
    result = invoke("ingest", chats["group"], bad)
    assert result.exit_code == 1
    assert stats_json(chats["group"])["pending_turns"] == 0
    assert not sidecar(bad).exists()
    errors = error_lines(result)
    assert len(errors) == 1 and str(bad) in errors[0]
    assert "group.jsonl" in result.stderr and "failed" in result.stderr


def test_bad_memory_lang_is_a_usage_error(chats: dict[str, Path]) -> None:
    result = invoke("ingest", "--memory-lang", "fr", chats["group"])
    assert result.exit_code == 2
    assert not sidecar(chats["group"]).exists()


def test_ctrl_c_saves_the_finished_batches_exits_130_and_a_rerun_completes(
        ingested: dict[str, Path], chats: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from bme_cli.memory import upkeep
    real = upkeep.run_cadence
    calls = []

    def press_ctrl_c_after_the_third_batch(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(upkeep, "run_cadence", press_ctrl_c_after_the_third_batch)
    chat = chats["adventure"]
    result = invoke("ingest", chat)
    assert result.exit_code == 130
    assert "interrupted" in error_lines(result)[-1]
    part = stats_json(chat)
    assert 3 <= part["extraction_count"] < 48 and part["pending_turns"] > 0
    monkeypatch.setattr(upkeep, "run_cadence", real)
    ok("ingest", "--quiet", chat)
    assert _graph_shape(chat) == _graph_shape(ingested["adventure"])


def test_an_unreachable_model_fails_with_exit_4_and_writes_nothing(chats: dict[str, Path],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    port = point_chat_at_nothing(monkeypatch)
    chat = chats["group"]
    result = invoke("--no-cache", "ingest", chat)
    assert result.exit_code == 4
    errors = error_lines(result)
    assert len(errors) == 1 and f"127.0.0.1:{port}" in errors[0] and "#0" in errors[0]  # the greeting first
    assert not sidecar(chat).exists()
    doctor = invoke("doctor")
    assert doctor.exit_code == 4 and "fail" in doctor.stdout


def test_a_narrating_cards_name_is_no_character_though_the_story_names_a_place_after_it(tmp_path: Path) -> None:
    # "The Velnara Accord" narrates; its story's "Velnara" is a station, not that card
    lines = [{"user_name": "Noor", "character_name": "The Velnara Accord", "chat_metadata": {}}]
    for i in range(6):
        lines += [{"name": "The Velnara Accord", "is_user": False, "mes":
                   f"# THE VELNARA ACCORD\nDay {i}. Juniper hums. Welcome to Velnara, says Juniper. Velnara Station turns."},
                  {"name": "Noor", "is_user": True, "mes": "I look at the station."}]
    chat = tmp_path / "accord.jsonl"
    chat.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    ok("ingest", chat, "-q")
    graph = json.loads(sidecar(chat).read_text(encoding="utf-8"))["graph"]
    names = {n["fields"].get("name") for n in graph["nodes"] if n["type"] == "character"}
    assert "The Velnara Accord" not in names and "Juniper" in names
