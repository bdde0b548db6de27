"""One writer per sidecar: `<sidecar>.lock` plus flock(2) on it, taken over at once from the dead."""
from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Callable

from ..errors import LockedError, StoreError
from .files import remove_stale_temps, store_error
from .model import now_ms

try:
    import fcntl
except ImportError:  # pragma: no cover - bme runs on POSIX; Windows has no flock
    fcntl = None  # type: ignore[assignment]


def lock_path(path: Path) -> Path:
    """The lock file of a sidecar: `<sidecar>.lock`."""
    return Path(path).with_name(Path(path).name + ".lock")


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


class GraphLock:
    """Serialise bme processes on one sidecar: `<sidecar>.lock` plus flock(2) on it.

    The flock on the inode currently at the lock path is the truth: the kernel drops it
    when the holder dies, so a lock file left by a crash is taken over at once. The file's
    JSON (pid, host, started) only names the holder in the error. A holder unlinks the
    file before releasing; whoever gets the flock re-checks the path still names the
    inode it locked, else retries. Not re-entrant within one process.
    """

    def __init__(self, path: Path, wait: float = 0.0, *, poll: float = 0.05,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.path = Path(path)
        self.lock_path = lock_path(self.path)
        self.wait, self.poll, self._clock, self._sleep = max(0.0, wait), poll, clock, sleep
        self._fd: int | None = None

    def __enter__(self) -> "GraphLock":
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock, polling up to `wait` seconds; raise LockedError naming the holder."""
        if fcntl is None:  # pragma: no cover
            raise StoreError("locking needs a POSIX system (fcntl.flock)")
        deadline = self._clock() + self.wait
        while True:
            fd = self._try_lock()
            if fd is not None:
                self._fd = fd
                self._write_info()
                remove_stale_temps(self.path)
                return
            if self._clock() >= deadline:
                raise LockedError(f"{self.path} is locked by {self._holder()}",
                                  hint="wait for it, or pass --wait SECONDS")
            self._sleep(max(0.0, min(self.poll, deadline - self._clock())))

    def _open(self) -> int | None:
        flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
        try:
            return os.open(self.lock_path, flags | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                return os.open(self.lock_path, flags)
            except FileNotFoundError:
                return None  # released between our two opens: try again
        except OSError as exc:
            raise store_error(exc, "locking", self.path) from None

    def _try_lock(self) -> int | None:
        for _ in range(100):  # each retry means another process released or took it just now
            fd = self._open()
            if fd is None:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock {self.lock_path}: {exc.strerror}",
                                 hint="the file system may not support locks; use --graph PATH") from None
            if _same_file(fd, self.lock_path):
                return fd
            os.close(fd)
        return None

    def _write_info(self) -> None:
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": now_ms()}
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, json.dumps(info).encode(), 0)

    def _holder(self) -> str:
        try:
            info = json.loads(self.lock_path.read_text(encoding="utf-8"))
            pid, host, started = int(info["pid"]), str(info["host"]), int(info["started"])
        except (OSError, ValueError, KeyError, TypeError):
            return "another bme process"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started / 1000))
        where = "" if host == socket.gethostname() else f" on {host}"
        return f"pid {pid}{where} (started {when})"

    def release(self) -> None:
        """Drop the lock (unlink the file first, so waiters re-check and start fresh)."""
        if self._fd is None:
            return
        try:
            if _same_file(self._fd, self.lock_path):
                os.unlink(self.lock_path)
        except OSError:
            pass
        finally:
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        """Whether this object currently holds the lock."""
        return self._fd is not None
