"""bme's one atomic writer (bme_cli.atomic): modes kept, nothing half-written, nothing left behind."""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from bme_cli import atomic
from bme_cli.errors import StoreError
from bme_cli.graph import files
from bme_cli.providers.cache import ResponseCache, cache_key
from bme_cli.settings import write_config_template


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_is_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        atomic.atomic_write(tmp_path / "f", [b"a", memoryview(b"bc")])
    finally:
        os.umask(old)
    assert (tmp_path / "f").read_bytes() == b"abc" and mode(tmp_path / "f") == 0o600


def test_an_existing_file_keeps_its_mode_unless_one_is_given(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    path.chmod(0o640)
    atomic.atomic_write(path, [b"new"])
    assert path.read_bytes() == b"new" and mode(path) == 0o640
    atomic.atomic_write(path, [b"newer"], mode=0o600)
    assert path.read_bytes() == b"newer" and mode(path) == 0o600


def test_without_fchmod_as_on_windows_the_mode_is_set_by_path(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "fchmod")
    atomic.atomic_write(tmp_path / "f", [b"x"], mode=0o640)
    assert (tmp_path / "f").read_bytes() == b"x" and mode(tmp_path / "f") == 0o640


def test_a_failed_replace_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")

    def full(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space left"):
        atomic.atomic_write(path, [b"new"])
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f"]


def test_an_interrupt_while_writing_leaves_no_temp(tmp_path: Path) -> None:
    def chunks():
        yield b"half"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.atomic_write(tmp_path / "f", chunks())
    assert list(tmp_path.iterdir()) == []


def test_stale_temps_are_the_writers_own_and_only_those(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "chat.bme.json"
    monkeypatch.setattr(os, "replace", lambda src, dst: None)  # a writer that died before the rename
    atomic.atomic_write(path, [b"x"])
    monkeypatch.undo()
    (tmp_path / ".other.json.abc.tmp").write_text("not ours")
    assert len(list(tmp_path.glob(".chat.bme.json.*.tmp"))) == 1
    atomic.remove_stale_temps(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.json.abc.tmp"]


def test_copy_exact_makes_an_identical_backup(tmp_path: Path) -> None:
    path, backup = tmp_path / "f", tmp_path / "f.bak"
    path.write_bytes(b"\x00bytes")
    atomic.copy_exact(path, backup)
    assert backup.read_bytes() == b"\x00bytes" and sorted(p.name for p in tmp_path.iterdir()) == ["f", "f.bak"]


def test_a_backup_killed_half_way_leaves_a_temp_the_lock_holder_clears(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "chat.bme.json"
    path.write_bytes(b"graph")
    monkeypatch.setattr(os, "replace", lambda src, dst: None)  # killed between the link and the rename
    atomic.copy_exact(path, tmp_path / "chat.bme.json.bak")
    monkeypatch.undo()
    assert len(list(tmp_path.glob("*.tmp"))) == 1
    atomic.remove_stale_temps(path)
    assert [p.name for p in tmp_path.iterdir()] == ["chat.bme.json"]


def test_the_graphs_writer_says_what_failed_as_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist") as info:
        files.atomic_write(tmp_path / "missing" / "f", [b"x"])
    assert info.value.errno == errno.ENOENT


def test_config_template_and_cache_entries_stay_private_over_a_wider_file(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("")
    config.chmod(0o644)
    write_config_template(config, force=True)
    assert mode(config) == 0o600
    cache, key = ResponseCache(tmp_path / "c"), cache_key(a=1)
    cache.put(key, "x")
    entry = tmp_path / "c" / key[:2] / f"{key}.json"
    entry.chmod(0o644)
    cache.put(key, "y")
    assert mode(entry) == 0o600 and cache.get(key) == "y"
