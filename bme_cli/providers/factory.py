"""Build the run's chat model and embedder from Settings (the CLI's only construction point).

Offline by default: with no chat base_url the heuristic chat model answers; with no
embedding base_url (or `embedding.offline`) the local embedder does. One `Usage` is shared
by both, one provider instance serves the whole run (so its concurrency limit is global).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..settings import Settings
from .base import ChatModel, Embedder, Reranker, Usage
from .cache import ResponseCache, default_cache_dir
from .calllog import LOG_FILE, CallLog, default_data_dir
from .offline import HashEmbedder, OfflineChatModel, UseEmbedder


@dataclass
class Providers:
    """What a command needs to talk to models, plus what to tell the user about it."""

    chat: ChatModel
    embedder: Embedder
    usage: Usage
    notice: str | None = None
    cache: ResponseCache | None = None
    reranker: Reranker | None = None   # only when [rerank] is configured
    calls: CallLog | None = None

    def close(self) -> None:
        """Close any HTTP clients the providers opened."""
        for p in (self.chat, self.embedder, self.reranker):
            close = getattr(p, "close", None)
            if callable(close):
                close()


def _offline_embedder(settings: Settings, usage: Usage) -> Embedder:
    if settings.embedding.offline_model == "hash":
        return HashEmbedder(usage=usage)
    return UseEmbedder(usage=usage)


def _notice(settings: Settings, chat_offline: bool, emb_offline: bool, embedder: Embedder) -> str | None:
    if not (chat_offline or emb_offline):
        if settings.embedding.from_chat:   # only the chat endpoint was set: say where embeddings go
            return (f"embeddings: sent to the chat endpoint ({settings.embedding.base_url}) as "
                    f"{settings.embedding.model}; set embedding.base_url (BME_EMBEDDING_BASE_URL) or "
                    "embedding.offline = true to change that")
        return None
    local = "the local hashing embedder" if isinstance(embedder, HashEmbedder) else "the local USE embedder"
    if chat_offline and emb_offline:
        text = f"no API configured: using the offline heuristic extractor and {local}"
    elif chat_offline:
        text = "no chat API configured: using the offline heuristic extractor"
    else:
        text = f"embeddings: using {local}"
    if chat_offline and settings.chat.api_key is not None:
        text += " (an API key is set but no base_url: set BME_CHAT_BASE_URL, e.g. https://api.openai.com/v1)"
    return text


def call_log(settings: Settings, data_dir: Path | None = None) -> CallLog | None:
    """The call log the settings ask for (None when call_log is off)."""
    if not settings.call_log:
        return None
    return CallLog((data_dir or default_data_dir()) / LOG_FILE, with_text=settings.call_log_text)


def build_providers(settings: Settings, *, cache_dir: Path | None = None, use_cache: bool = True,
                    log: Callable[[str], None] | None = None, client: Any = None,
                    data_dir: Path | None = None) -> Providers:
    """The chat model, embedder, shared usage counter, response cache and call log for one run."""
    usage = Usage()
    cache = ResponseCache(cache_dir or default_cache_dir()) if (use_cache and settings.cache) else None
    calls = call_log(settings, data_dir)
    chat_offline = not settings.chat.base_url
    emb_offline = settings.embedding.offline or not settings.embedding.base_url
    chat: ChatModel
    embedder: Embedder
    # The HTTP module is imported only when used: offline runs never load httpx.
    if chat_offline:
        chat = OfflineChatModel(usage=usage)
    else:
        from .openai import OpenAIChatModel
        chat = OpenAIChatModel(settings.chat, client=client, cache=cache, usage=usage, log=log, calls=calls)
    if emb_offline:
        embedder = _offline_embedder(settings, usage)
    else:
        from .embeddings import OpenAIEmbedder
        embedder = OpenAIEmbedder(settings.embedding, client=client, cache=cache, usage=usage, log=log,
                                  calls=calls)
    reranker: Reranker | None = None
    if settings.rerank.base_url:
        from .rerank import HttpReranker
        reranker = HttpReranker(settings.rerank, client=client, usage=usage, log=log)
    return Providers(chat, embedder, usage, _notice(settings, chat_offline, emb_offline, embedder), cache,
                     reranker, calls)


def heuristic_chat() -> ChatModel:
    """The offline heuristic extractor as a fallback model (`ingest --on-fail heuristic`); its own
    usage counter, so the run's model calls stay the endpoint's."""
    return OfflineChatModel(usage=Usage())


def describe(providers: Providers) -> dict[str, Any]:
    """What is behind the providers, as plain data (never a key); asks no server."""
    chat, emb = providers.chat, providers.embedder
    chat_info: dict[str, Any] = {"name": chat.name, "offline": chat.offline}
    endpoint = getattr(chat, "endpoint", None)
    if endpoint is not None:
        chat_info.update(base_url=endpoint.base_url, model=endpoint.model, json_mode=chat.json_mode)
    emb_info: dict[str, Any] = {"model_id": emb.model_id, "offline": emb.offline}
    known = emb.dimension if emb.offline else getattr(emb, "known_dimension", None)
    if known:
        emb_info["dimension"] = known
    emb_endpoint = getattr(emb, "endpoint", None)
    if emb_endpoint is not None:
        emb_info.update(base_url=emb_endpoint.base_url, model=emb_endpoint.model)
    cache = providers.cache
    rr = providers.reranker
    rerank_info = {"model": rr.name, "url": getattr(rr, "url", None)} if rr is not None else None
    return {"chat": chat_info, "embedder": emb_info, "rerank": rerank_info, "notice": providers.notice,
            "cache": {"enabled": cache is not None, "dir": str(cache.dir) if cache else None}}
