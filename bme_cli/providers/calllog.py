"""A record of every model call, like simonw/llm's logs: task, chat, model, endpoint
(origin only), tokens in and out, time, outcome; prompts and replies only when asked for.

SQLite, not JSON Lines: `bme ingest --jobs N` and separate bme processes write at once,
and SQLite's locking (WAL, a busy timeout) serialises them without torn or interleaved
lines whatever a record's size (a prompt can be 30 KB); `bme log` filters and totals
with SQL instead of reading the whole history; and it is in the standard library.
A record never holds the API key (none of its fields can carry it, and the endpoint is
reduced to scheme://host:port). Writing the log never fails a command: a record that
cannot be written (disk full, locked past the timeout) is dropped and counted.
"""
from __future__ import annotations

import contextvars
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:   # sqlite3 loads when a call is logged or read, not in every process
    import sqlite3

LOG_FILE = "calls.sqlite3"
BUSY_TIMEOUT_MS = 5000
_SCHEMA = """CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, task TEXT NOT NULL, chat TEXT, model TEXT NOT NULL,
    endpoint TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
    prompt_estimate INTEGER NOT NULL, tokens_reported INTEGER NOT NULL, seconds REAL NOT NULL,
    outcome TEXT NOT NULL, detail TEXT, prompt TEXT, reply TEXT);
CREATE INDEX IF NOT EXISTS calls_time ON calls(time);"""

# The chat a command is working on, set around its work (workflow.open_chat_graph), so a
# call made for it is logged under its name; one value per thread (--jobs workers).
current_chat: contextvars.ContextVar[str | None] = contextvars.ContextVar("bme_chat", default=None)


@contextmanager
def chat_scope(chat: str | os.PathLike[str]) -> Iterator[None]:
    """Log the calls made inside the block under this chat file."""
    token = current_chat.set(str(Path(chat).resolve()))
    try:
        yield
    finally:
        current_chat.reset(token)


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_DATA_HOME/bme, else ~/.local/share/bme."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".local", "share")
    return Path(base) / "bme"


def origin(url: str) -> str:
    """scheme://host[:port] of a URL: no path, query, user or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


@dataclass
class CallRecord:
    """One model call. Token counts are the server's when it reported them (tokens_reported),
    else bme's estimate; prompt_estimate is always bme's estimate of what was sent."""

    task: str
    model: str
    endpoint: str
    prompt_tokens: int
    completion_tokens: int
    prompt_estimate: int
    tokens_reported: bool
    seconds: float
    outcome: str                 # ok, cut_off, unusable, rejected, error
    detail: str | None = None
    chat: str | None = None
    time: float = 0.0
    prompt: str | None = None
    reply: str | None = None


_COLUMNS = [f.name for f in fields(CallRecord)]


class CallLog:
    """Appends CallRecords to one SQLite file and reads them back, filtered."""

    def __init__(self, path: Path, *, with_text: bool = False):
        self.path, self.with_text = Path(path), with_text
        self.dropped = 0
        self._lock = threading.Lock()
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        import sqlite3
        if not self._ready:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.path.parent, 0o700)
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)   # prompts may hold chat text
            os.close(fd)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        if not self._ready:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
            self._ready = True
        return db

    def record(self, rec: CallRecord) -> None:
        """Append one record (with the current chat and time filled in); never raises."""
        rec.chat = rec.chat if rec.chat is not None else current_chat.get()
        rec.time = rec.time or time.time()
        if not self.with_text:
            rec.prompt = rec.reply = None
        row = asdict(rec)
        import sqlite3
        try:
            with self._lock, closing(self._connect()) as db:
                db.execute(f"INSERT INTO calls ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                           [row[c] for c in _COLUMNS])
        except (sqlite3.Error, OSError):
            self.dropped += 1

    def query(self, *, chat: str | None = None, task: str | None = None, since: float | None = None,
              model: str | None = None, limit: int | None = None) -> list[CallRecord]:
        """Matching records, newest first (chat matches the path, or its end such as the file name)."""
        if not self.path.is_file():
            return []
        where, args = _filters(chat=chat, task=task, since=since, model=model)
        # Without with_text the (possibly large) prompts and replies are not even read.
        cols = [c if self.with_text or c not in ("prompt", "reply") else f"NULL AS {c}" for c in _COLUMNS]
        sql = f"SELECT {', '.join(cols)} FROM calls {where} ORDER BY time DESC, id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        uri = self.path.resolve().as_uri() + "?mode=ro"
        import sqlite3
        with closing(sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)) as db:
            rows = db.execute(sql, args).fetchall()
        return [CallRecord(**dict(zip(_COLUMNS, r))) for r in rows]


def _filters(**given: Any) -> tuple[str, list[Any]]:
    clauses, args = [], []
    if given.get("chat"):
        chat = given["chat"]
        clauses.append("(chat = ? OR chat LIKE ? ESCAPE '\\')")
        args += [chat, "%/" + chat.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")]
    for name in ("task", "model"):
        if given.get(name):
            clauses.append(f"{name} = ?")
            args.append(given[name])
    if given.get("since") is not None:
        clauses.append("time >= ?")
        args.append(given["since"])
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", args


def totals(records: list[CallRecord]) -> dict[str, Any]:
    """Calls, tokens, seconds and outcomes over records."""
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    return {"calls": len(records), "prompt_tokens": sum(r.prompt_tokens for r in records),
            "completion_tokens": sum(r.completion_tokens for r in records),
            "seconds": round(sum(r.seconds for r in records), 3), "outcomes": outcomes}


@dataclass(frozen=True)
class TokenHistory:
    """What past calls of one task and model cost, for estimates before anything is sent."""

    calls: int
    prompt_ratio: float          # server-counted prompt tokens per bme-estimated one
    completion_mean: float


def history(log: CallLog, task: str, model: str, recent: int = 50) -> TokenHistory | None:
    """The last calls of a task with a model that the server counted tokens for, summarised."""
    import sqlite3
    try:
        rows = [r for r in log.query(task=task, model=model, limit=recent * 4)
                if r.tokens_reported and r.outcome in ("ok", "cut_off")][:recent]
    except sqlite3.Error:
        return None
    estimated = sum(r.prompt_estimate for r in rows)
    if not rows or not estimated:
        return None
    return TokenHistory(len(rows), sum(r.prompt_tokens for r in rows) / estimated,
                        sum(r.completion_tokens for r in rows) / len(rows))
