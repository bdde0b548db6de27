"""`bme watch`: debounced, recursive, lock-aware ingest of chats as SillyTavern saves them."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from fakes import NOW
from cli_support import SAMPLES, cli_env, ok, sidecar  # noqa: F401

from bme_cli.graph import store
from bme_cli.watcher import ChatWatcher


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_chat_is_due_once_it_stays_unchanged_for_the_settle_time(tmp_path: Path) -> None:
    clock = Clock()
    w = ChatWatcher([tmp_path], settle=3.0, clock=clock)
    assert w.due() == []
    chat = tmp_path / "a" / "b" / "story.jsonl"
    _write(chat, "{}\n")
    _write(tmp_path / "story.bme.json", "{}")          # not a chat
    _write(tmp_path / ".tmp.jsonl", "{}\n")            # an editor's or a writer's temporary file
    assert w.due() == []
    clock.t += 2
    _write(chat, "{}\n{}\n")                           # SillyTavern saves again: the wait restarts
    assert w.due() == []
    clock.t += 2.5
    assert w.due() == []
    clock.t += 1
    assert w.due() == [chat]
    w.ingested(chat, w.signature(chat))
    clock.t += 10
    assert w.due() == []                               # nothing changed since the ingest
    _write(chat, "{}\n{}\n{}\n")
    clock.t += 0.1
    w.due()
    clock.t += 3
    assert w.due() == [chat]
    chat.unlink()
    assert w.due() == [] and chat not in w.seen


def test_a_chat_saved_a_moment_before_the_start_waits_for_the_settle_time(tmp_path: Path) -> None:
    chat = tmp_path / "new.jsonl"
    _write(chat, "{}\n")
    clock, saved = Clock(), chat.stat().st_mtime_ns / 1e9
    w = ChatWatcher([tmp_path], settle=5.0, clock=clock, wall=lambda: saved + 1)
    assert w.due() == []
    clock.t += 4
    assert w.due() == [chat]


def test_chats_already_ingested_are_not_due_at_start_the_others_are(tmp_path: Path) -> None:
    done, todo = tmp_path / "done.jsonl", tmp_path / "todo.jsonl"
    _write(done, "{}\n")
    _write(todo, "{}\n")
    _write(sidecar(done), "{}")
    os.utime(done, ns=(1, 1))
    os.utime(todo, ns=(1, 1))
    w = ChatWatcher([tmp_path], settle=5.0, clock=Clock())
    assert w.due() == [todo]


def _copy(dest: Path) -> dict[str, Path]:
    chats = {"adv": dest / "deep" / "adv.jsonl", "zh": dest / "zh.jsonl"}
    chats["adv"].parent.mkdir(parents=True)
    shutil.copy(SAMPLES / "adventure.jsonl", chats["adv"])
    shutil.copy(SAMPLES / "chinese.jsonl", chats["zh"])
    return chats


def test_watch_once_ingests_each_due_chat_with_one_log_line(tmp_path: Path, cli_env: None) -> None:
    chats = _copy(tmp_path / "chats")
    first = ok("watch", tmp_path / "chats", "--once", "--settle", "0")
    lines = first.stdout.splitlines()
    assert len(lines) == 2 and all(" batch(es), " in line for line in lines)
    assert all(store.load_graph(sidecar(c), NOW).last_processed_seq > 0 for c in chats.values())
    assert ok("watch", tmp_path / "chats", "--once", "--settle", "0").stdout == ""      # up to date: nothing to do


def test_watch_follows_an_edited_message_by_re_extracting_from_it(tmp_path: Path, cli_env: None) -> None:
    chats = _copy(tmp_path / "chats")
    ok("watch", chats["adv"], "--once", "--settle", "0")
    lines = chats["adv"].read_text(encoding="utf-8").splitlines()
    last = json.loads(lines[-1])
    last["mes"] = "A different reply: the tide takes the boat, and the map is lost."
    chats["adv"].write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n", encoding="utf-8")
    out = ok("watch", chats["adv"], "--once", "--settle", "0").stdout
    assert "re-extracted after an edit" in out
    stopped = ok("watch", chats["adv"], "--once", "--settle", "0", "--no-follow-edits").stdout
    assert stopped == ""   # the edit was followed above, so nothing is due


def test_watch_leaves_a_chat_alone_while_another_bme_holds_its_lock(tmp_path: Path, cli_env: None) -> None:
    chats = _copy(tmp_path / "chats")
    with store.GraphLock(sidecar(chats["zh"])):
        out = ok("watch", tmp_path / "chats", "--once", "--settle", "0").stdout
    assert "adv.jsonl" in out and "zh.jsonl" not in out
    assert not sidecar(chats["zh"]).exists()
    assert "zh.jsonl" in ok("watch", tmp_path / "chats", "--once", "--settle", "0").stdout   # due until it is done


def test_ctrl_c_stops_the_watch_cleanly(tmp_path: Path, cli_env: None) -> None:
    chats = _copy(tmp_path / "chats")
    bme = Path(sys.executable).with_name("bme")
    proc = subprocess.Popen([str(bme), "watch", str(tmp_path / "chats"), "--settle", "0", "--interval", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (sidecar(chats["adv"]).exists() and sidecar(chats["zh"]).exists()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else "slow"
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "stopped watching" in err and "Traceback" not in err
    assert len(out.splitlines()) == 2
