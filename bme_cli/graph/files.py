"""The graph's files written through bme's one atomic writer (bme_cli.atomic), its
OSErrors turned into StoreErrors that say what to do (disk full, permissions, a read-only
file system, a missing folder).
"""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Iterable

from .. import atomic as _atomic
from ..atomic import fsync_dir, remove_stale_temps
from ..errors import StoreError

__all__ = ["atomic_write", "fsync_dir", "keep_backup", "remove_stale_temps", "store_error", "write_text_atomic"]


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


def atomic_write(path: Path, chunks: Iterable[bytes | memoryview], mode: int | None = None) -> None:
    """bme_cli.atomic.atomic_write, its OSErrors as StoreErrors (new files 0o600, existing keep theirs)."""
    try:
        _atomic.atomic_write(path, chunks, mode)
    except OSError as exc:
        raise store_error(exc, "saving", Path(path)) from None


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


def keep_backup(path: Path, backup: Path) -> None:
    """Make `backup` an exact copy of `path` as it is now (a hard link where possible), atomically."""
    try:
        _atomic.copy_exact(path, backup)
    except OSError as exc:
        raise store_error(exc, "backing up", path) from None
