"""bme's one atomic file writer: temp file beside the target, fsync, os.replace, fsync the folder.

A crash, a full disk or Ctrl-C leaves either the old file or the new one, never half of
one, and no temp file (except after SIGKILL or a power cut: `remove_stale_temps` clears
those under the file's lock). Every file bme saves goes through here: the sidecar and its
arrays, exports, the chat header, the config template, the response cache (the call log is
SQLite's own; the editor's scratch file replaces nothing).

OSErrors propagate as they are: each caller says what failed in its own words
(graph/files.py as StoreErrors with --graph hints, the cache with --no-cache, ...).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

_CHUNK = 1 << 24  # bytes per os.write: bounded copies of a 400 MB document
NEW_FILE_MODE = 0o600  # private, as every file bme writes (docs/security.md)


def _write_all(fd: int, chunks: Iterable[bytes | memoryview]) -> None:
    """os.write every chunk whole: a short write (a filling disk) is retried until it raises."""
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
        return  # Windows cannot open a folder: its renames are durable without this
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename itself has happened
    finally:
        os.close(fd)


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def atomic_write(path: Path, chunks: Iterable[bytes | memoryview], mode: int | None = None) -> None:
    """Write a file atomically: temp file beside it, fsync, os.replace, fsync the folder.

    The file ends with exactly `mode` (the umask does not apply); with None, an existing file
    keeps its mode and a new one gets NEW_FILE_MODE. On any failure the temp file is removed,
    the old file is untouched and the error (an OSError, say) propagates.
    """
    path = Path(path)
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=".tmp")
    try:
        try:
            _write_all(fd, chunks)
            _set_mode(fd, tmp, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    fsync_dir(path.parent)


def _set_mode(fd: int, tmp: str, mode: int) -> None:
    # os.fchmod is POSIX-only before Python 3.13; Windows' chmod only sets the read-only flag.
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(tmp, mode)


def remove_stale_temps(path: Path) -> None:
    """Delete temp files that writers of `path` left when they died before os.replace.

    Only safe while holding the file's lock: no live writer can own one then.
    """
    pattern = re.compile(rf"{re.escape(_temp_prefix(path))}[A-Za-z0-9_]+\.tmp")
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


def copy_exact(path: Path, backup: Path) -> None:
    """Make `backup` an exact copy of `path` as it is now (a hard link where possible), atomically."""
    # Named like path's own temps, so remove_stale_temps(path) clears one a kill left beside it.
    tmp = backup.with_name(f"{_temp_prefix(path)}{os.getpid()}bak.tmp")
    try:
        try:
            os.link(path, tmp)  # instant and exact; fall back to a copy where links fail
        except OSError:
            shutil.copy2(path, tmp)
        os.replace(tmp, backup)
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp: str | Path) -> None:
    # The error that brought us here is the one to report, not a failed clean-up.
    try:
        os.unlink(tmp)
    except OSError:
        pass
