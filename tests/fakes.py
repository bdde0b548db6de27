"""Test doubles shared by the pipeline tests: a scripted chat model, a word-hash embedder,
seeded ids, a ticking clock, and tiny chat objects shaped like bme_cli.chat's.

    model = ScriptedChatModel({"extract": [reply1, reply2], "conflict": {"action": "add"}})
    model = ScriptedChatModel([reply1, reply2])          # one queue for every task kind
    model = ScriptedChatModel({"extract": lambda task: ...}, fallback=heuristic)

A reply is a dict, a pydantic model, a JSON string, a callable(task) returning one of those,
or an exception instance to raise. Every reply is validated with the task's response model
(a reply that does not validate raises InvalidReplyError, as a real provider would after its
retries), and every task seen is recorded in `model.tasks`.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Sequence

import numpy as np
from pydantic import BaseModel, ValidationError

from bme_cli.errors import InvalidReplyError
from bme_cli.providers.base import Usage, normalise_rows
from bme_cli.providers.offline import HEURISTICS
from bme_cli.task import JsonTask

Reply = Any


def heuristic(task: JsonTask) -> BaseModel:
    """The offline heuristic's answer for a task (bme_cli.providers.heuristic.<kind>.answer)."""
    return HEURISTICS[task.kind](task.data)


class ScriptedChatModel:
    """A ChatModel that answers from a script, validates like a provider, and records tasks."""

    name = "scripted"
    offline = True

    def __init__(self, replies: dict[str, Any] | Sequence[Reply] | None = None, *,
                 fallback: Callable[[JsonTask], Reply] | None = None):
        self.by_kind: dict[str, Any] = {}
        self.queue: list[Reply] = []
        if isinstance(replies, dict):
            self.by_kind = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in replies.items()}
        elif replies is not None:
            self.queue = list(replies)
        self.fallback = fallback
        self.usage = Usage()
        self.tasks: list[JsonTask] = []

    def tasks_of(self, kind: str) -> list[JsonTask]:
        """The tasks of one kind seen so far, in order."""
        return [t for t in self.tasks if t.kind == kind]

    def _next(self, task: JsonTask) -> Reply:
        script = self.by_kind.get(task.kind, self.queue if not self.by_kind else None)
        if isinstance(script, list):
            if script:
                return script.pop(0)
        elif script is not None:
            return script
        if self.fallback is not None:
            return self.fallback(task)
        raise AssertionError(f"no scripted reply left for a {task.kind!r} task")

    def complete_json(self, task: JsonTask) -> Any:
        self.tasks.append(task)
        self.usage.add(requests=1)
        reply = self._next(task)
        if callable(reply) and not isinstance(reply, BaseModel):
            reply = reply(task)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, BaseModel):
            reply = reply.model_dump(by_alias=True)
        if isinstance(reply, str):
            try:
                reply = json.loads(reply)
            except json.JSONDecodeError as exc:
                raise InvalidReplyError(f"scripted reply is not JSON ({exc})") from None
        try:
            return task.response_model.model_validate(reply)
        except ValidationError as exc:
            raise InvalidReplyError(f"scripted reply does not validate ({exc.errors()[0]['msg']})") from None


_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")


class WordHashEmbedder:
    """Deterministic bag-of-words vectors (CJK by character); `fixed` pins chosen texts' vectors."""

    offline = True

    def __init__(self, dim: int = 64, fixed: dict[str, Sequence[float]] | None = None,
                 model_id: str = "test:word-hash"):
        self._dim = dim
        self.fixed = {k: np.asarray(v, dtype=np.float32) for k, v in (fixed or {}).items()}
        self.model_id = model_id
        self.calls: list[list[str]] = []

    @property
    def dimension(self) -> int:
        return self._dim

    def _vector(self, text: str) -> np.ndarray:
        if text in self.fixed:
            return self.fixed[text]
        v = np.zeros(self._dim, dtype=np.float32)
        for tok in _TOKEN.findall(text.lower()):
            h = int.from_bytes(hashlib.md5(tok.encode("utf-8")).digest()[:4], "little")
            v[h % self._dim] += 1.0 if (h >> 16) & 1 else -1.0
        if not v.any():
            v[0] = 1.0
        return v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return normalise_rows(np.stack([self._vector(t) for t in texts]))


def counter_ids(prefix: str = "n") -> Callable[[], str]:
    """An id factory giving n1, n2, ... (seeded ids make runs comparable)."""
    counter = itertools.count(1)
    return lambda: f"{prefix}{next(counter)}"


NOW = 1_700_000_000_000  # the tests' fixed clock (epoch ms), e.g. what a loaded file leaves out is filled with


class Clock:
    """A clock that advances by `step` ms each time it is read."""

    def __init__(self, start: int = NOW, step: int = 1000):
        self.t, self.step = start, step

    def __call__(self) -> int:
        self.t += self.step
        return self.t


@dataclass
class FakeMessage:
    """Shaped like bme_cli.chat.Message (only what memory reads)."""

    seq: int
    name: str
    is_user: bool
    text: str
    is_system: bool = False
    swipe_id: int | None = None
    send_date: datetime | None = None
    raw: str | None = None
    line_no: int = 0
    swipe_count: int = 0
    reasoning: str | None = None

    def __post_init__(self) -> None:
        if self.raw is None:
            self.raw = self.text

    @property
    def role(self) -> str:
        return "user" if self.is_user else "assistant"


@dataclass
class FakeChat:
    """Shaped like bme_cli.chat.Chat."""

    messages: list[FakeMessage]
    user_name: str | None = "User"
    character_name: str | None = "Char"
    is_group: bool = False
    header: dict | None = field(default_factory=dict)
    narrators: frozenset[str] = frozenset()

    @property
    def assistant_turns(self) -> list[int]:
        return [m.seq for m in self.messages if not m.is_user and not m.is_system]


def make_chat(lines: Sequence[tuple[str, str]] | Sequence[str], *, user: str = "User",
              char: str = "Char", greeting: bool = True) -> FakeChat:
    """A chat from texts: (speaker, text) pairs, or bare texts alternating char/user from a greeting.

    With bare texts, seq 0 is the character's greeting (when greeting) and the roles alternate.
    A speaker equal to `user` is the user; any other speaker is an assistant turn.
    """
    messages = []
    for i, line in enumerate(lines):
        if isinstance(line, tuple):
            name, text = line
        else:
            char_turn = (i % 2 == 0) if greeting else (i % 2 == 1)
            name, text = (char if char_turn else user), line
        messages.append(FakeMessage(seq=i, name=name, is_user=name == user, text=text))
    return FakeChat(messages, user_name=user, character_name=char)


class ScriptedReplies:
    """A chat model answering from a fixed list, in order: dicts are validated like an API
    reply (invalid -> InvalidReplyError), callables get the task first, exceptions are raised.
    Any call past the end of the list fails the test."""

    name, offline = "scripted", True

    def __init__(self, *replies: Any):
        self.replies, self.tasks, self.usage = list(replies), [], Usage()

    def complete_json(self, task: JsonTask) -> BaseModel:
        self.tasks.append(task)
        if not self.replies:
            raise AssertionError("unexpected model call")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        reply = reply(task) if callable(reply) else reply
        try:
            return task.response_model.model_validate(reply)
        except ValidationError as e:
            raise InvalidReplyError(f"bad reply ({e.error_count()} errors)") from None
