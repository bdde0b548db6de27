"""The seams every pipeline step talks to models through: ChatModel, Embedder, Reranker.

A step builds a `JsonTask` (bme_cli/task.py: prompt text, the pydantic model that validates
the reply, and the same input as typed data) and hands it to whatever `ChatModel` it was
given: the HTTP client sends the prompt, the offline heuristic provider reads `data`.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from ..task import JsonTask, T


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
