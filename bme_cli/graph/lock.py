"""One writer per sidecar: `<sidecar>.lock`, locked by the OS, taken over at once from the dead.

Three ways to hold it, chosen by what the platform has (`BACKEND`):

* "flock" (Linux, macOS, BSD): flock(2) on the lock file;
* "msvcrt" (Windows): msvcrt.locking on its first byte; Windows cannot unlink an open file,
  so the holder closes before unlinking and a waiter takes over a file left in place;
* "pidfile" (neither): the O_EXCL creation of the file is the lock; a file naming a process
  of this host that no longer runs is stale and taken over.

The OS drops flock and msvcrt locks when the holder dies, so a crash never leaves a lock
behind; tests/test_lock_backends.py runs the last two on Linux.
"""
from __future__ import annotations

import errno
import json
import os
import socket
import stat
import time
from pathlib import Path
from typing import Callable

from ..errors import LockedError, StoreError
from .files import remove_stale_temps, store_error
from .model import now_ms

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
try:
    import msvcrt  # type: ignore[import-not-found]
except ImportError:  # every other platform
    msvcrt = None


def backend() -> str:
    """How this platform holds the lock: "flock", "msvcrt" or "pidfile"."""
    return "flock" if fcntl is not None else "msvcrt" if msvcrt is not None else "pidfile"


def _os_lock(fd: int) -> bool:
    """Lock fd without waiting; False when another process holds it."""
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    os.lseek(fd, 0, os.SEEK_SET)
    try:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError as exc:  # EACCES / EDEADLOCK: held by another process
        if exc.errno in (errno.EACCES, errno.EDEADLK, getattr(errno, "EDEADLOCK", errno.EDEADLK)):
            return False
        raise
    return True


def _os_unlock(fd: int) -> None:
    if fcntl is None and msvcrt is not None:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        except OSError:
            pass  # closing the file drops it anyway


def _alive(pid: int) -> bool:
    """Whether a process of this host runs with that pid (the pidfile backend: never on Windows,
    where os.kill would end the process)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it runs, as another user
    return True


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
    """Serialise bme processes on one sidecar: `<sidecar>.lock` plus flock(2) on it (flock backend).

    The flock on the inode currently at the lock path is the truth: the kernel drops it
    when the holder dies, so a lock file left by a crash is taken over at once. The file's
    JSON (pid, host, started) only names the holder in the error. A holder unlinks the
    file before releasing; whoever gets the flock re-checks the path still names the
    inode it locked, else retries. Not re-entrant within one process.

    The lock never writes through a link or into a file it did not create: it is opened
    with O_NOFOLLOW, anything but a regular file is refused, and a stale lock file left
    by a dead holder is unlinked (once flocked) and created afresh, never truncated.
    (On Windows and without any OS lock, see the module docstring.)
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

    def _open(self) -> tuple[int, bool] | None:
        """(fd, created) for the lock file, or None if it vanished between two opens."""
        flags = (os.O_RDWR | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
                 | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0))
        try:
            return os.open(self.lock_path, flags | os.O_CREAT | os.O_EXCL, 0o600), True
        except FileExistsError:
            pass
        except OSError as exc:
            raise self._refusal(exc) from None
        try:
            fd = os.open(self.lock_path, flags)  # O_NONBLOCK: a FIFO here must not hang us
        except FileNotFoundError:
            return None  # released between our two opens: try again
        except OSError as exc:
            raise self._refusal(exc) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(f"{self.lock_path} is not a regular file; refusing to use it as the lock",
                             hint="move it away and run again")
        return fd, False

    def _refusal(self, exc: OSError) -> StoreError:
        """Why the lock file cannot be opened, as a StoreError naming it."""
        if exc.errno == errno.ELOOP or os.path.islink(self.lock_path):
            return StoreError(f"{self.lock_path} is a symbolic link; bme never writes through one",
                              hint="remove the link and run again")
        if exc.errno in (errno.EACCES, errno.EPERM) and os.path.lexists(self.lock_path):
            return StoreError(f"permission denied opening the lock file {self.lock_path}",
                              hint="it belongs to someone else: if no bme is running on this graph, remove it")
        if exc.errno == errno.EISDIR:
            return StoreError(f"{self.lock_path} is a folder; refusing to use it as the lock",
                              hint="move it away and run again")
        return store_error(exc, "locking", self.path)

    def _try_lock(self) -> int | None:
        for _ in range(100):  # each retry means another process released or took it just now
            opened = self._open()
            if opened is None:
                continue
            fd, created = opened
            if backend() == "pidfile":
                if created:
                    return fd
                os.close(fd)
                if not self._take_over_dead():
                    return None
                continue
            try:
                locked = _os_lock(fd)
            except OSError as exc:
                os.close(fd)
                raise StoreError(f"cannot lock {self.lock_path}: {exc.strerror}",
                                 hint="the file system may not support locks; use --graph PATH") from None
            if not locked:
                os.close(fd)
                return None
            if _same_file(fd, self.lock_path):
                if created:
                    return fd
                if backend() == "msvcrt":  # a file a holder could not unlink: ours now, emptied
                    os.ftruncate(fd, 0)
                    return fd
                self._unlink_stale(fd)  # a dead holder's file: replace it rather than write into it
            os.close(fd)
        return None

    def _take_over_dead(self) -> bool:
        """pidfile: remove a lock file naming a process of this host that no longer runs."""
        holder = self._info()
        if holder is None or holder[1] != socket.gethostname() or _alive(holder[0]):
            return False
        try:
            os.unlink(self.lock_path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._refusal(exc) from None
        return True

    def _unlink_stale(self, fd: int) -> None:
        """Remove the lock file we hold the flock of but did not create (left by a dead holder)."""
        try:
            os.unlink(self.lock_path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            os.close(fd)
            raise self._refusal(exc) from None

    def _write_info(self) -> None:
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": now_ms()}
        try:
            os.lseek(self._fd, 0, os.SEEK_SET)
            os.write(self._fd, json.dumps(info).encode())  # a file we just created (or emptied)
        except OSError as exc:
            self.release()  # a full disk: leave no empty lock file behind
            raise store_error(exc, "locking", self.path) from None

    def _info(self) -> tuple[int, str, int] | None:
        """(pid, host, started) from the lock file, or None when it cannot be read."""
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
            try:
                raw = os.read(fd, 4096) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
            finally:
                os.close(fd)
            info = json.loads(raw.decode("utf-8"))
            return int(info["pid"]), str(info["host"]), int(info["started"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _holder(self) -> str:
        info = self._info()
        if info is None:
            return "another bme process"
        pid, host, started = info
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started / 1000))
        where = "" if host == socket.gethostname() else f" on {host}"
        return f"pid {pid}{where} (started {when})"

    def release(self) -> None:
        """Drop the lock (unlink the file first, so waiters re-check and start fresh; on Windows,
        which cannot unlink an open file, close first and unlink after if still ours)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        ours = _same_file(fd, self.lock_path)
        if backend() == "msvcrt":
            _os_unlock(fd)
            os.close(fd)
            if ours:
                try:
                    os.unlink(self.lock_path)
                except OSError:
                    pass  # a waiter holds it already, or it is gone
            return
        try:
            if ours:
                os.unlink(self.lock_path)
        except OSError:
            pass
        finally:
            os.close(fd)

    @property
    def held(self) -> bool:
        """Whether this object currently holds the lock."""
        return self._fd is not None
