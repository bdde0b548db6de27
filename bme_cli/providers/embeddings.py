"""The OpenAI-compatible embeddings client: batches, cache, count and dimension checks."""
from __future__ import annotations

import base64
import random
import time
from typing import Any, Sequence

import numpy as np

from ..errors import ConfigError, EndpointGaveUp, ProviderError
from ..settings import EmbeddingEndpoint
from .base import Usage, normalise_rows
from ..text import estimate_tokens
from .cache import ResponseCache, cache_key
from .calllog import CallLog, CallRecord, origin
from .http import Client, Clock, Http, Log, Response, Sleep


MAX_DIMENSION = 65_536  # the largest embedding models make a few thousand; 200,000 is a broken server
MIN_DIMENSION = 8  # the smallest real ones make 64 or more; 3 numbers cannot tell texts apart.
                   # A configured embedding.dimensions is trusted below it.


class Breaker:
    """Stops asking an endpoint that keeps failing: after `failures` failed calls in a row, or
    `seconds` after the first of them, every call fails at once with EndpointGaveUp."""

    def __init__(self, what: str, failures: int, seconds: float, clock=time.monotonic):  # noqa: ANN001
        self.what, self.failures, self.seconds, self._clock = what, failures, seconds, clock
        self._count, self._since = 0, 0.0
        self.gave_up: str | None = None   # why, once open

    def check(self) -> None:
        """Raise EndpointGaveUp once the breaker is open."""
        if self.gave_up is not None:
            raise EndpointGaveUp(self.gave_up, "fix the endpoint; the next run fills every missing vector")

    def failed(self, exc: ProviderError) -> ProviderError:
        """Count a failure; the error to raise (EndpointGaveUp when this one opens the breaker)."""
        now = self._clock()
        self._count, self._since = self._count + 1, self._since if self._count else now
        if self._count < self.failures and now - self._since < self.seconds:
            return exc
        self.gave_up = (f"{self.what} failed {self._count} time(s) in a row over {now - self._since:.0f} s, "
                        f"so bme stopped asking it for this run (last: {exc.message})")
        return EndpointGaveUp(self.gave_up, "fix the endpoint; the next run fills every missing vector")

    def succeeded(self) -> None:
        """A call worked: the count starts again."""
        self._count = 0


class OpenAIEmbedder:
    """An Embedder over POST {base_url}/embeddings, in batches, with count and dimension checks."""

    offline = False

    def __init__(self, endpoint: EmbeddingEndpoint, client: Client | None = None,
                 cache: ResponseCache | None = None, usage: Usage | None = None, *,
                 sleep: Sleep = time.sleep, rng: random.Random | None = None, log: Log | None = None,
                 calls: CallLog | None = None, clock: Clock = time.time):
        if not endpoint.base_url:
            raise ConfigError("no embedding base_url is configured",
                              "set BME_EMBEDDING_BASE_URL or [embedding] base_url")
        self.endpoint, self.cache, self.calls = endpoint, cache, calls
        self.usage = usage if usage is not None else Usage()
        dims = endpoint.dimensions
        self.model_id = f"openai:{endpoint.model}" + (f"@{dims}" if dims else "")
        self._dim: int | None = dims
        self.breaker = Breaker(f"the embedding endpoint {origin(endpoint.base_url)}", endpoint.give_up_after,
                               endpoint.give_up_seconds)
        self._http = Http("embedding", endpoint.base_url, endpoint.api_key, timeout=endpoint.timeout,
                           max_retries=endpoint.max_retries, concurrency=endpoint.concurrency,
                           client=client, usage=self.usage, sleep=sleep, rng=rng, log=log, clock=clock)

    @property
    def gave_up(self) -> str | None:
        """Why this run stopped asking the endpoint (the circuit breaker is open), or None."""
        return self.breaker.gave_up

    @property
    def known_dimension(self) -> int | None:
        """The dimension if configured or already seen, without asking the server."""
        return self._dim

    def expect_dimension(self, dim: int) -> None:
        """Known from elsewhere (the graph's vectors of this model): replies of another size are refused."""
        if self._dim is None:
            self._dim = dim

    @property
    def dimension(self) -> int:
        """The vector dimension (asks the server once if not configured)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _key(self, text: str) -> str:
        return cache_key(kind="embedding", base_url=self._http.base_url, model=self.endpoint.model,
                         dimensions=self.endpoint.dimensions, text=text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (len(texts), dimension) float32 array of unit rows."""
        texts = list(texts)
        rows: list[np.ndarray | None] = [None] * len(texts)
        if self.cache is not None:
            for i, t in enumerate(texts):
                rows[i] = self._cached(t)
        todo = [i for i, r in enumerate(rows) if r is None]
        self.usage.add(cache_hits=len(texts) - len(todo))
        size = self.endpoint.batch_size
        for start in range(0, len(todo), size):
            idx = todo[start:start + size]
            for i, vec in zip(idx, self._embed_batch([texts[i] for i in idx])):
                rows[i] = vec
                if self.cache is not None:
                    self.cache.put(self._key(texts[i]), base64.b64encode(vec.tobytes()).decode("ascii"))
        if not rows:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return normalise_rows(np.stack(rows))

    def _cached(self, text: str) -> np.ndarray | None:
        raw = self.cache.get(self._key(text)) if self.cache is not None else None
        if raw is None:
            return None
        try:
            vec = np.frombuffer(base64.b64decode(raw), dtype=np.float32)
        except ValueError:
            return None
        return vec if self._dim is None or vec.size == self._dim else None

    def _embed_batch(self, texts: list[str]) -> list[np.ndarray]:
        body: dict[str, Any] = {"model": self.endpoint.model, "input": [t if t.strip() else " " for t in texts]}
        if self.endpoint.dimensions:
            body["dimensions"] = self.endpoint.dimensions
        self.breaker.check()
        start = time.monotonic()
        try:
            resp = self._http.post("/embeddings", body)
            tokens, reported = self._count(resp, texts)
            vectors = self._vectors(resp, len(texts))
        except ProviderError as e:
            self._record(texts, start, 0, False, "error", e.message)
            raise self.breaker.failed(e) from None
        self.breaker.succeeded()
        self._record(texts, start, tokens, reported, "ok", None)
        self.usage.add(embedded_texts=len(texts))
        return vectors

    def _record(self, texts: list[str], start: float, tokens: int, reported: bool, outcome: str,
                detail: str | None) -> None:
        if self.calls is None:
            return
        estimate = sum(estimate_tokens(t) for t in texts)
        self.calls.record(CallRecord(
            task="embed", model=self.endpoint.model, endpoint=origin(self._http.base_url),
            prompt_tokens=tokens if reported else estimate, completion_tokens=0, prompt_estimate=estimate,
            tokens_reported=reported, seconds=round(time.monotonic() - start, 3), outcome=outcome,
            detail=detail if detail is None else self._http.scrub(detail)[:500], prompt="\n".join(texts)))

    def _vectors(self, resp: Response, expected: int) -> list[np.ndarray]:
        where = f"embedding endpoint {self._http.base_url}"
        try:
            payload = resp.json()
            items = sorted(payload["data"], key=lambda d: d.get("index", 0))
            vecs = [np.asarray(d["embedding"], dtype=np.float32) for d in items]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ProviderError(f"{where} answered with something that is not an embeddings response",
                                "check base_url and that the model is an embedding model") from None
        if len(vecs) != expected:
            raise ProviderError(f"{where} returned {len(vecs)} vectors for {expected} texts",
                                "the server may not support batched input: lower embedding.batch_size")
        self._check_plausible(where, vecs)
        dims = {v.size for v in vecs} | ({self._dim} if self._dim else set())
        if len(dims) != 1 or 0 in dims or any(v.ndim != 1 or not np.isfinite(v).all() for v in vecs):
            raise ProviderError(f"{where} returned vectors of inconsistent or wrong dimension {sorted(dims)}"
                                + (f" (expected {self._dim})" if self._dim else ""),
                                "check embedding.model and embedding.dimensions")
        self._dim = dims.pop()
        return vecs

    def _check_plausible(self, where: str, vecs: list[np.ndarray]) -> None:
        """Refuse vectors no embedding model makes, before any is stored or fixes the run's dimension."""
        sizes = [v.size for v in vecs] or [MIN_DIMENSION]
        low = min(MIN_DIMENSION, self.endpoint.dimensions or MIN_DIMENSION)
        problem = (f"{max(sizes)} dimensions, more than any embedding model makes ({MAX_DIMENSION})"
                   if max(sizes) > MAX_DIMENSION else
                   f"{min(sizes)} dimensions, fewer than any embedding model makes ({low})"
                   if 0 < min(sizes) < low else None)
        if problem:
            raise ProviderError(f"{where} returned vectors of {problem}; none were stored",
                                "check embedding.model and embedding.dimensions")

    def _count(self, resp: Response, texts: list[str]) -> tuple[int, bool]:
        """Add the request's tokens to the run's usage (the server's count, else bme's estimate)."""
        try:
            usage = resp.json().get("usage") or {}
            pt = int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0)
        except (ValueError, AttributeError, TypeError):
            pt = 0
        reported = pt > 0
        pt = pt if reported else sum(estimate_tokens(t) for t in texts)
        price = self.endpoint.price_per_m
        self.usage.add(prompt_tokens=pt, cost=None if price is None else pt * price / 1e6)
        return pt, reported

    def close(self) -> None:
        """Close the HTTP client if this embedder created it."""
        self._http.close()
