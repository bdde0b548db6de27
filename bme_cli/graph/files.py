"""Writing files so a crash never leaves half of one: temp file, fsync, os.replace, fsync the folder.

OSErrors come back as StoreErrors that say what to do (disk full, permissions, a
read-only file system, a missing folder).
"""
from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

from ..errors import StoreError

_CHUNK = 1 << 24  # bytes per os.write: bounded copies of a 400 MB document


def store_error(exc: OSError, action: str, path: Path) -> StoreError:
    """An OSError as a StoreError a user can act on (its errno kept, for callers that can go on)."""
    error = _store_error(exc, action, path)
    error.errno = exc.errno
    return error


def _store_error(exc: OSError, action: str, path: Path) -> StoreError:
    kept = "; the previous file was kept" if action in ("saving", "backing up") else ""
    where = f"while {action} {path}{kept}"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return StoreError(f"no space left on the device {where}", hint="free some disk space and run again")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return StoreError(f"permission denied {where}", hint="check the folder's permissions, or keep "
                          "the graph elsewhere with --graph PATH")
    if exc.errno == errno.EROFS:
        return StoreError(f"read-only file system {where}", hint="keep the graph elsewhere with --graph PATH")
    if exc.errno == errno.ENOENT:
        return StoreError(f"the folder {path.parent} does not exist ({action} {path})",
                          hint="create it, or keep the graph elsewhere with --graph PATH")
    return StoreError(f"{exc.strerror or exc} {where}")


def _write_all(fd: int, chunks: Iterable[bytes | memoryview]) -> None:
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            written = os.write(fd, view[:_CHUNK])
            view = view[written:]


def fsync_dir(folder: Path) -> None:
    """fsync a folder so a rename in it survives a power cut (where the file system allows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename itself has happened
    finally:
        os.close(fd)


def atomic_write(path: Path, chunks: Iterable[bytes | memoryview], mode: int | None = None) -> None:
    """Write a file atomically: temp file beside it, fsync, os.replace, fsync the folder.

    New files get `mode` (default 0o600), existing ones keep theirs unless `mode` is given.
    On any failure the temp file is removed and the old file is untouched; OSErrors
    become StoreErrors.
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode & 0o7777 if mode is None else mode
    except FileNotFoundError:
        mode = 0o600
    except OSError as exc:
        raise store_error(exc, "saving", path) from None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise store_error(exc, "saving", path) from None
    try:
        try:
            _write_all(fd, chunks)
            os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise store_error(exc, "saving", path) from None
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: Path, text: str, mode: int = 0o600) -> None:
    """Write UTF-8 text atomically (an export, say): a new file gets `mode`, an existing one keeps its own.

    Private by default, as every file bme writes (docs/security.md); pass 0o644 to share.
    """
    path = Path(path)
    try:
        kept = os.stat(path).st_mode & 0o7777
    except OSError:
        kept = mode
    atomic_write(path, [text.encode("utf-8")], kept)


def remove_stale_temps(path: Path) -> None:
    """Delete temp files that writers of `path` left when they died before os.replace.

    Only safe while holding the file's lock: no live writer can own one then.
    """
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[A-Za-z0-9_]+\.tmp")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if pattern.fullmatch(name):
            try:
                os.unlink(path.parent / name)
            except OSError:
                pass


def keep_backup(path: Path, backup: Path) -> None:
    """Make `backup` an exact copy of `path` as it is now (a hard link where possible), atomically."""
    tmp = backup.with_name(f".{backup.name}.{os.getpid()}.tmp")
    try:
        try:
            os.link(path, tmp)  # instant and exact; fall back to a copy where links fail
        except OSError:
            shutil.copy2(path, tmp)
        os.replace(tmp, backup)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise store_error(exc, "backing up", path) from None
