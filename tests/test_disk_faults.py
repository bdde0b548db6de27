"""A read-only folder, a full disk or a failing disk while bme saves: every writing command
ends with one clear error line and exit code 1, the previous sidecar is byte-identical, and
no temporary file is left behind.

Tests run as root, where chmod does not stop writes, so the faults are injected at the OS
boundary bme uses (os.open, os.write, os.fsync, os.replace...) and only for paths inside the
chat's folder: a read-only mount refuses every create, rename, link and unlink there; a
full disk accepts a short write and then fails with ENOSPC; a dying disk fails fsync with
EIO. The commands run in-process through the CLI (typer's CliRunner).
"""
from __future__ import annotations

import builtins
import errno
import io
import os
import re
import stat
from pathlib import Path
from typing import Callable

import pytest

from bme_cli.errors import StoreError
from bme_cli.graph import store
from fakes import NOW
from cli_support import chats, cli_env, error_lines, frozen_clock, invoke, ok, sidecar  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _inside(path: object, folder: Path) -> bool:
    try:
        return Path(os.path.abspath(os.fspath(path))).is_relative_to(folder)
    except TypeError:
        return False  # a file descriptor (dir_fd calls): not a path of ours


def _fd_inside(fd: int, folder: Path) -> bool:
    try:
        return _inside(os.readlink(f"/proc/self/fd/{fd}"), folder)
    except OSError:
        return False


def _fail(code: int) -> OSError:
    return OSError(code, os.strerror(code))


def read_only(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """The folder is on a read-only mount: reading works, anything that writes gets EROFS."""
    real_open = os.open

    def open_(path, flags, *args, **kwargs):
        if flags & _WRITE_FLAGS and _inside(path, folder):
            raise _fail(errno.EROFS)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    real_io_open = io.open

    def io_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and _inside(file, folder):
            raise _fail(errno.EROFS)
        return real_io_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", io_open)
    monkeypatch.setattr(builtins, "open", io_open)
    for name in ("replace", "rename", "link"):
        real = getattr(os, name)

        def two_paths(src, dst, *args, _real=real, **kwargs):
            if _inside(src, folder) or _inside(dst, folder):
                raise _fail(errno.EROFS)
            return _real(src, dst, *args, **kwargs)

        monkeypatch.setattr(os, name, two_paths)
    for name in ("unlink", "remove", "mkdir", "chmod"):
        real = getattr(os, name)

        def one_path(path, *args, _real=real, **kwargs):
            if _inside(path, folder):
                raise _fail(errno.EROFS)
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, one_path)


def disk_full(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """The disk fills up: one short write into the folder, then ENOSPC."""
    real_write, calls = os.write, []

    def write(fd, data):
        if not _fd_inside(fd, folder):
            return real_write(fd, data)
        calls.append(fd)
        if len(calls) > 1:
            raise _fail(errno.ENOSPC)
        return real_write(fd, bytes(data[:7]))

    monkeypatch.setattr(os, "write", write)


def dying_disk(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Writes seem to work, but fsync reports an I/O error (the data never reached the disk)."""
    real_fsync = os.fsync

    def fsync(fd):
        if _fd_inside(fd, folder):
            raise _fail(errno.EIO)
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)


FAULTS: dict[str, tuple[Callable, str]] = {
    "read-only folder": (read_only, "read-only file system while"),
    "full disk": (disk_full, "no space left on the device while saving"),
    "failing fsync": (dying_disk, "Input/output error"),
}
needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell fds apart")


@pytest.fixture
def disk():
    """Break the disk under a folder with disk.breaks(fault, folder); disk.heal() mends it.

    A MonkeyPatch of its own: undoing the test's `monkeypatch` would also undo conftest's
    environment isolation."""
    patcher = pytest.MonkeyPatch()

    class Disk:
        @staticmethod
        def breaks(fault: str, folder: Path) -> str:
            inject, expected = FAULTS[fault]
            inject(patcher, folder)
            return expected

        heal = staticmethod(patcher.undo)

    yield Disk
    patcher.undo()


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _assert_failed_cleanly(result, expected: str, folder: Path, before: dict[str, bytes]) -> None:
    assert result.exit_code == 1, f"exit {result.exit_code}\nstderr: {result.stderr}"
    errors = error_lines(result)
    assert len(errors) == 1, result.stderr
    assert expected in errors[0], errors[0]
    assert result.stdout == ""
    # byte-identical files, and nothing added: no temp file, no lock, no .bak
    assert _snapshot(folder) == before


@pytest.fixture
def half_ingested(chats: dict[str, Path]) -> Path:
    """The adventure chat with the first batches ingested: the next ingest has work to save."""
    chat = chats["adventure"]
    ok("ingest", "--quiet", "--until", "10", chat)
    assert store.load_graph(sidecar(chat), NOW).last_processed_seq == 10
    return chat


@needs_proc
@pytest.mark.parametrize("fault", list(FAULTS))
def test_ingest_over_an_existing_graph_fails_cleanly_and_keeps_it(half_ingested, fault, disk):
    folder = half_ingested.parent
    before = _snapshot(folder)
    expected = disk.breaks(fault, folder)
    result = invoke("ingest", "--quiet", half_ingested)
    disk.heal()
    _assert_failed_cleanly(result, expected, folder, before)
    assert store.load_graph(sidecar(half_ingested), NOW).last_processed_seq == 10
    ok("ingest", "--quiet", half_ingested)  # once the disk is back, the run completes
    assert store.load_graph(sidecar(half_ingested), NOW).last_processed_seq > 10


@needs_proc
@pytest.mark.parametrize("fault", list(FAULTS))
def test_first_ingest_on_a_broken_disk_creates_nothing(chats, fault, disk):
    chat = chats["group"]
    folder = chat.parent
    before = _snapshot(folder)
    expected = disk.breaks(fault, folder)
    result = invoke("ingest", "--quiet", chat)
    disk.heal()
    _assert_failed_cleanly(result, expected, folder, before)
    assert not sidecar(chat).exists()


@needs_proc
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("command", ["recall", "import", "reembed", "compress"])
def test_every_writing_command_fails_cleanly_and_keeps_the_graph(half_ingested, tmp_path, fault, command,
                                                                 disk):
    folder = half_ingested.parent
    exported = tmp_path / "export.json"
    ok("export", half_ingested, "-o", exported)
    args = {"recall": ["recall", half_ingested],
            "import": ["import", half_ingested, exported, "--force"],
            "reembed": ["reembed", half_ingested],
            "compress": ["compress", half_ingested, "--force"]}[command]
    if command == "recall" and fault == "read-only folder":
        pytest.skip("recall reads without reinforcement there: "
                    "test_recall_in_a_read_only_folder_skips_reinforcement_and_changes_nothing")
    before = _snapshot(folder)
    expected = disk.breaks(fault, folder)
    result = invoke(*args)
    disk.heal()
    if command == "import":
        # the backup is made (a hard link) before the new graph is written: it may stay,
        # identical to the sidecar that was kept
        backup = store.backup_path(sidecar(half_ingested))
        if backup.exists():
            assert backup.read_bytes() == before[sidecar(half_ingested).name]
            backup.unlink()
    _assert_failed_cleanly(result, expected, folder, before)


@needs_proc
@pytest.mark.usefixtures("frozen_clock")
@pytest.mark.parametrize("args", [(), ("--format", "json")])
def test_recall_in_a_read_only_folder_skips_reinforcement_and_changes_nothing(half_ingested, args, disk):
    folder = half_ingested.parent
    expected = ok("recall", "--no-reinforce", half_ingested, *args).stdout
    before = _snapshot(folder)
    disk.breaks("read-only folder", folder)
    result = invoke("recall", half_ingested, *args)
    disk.heal()
    assert result.exit_code == 0, result.stderr
    assert result.stdout == expected and expected.strip()
    assert "read-only file system while locking" in result.stderr
    assert "recalling without reinforcement" in result.stderr and not error_lines(result)
    assert _snapshot(folder) == before  # no lock, no index, no reinforced sidecar


@needs_proc
@pytest.mark.parametrize("fault", list(FAULTS))
def test_export_to_a_broken_disk_leaves_no_partial_file(half_ingested, tmp_path, fault, disk):
    out = tmp_path / "out"
    out.mkdir()
    (out / "graph.json").write_text("previous export\n")
    before = _snapshot(out)
    expected = disk.breaks(fault, out)
    result = invoke("export", half_ingested, "-o", out / "graph.json")
    disk.heal()
    assert result.exit_code == 1 and len(error_lines(result)) == 1, result.stderr
    assert expected.split(" while")[0] in error_lines(result)[0]
    assert _snapshot(out) == before


@needs_proc
def test_fault_injection_really_blocks_writes_into_the_folder(tmp_path, disk):
    """The harness itself: without this the tests above could pass by writing nothing."""
    folder = tmp_path / "ro"
    folder.mkdir()
    disk.breaks("read-only folder", folder)
    for write in (lambda: (folder / "x").write_text("x"), lambda: os.open(folder / "y", os.O_CREAT | os.O_WRONLY)):
        with pytest.raises(OSError) as e:
            write()
        assert e.value.errno == errno.EROFS
    with pytest.raises(StoreError, match="read-only file system while saving"):
        store.atomic_write(folder / "z", [b"z"])
    (tmp_path / "elsewhere").write_text("fine")  # other folders are untouched
    assert (folder / "x").exists() is False and list(folder.iterdir()) == []
    disk.heal()
    disk.breaks("full disk", folder)
    with pytest.raises(OSError) as e:
        with open(folder / "y", "wb", buffering=0) as f:
            os.write(f.fileno(), b"0123456789")
            os.write(f.fileno(), b"more")
    assert e.value.errno == errno.ENOSPC


# -- what bme writes: private files, and never the key -------------------------------------------
def test_files_bme_writes_are_private_and_never_hold_the_api_key(chats, openai_stub, tmp_path, monkeypatch):
    from bme_cli.graph.store import lock_path
    from test_crash import heuristic_brain

    key = "sk-private-5e1f0c2a9b7d"
    openai_stub.chat_content = heuristic_brain
    monkeypatch.setenv("BME_CHAT_BASE_URL", openai_stub.base_url)  # embeddings inherit it, and the key
    monkeypatch.setenv("BME_API_KEY", key)
    chat = chats["group"]
    old_umask = os.umask(0)  # bme must not rely on the user's umask for privacy
    try:
        runs = [ok("--verbose", "ingest", chat), ok("export", chat, "-o", tmp_path / "export.json")]
        with store.GraphLock(sidecar(chat)):
            lock_mode = stat.S_IMODE(lock_path(sidecar(chat)).stat().st_mode)
    finally:
        os.umask(old_umask)
    assert openai_stub.requests_to("chat") and openai_stub.requests_to("embeddings")
    for req in openai_stub.requests:
        assert req.headers.get("Authorization") == f"Bearer {key}" and key.encode() not in req.raw
    assert all(key not in r.stdout + r.stderr for r in runs)
    assert "POST" in runs[0].stderr  # the verbose request log was written, without the key
    assert lock_mode == 0o600
    assert stat.S_IMODE(sidecar(chat).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "export.json").stat().st_mode) == 0o600
    cache = tmp_path / "xdg-cache" / "bme"
    cached = [p for p in cache.rglob("*") if p.is_file()]
    assert cached, "the response cache was not used"
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in cached)
    assert all(stat.S_IMODE(d.stat().st_mode) == 0o700 for d in [cache, *cache.rglob("*")] if d.is_dir())
    calls = tmp_path / "xdg-data" / "bme"
    logged = [p for p in calls.iterdir() if p.is_file()]
    assert [p.name for p in logged if p.suffix == ".sqlite3"], "the call log was not written"
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in logged)
    assert stat.S_IMODE(calls.stat().st_mode) == 0o700
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]


def test_no_command_takes_a_key_on_the_command_line():
    """Keys come from the environment or the config file, never from argv (ps, shell history)."""
    import typer

    from bme_cli.cli import app

    options: list[str] = []

    def walk(cmd) -> None:  # noqa: ANN001 - a click command or group
        options.extend(o for p in cmd.params for o in getattr(p, "opts", []))
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    assert "--graph" in options and "--wait" in options  # the walk saw the commands' options
    assert not [o for o in options if re.search(r"key|secret|token|password", o, re.I)]


def test_security_doc_names_only_tests_that_exist():
    """docs/security.md backs each claim with `tests/<file>::<test>`; a renamed test must not
    leave a claim pointing at nothing."""
    root = Path(__file__).resolve().parent
    doc = (root.parent / "docs" / "security.md").read_text(encoding="utf-8")
    refs = set(re.findall(r"(test_\w+\.py)::(test_\w+)", doc))
    assert len(refs) > 40
    missing = [f"{f}::{name}" for f, name in sorted(refs)
               if not (root / f).is_file() or not re.search(rf"^def {name}\(", (root / f).read_text(encoding="utf-8"), re.M)]
    assert missing == []
