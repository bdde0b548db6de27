"""A real full disk (issue 17): the chat and its graph on a small tmpfs, filled up to the last
byte or to a few KB, and bme run on it. Each writing command ends with one line and exit 1,
every file keeps its bytes, nothing is left behind; with space again the same command works.

test_disk_faults.py and test_survival.py inject the same faults at the OS calls on any
machine; this test needs to mount a tmpfs (root, or a container that allows it) and is
skipped, saying why, where it cannot.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bme_cli.graph import store
from fakes import NOW
from cli_support import cli_env, error_lines, ingested, ingested_template, invoke, ok, sidecar  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")

SIZE = 4 * 1024 * 1024  # the tmpfs: room for the chat, its graph and a save or two


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 4 MB tmpfs mounted at tmp_path/disk (unmounted afterwards), or a skip saying why not."""
    mount = shutil.which("mount")
    if mount is None or not hasattr(os, "geteuid"):
        pytest.skip("no mount command: cannot make a small tmpfs")
    point = tmp_path / "disk"
    point.mkdir()
    done = subprocess.run([mount, "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(point)],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {done.stderr.strip()[:200]}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=30)


def _fill(folder: Path, leave: int) -> Path:
    """A file that takes all the space in folder's file system but `leave` bytes."""
    filler = folder / "filler"
    with filler.open("wb") as f:
        free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize - leave
        try:
            while free > 0:
                free -= f.write(b"\0" * min(free, 1 << 20))
            f.flush()
            os.fsync(f.fileno())
        except OSError:
            pass  # the disk was fuller than statvfs said: it is full now
    return filler


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != "filler"}


COMMANDS = {"ingest": ["ingest"], "recall": ["recall"], "compress": ["compress", "--force"],
            "reembed": ["reembed"]}


@pytest.mark.parametrize("leave", [0, 16 * 1024], ids=["not a byte free", "16 KB free"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_really_full_disk_is_one_line_and_changes_nothing(small_disk, ingested, command, leave):
    source = ingested["adventure"]
    chat = Path(shutil.copy(source, small_disk / source.name))
    shutil.copy(sidecar(source), sidecar(chat))
    graph = store.load_graph(sidecar(chat), NOW)
    graph.last_processed_seq = 10  # ingest has work to save
    store.save_graph(sidecar(chat), graph)
    before = _snapshot(small_disk)
    filler = _fill(small_disk, leave)
    result = invoke(*COMMANDS[command][:1], chat, *COMMANDS[command][1:])
    assert result.exit_code == 1, result.stderr
    errors = error_lines(result)
    assert len(errors) == 1 and "no space left on the device" in errors[0], result.stderr
    assert _snapshot(small_disk) == before  # every file byte-identical, no temp file, no lock
    filler.unlink()
    ok(*COMMANDS[command][:1], chat, *COMMANDS[command][1:])  # with space again, it just works
    assert store.load_graph(sidecar(chat), NOW) is not None
