"""On-disk response cache: identical model requests are answered without paying twice.

One JSON file per key under two-character shard folders, written atomically, readable
by the user only. Keys are sha256 digests of the request's identity (endpoint, model,
prompt, schema, sampling); the API key is never part of a key or a stored value.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..atomic import atomic_write
from ..errors import StoreError

_FORMAT = 1


def default_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_CACHE_HOME/bme, else ~/.cache/bme."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".cache")
    return Path(base) / "bme"


def cache_key(**parts: Any) -> str:
    """A stable sha256 hex digest of the given request parts (JSON-canonicalised)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()   # a lone surrogate too


class ResponseCache:
    """A directory of cached reply contents, one file per key."""

    def __init__(self, dir: Path):
        self.dir = Path(dir)

    def _path(self, key: str) -> Path:
        if len(key) < 8 or not all(c in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        """The stored content for key, or None (a missing or unreadable entry is a miss)."""
        path = self._path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        content = data.get("content") if isinstance(data, dict) else None
        return content if isinstance(content, str) else None

    def put(self, key: str, content: str) -> None:
        """Store content under key atomically (file mode 0600, folders 0700)."""
        path = self._path(key)
        try:
            for d in (self.dir, path.parent):
                d.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.dir, 0o700)
            # ASCII escapes: a reply may hold a lone surrogate ("\ud83d"), which UTF-8 cannot encode
            entry = json.dumps({"v": _FORMAT, "content": content})
            atomic_write(path, [entry.encode("utf-8")], mode=0o600)
        except OSError as e:
            raise StoreError(f"cannot write the response cache in {self.dir}: {e.strerror or e}",
                             "free some disk space, fix the folder's permissions, or use --no-cache") from None

    def _entries(self) -> list[Path]:
        if not self.dir.is_dir():
            return []
        return [p for p in self.dir.glob("??/*.json") if not p.name.startswith(".")]

    def stats(self) -> tuple[int, int]:
        """(number of entries, total bytes)."""
        entries = self._entries()
        return len(entries), sum(p.stat().st_size for p in entries)

    def clear(self) -> int:
        """Delete every entry (and leftover temporary files); returns how many entries went."""
        entries = self._entries()
        for p in entries:
            p.unlink(missing_ok=True)
        if self.dir.is_dir():
            for tmp in [*self.dir.glob("??/.*.json.*.tmp"), *self.dir.glob("??/.tmp-*")]:  # older bme: .tmp-*
                tmp.unlink(missing_ok=True)
            for shard in self.dir.glob("??"):
                if shard.is_dir() and not any(shard.iterdir()):
                    shard.rmdir()
        return len(entries)
