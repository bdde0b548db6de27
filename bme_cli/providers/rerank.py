"""A Jina/Cohere-style reranker: POST {base_url}/rerank with {model, query, documents, top_n},
answered with {"results": [{"index": i, "relevance_score": s}, ...]} (Cohere and Jina;
"score" is accepted too, as some self-hosted servers send it). As in the Anima seed, a
base_url that already ends in /rerank is used as it is.

It rides on the shared transport (`http.Http`: retries with backoff on 429/5xx, no redirects,
the key only in the Authorization header of requests to base_url, the key scrubbed from
server messages), so httpx stays imported by providers/http.py alone.
"""
from __future__ import annotations

import math
import random
import time
from typing import Any, Sequence

from ..errors import ConfigError, ProviderError
from ..settings import RerankEndpoint
from .base import Usage
from .http import Clock, Http, Log, Sleep

RERANK_PATH = "/rerank"


class HttpReranker:
    """A Reranker over one /rerank endpoint."""

    def __init__(self, endpoint: RerankEndpoint, client: Any = None, usage: Usage | None = None, *,
                 sleep: Sleep = time.sleep, rng: random.Random | None = None, log: Log | None = None,
                 clock: Clock = time.time):
        if not endpoint.base_url or not endpoint.model:
            raise ConfigError("the rerank endpoint needs both base_url and model",
                              "set [rerank] model (e.g. jina-reranker-v2-base-multilingual), or unset base_url")
        self.endpoint, self.name, self.top_n = endpoint, endpoint.model, endpoint.top_n
        base = endpoint.base_url.rstrip("/")
        self._path = "" if base.endswith(RERANK_PATH) else RERANK_PATH
        self._http = Http("rerank", base, endpoint.api_key, timeout=endpoint.timeout,
                           max_retries=endpoint.max_retries, concurrency=4, client=client,
                           usage=usage if usage is not None else Usage(), sleep=sleep, rng=rng, log=log,
                           clock=clock)

    @property
    def url(self) -> str:
        """Where requests go (never carries the key)."""
        return f"{self._http.base_url}{self._path}"

    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        """(document index, relevance) best first, at most top_n; ProviderError when it fails."""
        if not documents:
            return []
        top_n = max(1, min(top_n, len(documents)))
        body = {"model": self.endpoint.model, "query": query, "documents": list(documents), "top_n": top_n}
        resp = self._http.post(self._path, body)
        return self._results(resp, len(documents), top_n)

    def _results(self, resp: Any, count: int, top_n: int) -> list[tuple[int, float]]:
        where = f"rerank endpoint {self.url}"
        try:
            items = resp.json()["results"]
            out = [(int(r["index"]), float(r["relevance_score"] if "relevance_score" in r else r["score"]))
                   for r in items]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ProviderError(f"{where} answered with something that is not a rerank response",
                                "check [rerank] base_url and model") from None
        if any(not math.isfinite(s) for _, s in out):
            raise ProviderError(f"{where} returned a relevance score that is not a number")
        if any(not 0 <= i < count for i, _ in out) or len({i for i, _ in out}) != len(out):
            raise ProviderError(f"{where} returned document indexes that were not sent",
                                "check that the server speaks the Jina/Cohere /rerank format")
        out.sort(key=lambda r: (-r[1], r[0]))
        return out[:top_n]

    def close(self) -> None:
        """Close the HTTP client if this reranker created it."""
        self._http.close()
