"""What every pipeline step is handed: schema, settings, models, clock, ids and randomness.

Nothing under memory/ builds providers, reads the environment or opens files; the CLI
(or a test) builds one MemoryContext per chat run and passes it down.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable

from ..graph.model import IdFactory, new_uuid, now_ms
from ..graph.schema import Schema
from ..providers.base import ChatModel, Embedder, Reranker
from ..settings import MemorySettings


@dataclass
class MemoryContext:
    """The injected dependencies of one chat's pipeline run."""

    chat: ChatModel
    embedder: Embedder | None
    schema: Schema = field(default_factory=Schema.default)
    settings: MemorySettings = field(default_factory=MemorySettings)
    now: Callable[[], int] = now_ms
    new_id: IdFactory = new_uuid
    rng: random.Random = field(default_factory=random.Random)
    language: str = "en"          # memory language: "en" or "zh"
    viewer: str | None = None     # the chat's character, for visibility filtering
    reranker: Reranker | None = None  # reorders recall's best candidates ([rerank] configured)
