"""Issue 17's adversarial pass, each finding reproduced through the CLI: a symlinked lock, a
completely full disk, a lock file bme may not open, device files, deep nesting, lone
surrogates. The embedding and transport faults are in test_survival_models.py.

Tests run as root, where permissions do not stop anything, so EACCES and ENOSPC are
injected at the OS calls bme uses, only for paths inside the chat's folder.
"""
from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest

from bme_cli import index_cache
from bme_cli.graph import store
from fakes import NOW
from cli_support import chats, cli_env, error_lines, invoke, ok, sidecar  # noqa: F401
from test_disk_faults import _fail, _fd_inside, _inside, _snapshot, needs_proc

pytestmark = pytest.mark.usefixtures("cli_env")


def _lock(chat: Path) -> Path:
    return store.lock_path(sidecar(chat))


# -- 1. a symlink at <sidecar>.lock ------------------------------------------------------------
@pytest.mark.parametrize("command", ["ingest", "recall", "sleep"])
def test_a_symlinked_lock_is_refused_and_its_target_never_written(chats, tmp_path, command):
    chat = chats["group"]
    ok("ingest", "--quiet", "--until", "6", chat)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    _lock(chat).symlink_to(victim)
    before = sidecar(chat).read_bytes()
    result = invoke(command, chat)
    assert result.exit_code == 1, result.stderr
    assert len(error_lines(result)) == 1 and "symbolic link" in error_lines(result)[0], result.stderr
    assert victim.read_text() == "precious\n"
    assert _lock(chat).is_symlink()  # left for the user to look at, not silently removed
    assert sidecar(chat).read_bytes() == before


def test_a_dangling_symlink_at_the_lock_creates_nothing_where_it_points(chats, tmp_path):
    chat = chats["group"]
    target = tmp_path / "would-be-created"
    _lock(chat).symlink_to(target)
    result = invoke("ingest", "--quiet", chat)
    assert result.exit_code == 1 and "symbolic link" in result.stderr
    assert not target.exists() and not sidecar(chat).exists()


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_lock_path_that_is_not_a_regular_file_is_refused(chats, kind):
    chat = chats["group"]
    (os.mkfifo if kind == "fifo" else os.mkdir)(_lock(chat))
    result = invoke("ingest", "--quiet", chat)
    assert result.exit_code == 1 and len(error_lines(result)) == 1, result.stderr
    assert ("not a regular file" if kind == "fifo" else "is a folder") in result.stderr
    assert not sidecar(chat).exists()


def test_a_stale_lock_file_is_replaced_never_written_into(chats, tmp_path):
    """A hard link at the lock path (or any file bme did not create) keeps its bytes."""
    chat = chats["group"]
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    os.link(victim, _lock(chat))
    ok("ingest", "--quiet", chat)
    assert victim.read_text() == "precious\n"
    assert not _lock(chat).exists()


# -- 2. a completely full disk, and 3. a lock file bme may not open ---------------------------
def _completely_full(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """No byte can be written into the folder (files can still be created, empty)."""
    for name in ("write", "pwrite"):
        real = getattr(os, name)

        def write(fd, data, *args, _real=real):
            if _fd_inside(fd, folder):
                raise _fail(errno.ENOSPC)
            return _real(fd, data, *args)

        monkeypatch.setattr(os, name, write)


def _foreign_lock(monkeypatch: pytest.MonkeyPatch, lock: Path) -> None:
    """The lock file belongs to another user: opening it is EACCES (root ignores modes)."""
    lock.write_text('{"pid": 1, "host": "elsewhere", "started": 0}')
    real_open = os.open

    def open_(path, flags, *args, **kwargs):
        if _inside(path, lock.parent) and Path(os.fspath(path)).name == lock.name:
            if flags & os.O_EXCL:
                raise _fail(errno.EEXIST)
            raise _fail(errno.EACCES)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)


@needs_proc
@pytest.mark.parametrize("command", ["ingest", "recall", "compress", "sleep", "reembed", "synopsis",
                                     "reflect", "import"])
def test_a_completely_full_disk_is_one_line_and_changes_nothing(chats, tmp_path, command, monkeypatch):
    chat = chats["group"]
    ok("ingest", "--quiet", "--until", "6", chat)
    exported = tmp_path / "export.json"
    ok("export", chat, "-o", exported)
    args = {"import": ["import", chat, exported, "--force"], "compress": ["compress", chat, "--force"],
            "ingest": ["ingest", "--quiet", chat]}.get(command, [command, chat])
    before = _snapshot(chat.parent)
    patcher = pytest.MonkeyPatch()
    _completely_full(patcher, chat.parent)
    try:
        result = invoke(*args)
    finally:
        patcher.undo()
    assert result.exit_code == 1, f"exit {result.exit_code}: {result.stderr}"
    assert len(error_lines(result)) == 1 and "no space left on the device" in result.stderr, result.stderr
    backup = store.backup_path(sidecar(chat))
    if backup.exists():  # import links the backup before writing; it equals the kept sidecar
        assert backup.read_bytes() == before[sidecar(chat).name]
        backup.unlink()
    assert _snapshot(chat.parent) == before


@needs_proc
def test_config_init_on_a_full_disk_is_one_line(tmp_path):
    target = tmp_path / "conf" / "config.toml"
    target.parent.mkdir()
    patcher = pytest.MonkeyPatch()
    _completely_full(patcher, target.parent)
    try:
        result = invoke("--config", target, "config", "init")
    finally:
        patcher.undo()
    assert result.exit_code == 1, result.stderr
    assert len(error_lines(result)) == 1 and "no space left on the device" in result.stderr
    assert list(target.parent.iterdir()) == []


@pytest.mark.parametrize("command", ["ingest", "recall", "sleep"])
def test_a_lock_file_bme_may_not_open_is_one_line(chats, command):
    chat = chats["group"]
    ok("ingest", "--quiet", "--until", "6", chat)
    patcher = pytest.MonkeyPatch()
    _foreign_lock(patcher, _lock(chat))
    try:
        result = invoke(command, chat)
    finally:
        patcher.undo()
    assert result.exit_code == 1 and len(error_lines(result)) == 1, result.stderr
    assert "permission denied" in result.stderr and "lock" in result.stderr


# -- 6. device files and other non-regular files -----------------------------------------------
@pytest.mark.parametrize("where", ["import source", "--graph"])
def test_a_device_file_is_refused_as_a_graph_without_reading_it(chats, where):
    chat = chats["group"]
    args = (["import", chat, "/dev/zero"] if where == "import source"
            else ["recall", chat, "--graph", "/dev/zero"])
    result = invoke(*args)
    assert result.exit_code in (1, 3), result.stderr
    assert len(error_lines(result)) == 1 and "not a regular file" in result.stderr, result.stderr
    assert not sidecar(chat).exists()


def test_a_device_file_is_refused_as_a_chat(chats):
    result = invoke("ingest", "/dev/zero")
    assert result.exit_code == 3 and "not a regular file" in result.stderr, result.stderr


@pytest.mark.parametrize("command", ["ingest", "stats", "recall", "import"])
def test_a_file_over_the_size_setting_is_refused_before_it_is_read(chats, tmp_path, monkeypatch, command):
    chat = chats["group"]
    big = tmp_path / "big.jsonl"
    padding = b'{"name": "x", "is_user": true, "mes": "' + b"y" * (1 << 20) + b'"}\n'
    big.write_bytes(chat.read_bytes().rstrip(b"\n") + b"\n" + padding)
    if command == "import":   # a graph document of that size: the big chat's own graph, exported
        ok("ingest", "--quiet", "--until", "4", big)
        ok("export", big, "-o", tmp_path / "graph.json")
        big = tmp_path / "graph.json"
        big.write_bytes(big.read_bytes() + b" " * (1 << 20))
    args = {"ingest": ["ingest", big], "stats": ["stats", big], "recall": ["recall", big, "--query", "x"],
            "import": ["import", chat, big]}[command]
    monkeypatch.setenv("BME_MAX_INPUT_MB", "1")
    result = invoke(*args)
    assert result.exit_code == 3, result.stderr
    [line] = error_lines(result)
    assert f"{big.name} is 1.0 MB, more than the 1 MB bme reads" in line and "BME_MAX_INPUT_MB" in line
    assert not sidecar(chat).exists()
    monkeypatch.setenv("BME_MAX_INPUT_MB", "2")   # under the cap, the same file is read
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr


def test_a_pipe_over_the_size_setting_stops_the_read(chats, tmp_path, monkeypatch):
    chat = chats["group"]
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    import threading

    def feed() -> None:
        with fifo.open("wb") as f:
            try:
                f.write(chat.read_bytes() + b"\n" * (3 << 20))
            except BrokenPipeError:   # bme stopped reading, as it should
                pass

    writer = threading.Thread(target=feed)
    writer.start()
    result = invoke("stats", fifo, env={"BME_MAX_INPUT_MB": "1"})
    writer.join(timeout=10)
    assert result.exit_code == 3 and "is more than the 1 MB bme reads" in result.stderr, result.stderr


def test_a_queries_file_that_is_a_device_is_refused(chats):
    result = invoke("recall", chats["group"], "--queries", "/dev/zero")
    assert result.exit_code == 3 and "not a regular file" in result.stderr, result.stderr


# -- 7. nesting just under the parser's limit ---------------------------------------------------
@pytest.mark.parametrize("depth", [900, 990, 1500, 2000])
def test_a_deeply_nested_node_field_is_accepted_or_refused_in_one_line(chats, tmp_path, depth):
    chat = chats["group"]
    ok("ingest", "--quiet", "--until", "6", chat)
    exported = tmp_path / "export.json"
    ok("export", chat, "-o", exported)
    doc = json.loads(exported.read_text())
    nodes = doc["nodes"] if "nodes" in doc else doc["graph"]["nodes"]
    nodes[0]["fields"]["deep"] = "DEEP"
    text = json.dumps(doc).replace('"DEEP"', "[" * depth + "1" + "]" * depth)
    exported.write_text(text)
    result = invoke("import", chat, exported, "--force")
    assert result.exit_code in (0, 3), result.stderr
    if result.exit_code == 3:
        assert len(error_lines(result)) == 1 and "nested" in result.stderr


# -- 8. lone surrogates and undecodable bytes ---------------------------------------------------
def test_a_lone_surrogate_in_a_chat_is_replaced_at_the_door(chats):
    chat = chats["group"]
    with chat.open("a", encoding="utf-8") as f:
        f.write('\n{"name": "Alice", "is_user": true, "mes": "x \\ud800 y", "send_date": "2024-01-01"}\n')
    ok("ingest", "--quiet", chat)
    ok("recall", chat)
    graph = store.load_graph(sidecar(chat), NOW)  # saved, and loads back
    text = json.dumps([n.fields for n in graph.nodes], ensure_ascii=False)
    assert "\ud800" not in text


def test_undecodable_bytes_in_the_query_are_replaced_and_reported(chats):
    chat = chats["group"]
    ok("ingest", "--quiet", chat)
    query = b"where \xff is it".decode("utf-8", "surrogateescape")  # how Python hands argv over
    result = invoke("recall", chat, "--query", query)
    assert result.exit_code == 0, result.stderr
    assert "not valid UTF-8" in result.stderr


# -- 9. Ctrl-C while the modules load ---------------------------------------------------------
_SIGINT_ON_IMPORT = """
import importlib, os, signal, sys
# a job a non-interactive shell put in the background starts with SIGINT ignored: Ctrl-C as a terminal sends it
signal.signal(signal.SIGINT, signal.default_int_handler)
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":  # the first heavy import: Ctrl-C lands while modules load
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Hook())
module, _, function = sys.argv.pop(1).partition(":")
sys.argv[0] = "bme"
getattr(importlib.import_module(module), function)()
"""


def test_ctrl_c_while_the_modules_load_exits_130_quietly():
    import subprocess
    import sys
    from importlib.metadata import entry_points

    script = entry_points(group="console_scripts", name="bme")
    target = next(iter(script)).value if script else "bme_cli.__main__:main"
    # a command's --help: `bme --version` and `bme --help` alone are answered before typer loads
    done = subprocess.run([sys.executable, "-c", _SIGINT_ON_IMPORT, target, "stats", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "bme: interrupted\n" and done.stdout == ""


# -- 12. smaller points ---------------------------------------------------------------------
def test_a_chat_reached_through_a_symlink_shares_the_graph_of_its_target(chats, tmp_path):
    chat = chats["group"]
    elsewhere = tmp_path / "links"
    elsewhere.mkdir()
    link = elsewhere / "group.jsonl"
    link.symlink_to(chat)
    ok("ingest", "--quiet", "--until", "6", link)
    assert sidecar(chat).exists() and not sidecar(link).exists()
    ok("ingest", "--quiet", chat)
    result = ok("ingest", link)
    assert "up to date" in result.stderr
    assert list(elsewhere.iterdir()) == [link]


@pytest.mark.parametrize("args", [(), ("--no-reinforce",), ("--format", "json")])
def test_recall_from_another_chats_graph_warns_in_one_line(chats, args):
    """Ingest refuses a graph whose processed messages are not the chat's; recall reads it as
    asked, but says so on one line of stderr."""
    ok("ingest", "--quiet", chats["adventure"], chats["group"])
    result = ok("recall", chats["group"], "--graph", sidecar(chats["adventure"]), *args)
    warnings = [line for line in result.stderr.splitlines() if line.startswith("bme: warning:")]
    assert len(warnings) == 1 and "bme ingest` would refuse it" in warnings[0], result.stderr
    assert str(sidecar(chats["adventure"])) in warnings[0] and result.stdout.strip()
    assert invoke("ingest", chats["group"], "--graph", sidecar(chats["adventure"])).exit_code == 1
    own = ok("recall", chats["adventure"], "--graph", sidecar(chats["adventure"]), *args)
    assert "warning" not in own.stderr


def test_the_warning_holds_when_the_graphs_saved_index_is_used(chats):
    """Without quotes the saved index does not depend on the chat; the warning still comes."""
    env = {"BME_EXCERPTS": "false"}
    ok("ingest", "--quiet", chats["adventure"], chats["group"])
    old = os.stat(sidecar(chats["adventure"])).st_mtime - 60  # not just written: its index is kept
    os.utime(sidecar(chats["adventure"]), (old, old))
    ok("recall", "--no-reinforce", chats["adventure"], env=env)  # saves the index
    assert index_cache.cache_path(sidecar(chats["adventure"])).exists()
    result = ok("recall", "--no-reinforce", chats["group"], "--graph", sidecar(chats["adventure"]), env=env)
    assert "`bme ingest` would refuse it" in result.stderr
