"""bme's settings as one frozen model: every ST-BME setting (spec §8) in snake_case with
the same defaults, plus the endpoints and bme's own additions.
"""
from __future__ import annotations

import os
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, SecretStr


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MemorySettings(_Frozen):
    """ST-BME's algorithm settings (spec §8), clamped to ST-BME's code ranges, plus bme's."""

    enabled: bool = Field(False, description="ST-BME's master switch; unused: bme runs when you call it")
    extract_every: int = Field(1, ge=1, le=50, description="assistant turns per extraction batch")
    extract_context_turns: int = Field(2, ge=0, le=20, description="the window reaches back 2x this many messages")
    recall_enabled: bool = True
    recall_top_k: int = Field(15, ge=1, le=100)
    recall_max_nodes: int = Field(8, ge=1, le=50)
    recall_enable_llm: bool = True
    inject_position: str = Field("atDepth", description="unused in ST-BME too; kept for compatibility")
    inject_depth: int = Field(4, ge=0, le=9999, description="where SillyTavern would inject; informational in bme")
    inject_role: int = Field(0, ge=0, le=2, description="unused in ST-BME too (0 system, 1 user, 2 assistant)")
    graph_weight: float = Field(0.6, ge=0, le=1)
    vector_weight: float = Field(0.3, ge=0, le=1)
    importance_weight: float = Field(0.1, ge=0, le=1)
    node_type_schema: str | None = Field(None, description="path of a custom schema JSON file")
    extract_prompt: str = ""
    enable_evolution: bool = True
    evo_neighbor_count: int = Field(5, ge=1, le=20)
    evo_consolidate_every: int = Field(50, ge=1, le=500, description="unused in ST-BME too; kept for compatibility")
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
    lexical_weight: float = Field(0.3, ge=0, le=1,
                                  description="weight of BM25 in the fused recall score; 0 = ST-BME's score")
    context_window: int = Field(0, ge=0, description="messages the model already sees (echo suppression); 0 = off")
    memory_lang: Literal["auto", "zh", "en"] = "auto"
    update_events_core: bool = Field(False, description="ST-BME behaviour: state-update events are Core")
    sleep_age: Literal["story", "wall"] = Field("story", description="age for forgetting: messages or wall clock")
    include_greeting: bool = Field(True, description="extract the greeting (message 0) too; false = ST-BME's skip")
    excerpts: bool = Field(True, description="quote the chat's own sentences beside the nodes; "
                                              "false = ST-BME's nodes-only block")
    query_cells: bool = Field(True, description="a cell over 200 characters keeps the sentences the query "
                                                 "asks about, cut at a word; false = ST-BME's first 200")


def _tag_names(value: Any) -> Any:
    """Tag names from a TOML list or a string ("options, choices" or one a line)."""
    items = re.split(r"[\s,]+", value) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value
    names = [str(v).strip().strip("<>/").strip() for v in items if str(v).strip()]
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z][\w:.\-]*", n)]
    if bad:
        raise ValueError(f"not a tag name: {bad[0]!r}")
    return tuple(names)


TagNames = Annotated[tuple[str, ...], BeforeValidator(_tag_names)]


class StorySettings(_Frozen):
    """What bme reads of a message as story (docs/story-text.md); bme's own."""

    story_tags: TagNames = Field(("content",), description="when one is present, only its inside is story")
    drop_tags: TagNames = Field((), description="more tags whose blocks are never story")
    keep_tags: TagNames = Field((), description="tags kept as story even where bme would drop them")
    drop_panels: bool = Field(True, description="drop status panels, tables and fenced boards by their shape")
    drop_notes: bool = Field(True, description="drop OOC notes and planning notes before or after the story")


def _paths(value: Any) -> Any:
    """File paths from a TOML list or a string (several separated by os.pathsep)."""
    if isinstance(value, str):
        return tuple(p for p in value.split(os.pathsep) if p.strip())
    return tuple(value) if isinstance(value, list) else value


class SillyTavernSettings(_Frozen):
    """Files of the user's SillyTavern that seed every ingest (docs/sillytavern.md); bme's own."""

    lorebooks: Annotated[tuple[str, ...], BeforeValidator(_paths)] = Field(
        (), description="World Info files whose names and constant rules seed each chat's graph")
    cards: Annotated[tuple[str, ...], BeforeValidator(_paths)] = Field(
        (), description="character cards (.png or .json) whose character and lorebook seed each graph")
    detect_branches: bool = Field(True, description="a new chat sharing its first messages with a processed chat "
                                                    "beside it starts from that chat's graph")


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
    price_prompt_per_m: float | None = Field(None, ge=0, description="USD per million prompt tokens")
    price_completion_per_m: float | None = Field(None, ge=0, description="USD per million completion tokens")
    json_mode: Literal["auto", "json_schema", "json_object", "plain"] = Field(
        "auto", description="how to ask for JSON; auto tries json_schema, then json_object, then plain")


class EmbeddingEndpoint(_Frozen):
    """An OpenAI-compatible /embeddings endpoint; base_url None falls back to the chat one."""

    base_url: str | None = None
    model: str = "text-embedding-3-small"
    api_key: SecretStr | None = None
    batch_size: int = Field(64, ge=1, le=2048)
    dimensions: int | None = Field(None, ge=1)
    timeout: float = Field(60.0, gt=0)
    max_retries: int = Field(4, ge=0, le=20)
    concurrency: int = Field(4, ge=1, le=256)
    price_per_m: float | None = Field(None, ge=0, description="USD per million input tokens")
    give_up_after: int = Field(3, ge=1, le=100, description="failed embedding requests in a row after which "
                               "a run stops asking the endpoint (circuit breaker)")
    give_up_seconds: float = Field(120.0, gt=0, description="seconds of failing embedding requests in a row "
                                   "after which a run stops asking the endpoint")
    offline: bool = Field(False, description="use the built-in offline embedder even when an API is configured")
    offline_model: Literal["use-m3", "hash"] = "use-m3"
    # True when base_url was not set for embeddings but taken from the chat endpoint (said once a run).
    _from_chat: bool = PrivateAttr(False)

    @property
    def from_chat(self) -> bool:
        """base_url came from the chat endpoint, not from an embedding setting."""
        return self._from_chat


class RerankEndpoint(_Frozen):
    """An optional /rerank endpoint (Jina/Cohere style) that reorders recall's best candidates."""

    base_url: str | None = Field(None, description="POST {base_url}/rerank (as is when it already ends in /rerank)")
    model: str | None = Field(None, description="the reranking model; required with base_url")
    api_key: SecretStr | None = None
    top_n: int = Field(30, ge=2, le=200, description="recalled candidates sent to be reranked")
    timeout: float = Field(10.0, gt=0, description="seconds before recall falls back to its own ranking")
    max_retries: int = Field(1, ge=0, le=10)


class Settings(_Frozen):
    """Everything bme can be configured with."""

    memory: MemorySettings = MemorySettings()
    story: StorySettings = StorySettings()
    sillytavern: SillyTavernSettings = SillyTavernSettings()
    chat: ChatEndpoint = ChatEndpoint()
    embedding: EmbeddingEndpoint = EmbeddingEndpoint()
    rerank: RerankEndpoint = RerankEndpoint()
    cache: bool = True
    call_log: bool = Field(True, description="record every model call in the user data dir (bme log)")
    call_log_text: bool = Field(False, description="record prompts and replies in the call log too")
    max_input_mb: int = Field(2048, ge=1, le=1 << 20, description="largest chat or graph file bme reads, in MB; "
                              "a bigger one is refused before it is read")

    # The config file when it holds an API key and others may read it (said once a run).
    _exposed_key_file: str | None = PrivateAttr(None)

    @property
    def max_input_bytes(self) -> int:
        """max_input_mb in bytes."""
        return self.max_input_mb << 20

    @property
    def key_file_warning(self) -> str | None:
        """A warning when the config file holds an API key and other users may read it."""
        f = self._exposed_key_file
        return f and f"warning: {f} holds an API key and other users can read it; run `chmod 600 {f}`"


SECTIONS: dict[str, type[_Frozen]] = {   # the config file's tables, in the template's order
    "memory": MemorySettings, "story": StorySettings, "sillytavern": SillyTavernSettings, "chat": ChatEndpoint,
    "embedding": EmbeddingEndpoint, "rerank": RerankEndpoint,
}


def redacted(settings: Settings) -> dict[str, Any]:
    """The settings as plain data for display, with every API key shown as '***'."""
    data = settings.model_dump()
    for section in ("chat", "embedding", "rerank"):
        if data[section].get("api_key") is not None:
            data[section]["api_key"] = "***"
    return data
