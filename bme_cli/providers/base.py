"""The two seams every pipeline step talks to models through: ChatModel and Embedder.

A step builds a `JsonTask` (prompt text, the pydantic model that validates the reply,
and the same input as typed data) and hands it to whatever `ChatModel` it was given:
the HTTP client sends the prompt, the offline heuristic provider reads `data`.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np
from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)

# Every kind of task the pipeline asks a chat model. The offline provider answers each.
TASK_KINDS = ("extract", "conflict", "recall", "compress", "synopsis", "reflect", "evolve")


@dataclass(frozen=True)
class JsonTask(Generic[T]):
    """One JSON-producing request: prompts, the reply model, and the typed input behind them."""

    kind: str
    system: str
    user: str
    response_model: type[T]
    data: Any = None
    max_retries: int = 1
    # The bounded JSON schema sent to the server (providers/replyschema.py); None sends the
    # reply model's own. It constrains what the model writes; response_model still validates.
    json_schema: dict[str, Any] | None = field(default=None, compare=False)
    label: str = ""   # what the call log names this task (default: kind), e.g. "doctor"
    # A plausibility check of a reply that validated: a problem it names makes the reply
    # unusable like an invalid one (asked again with the problem as the note, never cached).
    # Remote models only: the offline heuristics are bme's own answers.
    plausible: Callable[[Any], str | None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise ValueError(f"unknown task kind {self.kind!r}")


@dataclass
class Usage:
    """Running totals of model use for one bme run (thread-safe)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedded_texts: int = 0
    cache_hits: int = 0
    cost: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, *, requests: int = 0, prompt_tokens: int = 0, completion_tokens: int = 0,
            embedded_texts: int = 0, cache_hits: int = 0, cost: float | None = None) -> None:
        with self._lock:
            self.requests += requests
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.embedded_texts += embedded_texts
            self.cache_hits += cache_hits
            if cost is not None:
                self.cost = (self.cost or 0.0) + cost

    def as_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "embedded_texts": self.embedded_texts,
                "cache_hits": self.cache_hits, "cost": self.cost}


@runtime_checkable
class ChatModel(Protocol):
    """A model that answers JSON tasks.

    `complete_json` returns a validated reply, or raises `InvalidReplyError` when no
    usable reply came within the task's retries, or another `ProviderError` (auth,
    network) that the caller should not swallow.
    """

    name: str
    offline: bool
    usage: Usage

    def complete_json(self, task: JsonTask[T]) -> T: ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, tagged with the model that made them."""

    model_id: str
    offline: bool

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (len(texts), dimension) float32 array of unit vectors."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Scores documents against a query (a Jina/Cohere-style /rerank endpoint)."""

    name: str
    top_n: int   # how many candidates a caller should send

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        """(document index, relevance) best first, at most top_n; raises ProviderError on failure."""
        ...


def normalise_rows(m: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        m = m.reshape(1, -1)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (m / norms).astype(np.float32, copy=False)
