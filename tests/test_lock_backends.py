"""The lock without flock: Windows' msvcrt.locking (simulated here with POSIX record locks,
which are per process as Windows' are per handle) and the pidfile fallback, run on Linux."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bme_cli.errors import LockedError
from bme_cli.graph import lock as lockmod
from bme_cli.graph.lock import GraphLock, lock_path

FAKE_MSVCRT = textwrap.dedent('''
    import errno, fcntl
    LK_UNLCK, LK_NBLCK = 0, 2
    def locking(fd, mode, nbytes):
        """msvcrt.locking as Windows does it: bytes from the current position, EACCES when held."""
        try:
            fcntl.lockf(fd, fcntl.LOCK_UN if mode == LK_UNLCK else fcntl.LOCK_EX | fcntl.LOCK_NB, nbytes, 0, 1)
        except BlockingIOError:
            raise OSError(errno.EACCES, "Permission denied") from None
''')


class FakeMsvcrt:
    LK_UNLCK, LK_NBLCK = 0, 2

    @staticmethod
    def locking(fd: int, mode: int, nbytes: int) -> None:
        try:
            fcntl.lockf(fd, fcntl.LOCK_UN if mode == 0 else fcntl.LOCK_EX | fcntl.LOCK_NB, nbytes, 0, 1)
        except BlockingIOError:
            raise OSError(errno.EACCES, "Permission denied") from None


def _holder(sidecar: Path, backend: str) -> subprocess.Popen:
    """Another process holding the lock with that backend until its stdin closes."""
    code = textwrap.dedent(f'''
        import sys, types
        from bme_cli.graph import lock
        fake = types.ModuleType("msvcrt"); exec({FAKE_MSVCRT!r}, fake.__dict__)
        lock.fcntl = None
        lock.msvcrt = fake if {backend!r} == "msvcrt" else None
        with lock.GraphLock({str(sidecar)!r}):
            print("held", flush=True)
            sys.stdin.read()
    ''')
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture(params=["msvcrt", "pidfile"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(lockmod, "fcntl", None)
    monkeypatch.setattr(lockmod, "msvcrt", FakeMsvcrt if request.param == "msvcrt" else None)
    assert lockmod.backend() == request.param
    return request.param


def test_a_second_process_is_kept_out_and_told_who_holds_it(backend: str, tmp_path: Path) -> None:
    sidecar = tmp_path / "chat.bme.json"
    proc = _holder(sidecar, backend)
    try:
        with pytest.raises(LockedError, match=rf"locked by pid {proc.pid}|locked by another bme process"):
            GraphLock(sidecar).acquire()
    finally:
        proc.stdin.close()
        proc.wait(30)
    with GraphLock(sidecar) as held:       # released: ours now
        assert held.held
        assert json.loads(lock_path(sidecar).read_text())["pid"] == os.getpid()
    assert not lock_path(sidecar).exists()


def test_a_lock_file_left_by_a_dead_process_is_taken_over(backend: str, tmp_path: Path) -> None:
    sidecar = tmp_path / "chat.bme.json"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock_path(sidecar).write_text(json.dumps({"pid": int(dead.stdout), "host": socket.gethostname(),
                                              "started": 1}))
    with GraphLock(sidecar):
        assert json.loads(lock_path(sidecar).read_text())["pid"] == os.getpid()


def test_pidfile_never_takes_a_lock_named_by_another_host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(lockmod, "fcntl", None)
    monkeypatch.setattr(lockmod, "msvcrt", None)
    sidecar = tmp_path / "chat.bme.json"
    lock_path(sidecar).write_text(json.dumps({"pid": 1, "host": "another-machine", "started": 1}))
    with pytest.raises(LockedError, match="on another-machine"):
        GraphLock(sidecar).acquire()
