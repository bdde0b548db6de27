"""bme's settings: every ST-BME setting (spec §8) in snake_case with the same defaults,
plus the endpoints and bme's own additions. One frozen model; nothing reads the
environment at import time (loading with precedence lives in `load_settings`).
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemorySettings(_Frozen):
    """ST-BME's algorithm settings (spec §8), clamped to ST-BME's code ranges, plus bme's."""

    extract_every: int = Field(1, ge=1, le=50, description="assistant turns per extraction batch")
    extract_context_turns: int = Field(2, ge=0, le=20, description="the window reaches back 2x this many messages")
    recall_enabled: bool = True
    recall_top_k: int = Field(15, ge=1, le=100)
    recall_max_nodes: int = Field(8, ge=1, le=50)
    recall_enable_llm: bool = True
    inject_depth: int = Field(4, ge=0, le=9999)
    graph_weight: float = Field(0.6, ge=0, le=1)
    vector_weight: float = Field(0.3, ge=0, le=1)
    importance_weight: float = Field(0.1, ge=0, le=1)
    node_type_schema: str | None = Field(None, description="path of a custom schema JSON file")
    extract_prompt: str = ""
    enable_evolution: bool = True
    evo_neighbor_count: int = Field(5, ge=1, le=20)
    enable_precise_conflict: bool = True
    conflict_threshold: float = Field(0.85, ge=0.5, le=0.99)
    enable_synopsis: bool = True
    synopsis_every_n: int = Field(5, ge=1, le=100)
    enable_visibility: bool = False
    enable_cross_recall: bool = False
    enable_smart_trigger: bool = False
    trigger_patterns: str = Field("", description="one regex per line")
    smart_trigger_threshold: int = Field(2, ge=1, le=10)
    enable_sleep_cycle: bool = False
    forget_threshold: float = Field(0.5, ge=0.1, le=1)
    sleep_every_n: int = Field(10, ge=1, le=200)
    enable_prob_recall: bool = False
    prob_recall_chance: float = Field(0.15, ge=0.01, le=0.5)
    enable_reflection: bool = False
    reflect_every_n: int = Field(10, ge=1, le=200)
    # bme's own
    budget: int = Field(1500, ge=50, le=200_000, description="token budget of the injected block")
    context_window: int = Field(0, ge=0, description="messages the model already sees (echo suppression); 0 = off")
    memory_lang: Literal["auto", "zh", "en"] = "auto"
    update_events_core: bool = Field(False, description="ST-BME behaviour: state-update events are Core")
    sleep_age: Literal["story", "wall"] = Field("story", description="age for forgetting: messages or wall clock")
    include_greeting: bool = False


class ChatEndpoint(_Frozen):
    """An OpenAI-compatible /chat/completions endpoint; base_url None means offline."""

    base_url: str | None = None
    model: str = "gpt-4o-mini"
    api_key: SecretStr | None = None
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=256)
    temperature: float = Field(0.2, ge=0, le=2)
    max_tokens: int = Field(2048, ge=16)
    price_prompt_per_m: float | None = Field(None, ge=0)
    price_completion_per_m: float | None = Field(None, ge=0)


class EmbeddingEndpoint(_Frozen):
    """An OpenAI-compatible /embeddings endpoint; base_url None falls back to the chat one."""

    base_url: str | None = None
    model: str = "text-embedding-3-small"
    api_key: SecretStr | None = None
    batch_size: int = Field(64, ge=1, le=2048)
    dimensions: int | None = Field(None, ge=1)
    offline_model: Literal["use-m3", "hash"] = "use-m3"


class RerankEndpoint(_Frozen):
    """An optional /rerank endpoint (Jina/Cohere style)."""

    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None


class Settings(_Frozen):
    """Everything bme can be configured with."""

    memory: MemorySettings = MemorySettings()
    chat: ChatEndpoint = ChatEndpoint()
    embedding: EmbeddingEndpoint = EmbeddingEndpoint()
    rerank: RerankEndpoint = RerankEndpoint()
    cache: bool = True
