"""OpenAI-compatible chat and embedding clients (OpenAI, DeepSeek, OpenRouter, Ollama,
llama.cpp's server, vLLM). The only module that imports httpx.

Transport: retries with exponential backoff and full jitter on 429 (honouring
Retry-After), 5xx, timeouts and dropped connections; 401/403/404 fail at once. One
semaphore per client instance bounds concurrent requests. The API key goes only into the
Authorization header of requests to the configured base URL (redirects are not followed)
and never into a message, log line or cache entry.
"""
from __future__ import annotations

import base64
import email.utils
import functools
import json
import random
import threading
import time
from typing import Any, Callable, Sequence

import httpx
import numpy as np
from pydantic import SecretStr

from ..errors import ConfigError, InvalidReplyError, ProviderError
from ..settings import ChatEndpoint, EmbeddingEndpoint
from .base import JsonTask, T, Usage, normalise_rows
from .cache import ResponseCache, cache_key
from .jsonreply import COMPACT_JSON_RULES, ReplyCheck, check_reply, repair_note
from .replyschema import token_bound

Log = Callable[[str], None]
Sleep = Callable[[float], None]

MODES = ("json_schema", "json_object", "plain")
RETRY_AFTER_CAP = 60.0      # seconds; a server asking for longer is answered with a failure later
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0
_RETRYABLE_5XX = frozenset(range(500, 600)) - {501, 505}
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "json schema", "schema",
                 "structured", "grammar", "unsupported", "not supported")

# JSON-mode downgrades learned during this run, per (base_url, model).
_LEARNED_MODES: dict[tuple[str, str], str] = {}
_MODES_LOCK = threading.Lock()


# A schema longer than this is not pasted into the prompt in json_object / plain mode: it
# would cost a small model thousands of context tokens, and such tasks (extraction) spell
# out their shape in the prompt itself.
SCHEMA_IN_PROMPT_CHARS = 2500


@functools.lru_cache(maxsize=128)
def _model_schema(model: type[Any]) -> dict[str, Any]:
    """A reply model's JSON schema, built once: pydantic rebuilds it on every call (~2 ms of
    GIL-bound CPU per request, which serialises `--jobs` workers). Shared: never mutate it."""
    return model.model_json_schema()


def reply_schema(task: JsonTask[Any]) -> dict[str, Any]:
    """The JSON schema sent for a task: its own bounded one, else the reply model's."""
    return task.json_schema if task.json_schema is not None else _model_schema(task.response_model)


def task_max_tokens(task: JsonTask[Any], cap: int) -> int:
    """max_tokens for a task: what its schema's largest reply needs, at most `cap` (the setting)."""
    bound = token_bound(reply_schema(task))
    return cap if bound is None else max(16, min(cap, bound))


def new_client(timeout: float) -> httpx.Client:
    """An httpx client that never follows redirects (the key must not reach another host)."""
    return httpx.Client(timeout=timeout, follow_redirects=False)


def _retry_after(resp: httpx.Response) -> float | None:
    """Seconds from Retry-After (seconds or HTTP date) or retry-after-ms, capped."""
    ms = resp.headers.get("retry-after-ms")
    raw = resp.headers.get("retry-after")
    try:
        if ms is not None:
            return min(max(float(ms) / 1000, 0.0), RETRY_AFTER_CAP)
        if raw is None:
            return None
        return min(max(float(raw), 0.0), RETRY_AFTER_CAP)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return min(max(when.timestamp() - time.time(), 0.0), RETRY_AFTER_CAP)


class _Http:
    """POSTs JSON to one base URL with retries, a concurrency limit and request logging."""

    def __init__(self, what: str, base_url: str, api_key: SecretStr | None, *, timeout: float,
                 max_retries: int, concurrency: int, client: httpx.Client | None, usage: Usage,
                 sleep: Sleep, rng: random.Random | None, log: Log | None):
        self.what, self.base_url = what, base_url.rstrip("/")
        self._key = api_key.get_secret_value() if api_key is not None else None
        self.timeout, self.max_retries = timeout, max_retries
        self.semaphore = threading.BoundedSemaphore(concurrency)
        self._owns_client = client is None
        self.client = client if client is not None else new_client(timeout)
        self.usage, self.sleep, self.rng, self.log = usage, sleep, rng or random.Random(), log

    def scrub(self, text: str) -> str:
        """text with the API key (if it somehow appears, e.g. echoed by a server) masked."""
        return text.replace(self._key, "***") if self._key else text

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "bme-cli"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def _send(self, url: str, body: dict[str, Any]) -> httpx.Response:
        with self.semaphore:
            start = time.monotonic()
            try:
                resp = self.client.post(url, json=body, headers=self._headers(),
                                        timeout=self.timeout, follow_redirects=False)
            except httpx.HTTPError as e:
                if self.log:
                    self.log(f"POST {url} -> {type(e).__name__} after {(time.monotonic() - start) * 1000:.0f} ms")
                raise
        self.usage.add(requests=1)
        if self.log:
            self.log(f"POST {url} -> {resp.status_code} in {(time.monotonic() - start) * 1000:.0f} ms")
        return resp

    def post(self, path: str, body: dict[str, Any], accept: tuple[int, ...] = ()) -> httpx.Response:
        """The 2xx (or `accept`ed) response; retries transient failures, raises ProviderError."""
        url = f"{self.base_url}{path}"
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            delay = None
            try:
                resp = self._send(url, body)
            except httpx.TimeoutException:
                problem = f"no answer within {self.timeout:g} s"
            except httpx.TransportError as e:
                problem = f"connection failed ({type(e).__name__}: {self.scrub(str(e))[:200]})"
            else:
                code = resp.status_code
                if resp.is_success or code in accept:
                    return resp
                if code != 429 and code not in _RETRYABLE_5XX:
                    raise self.rejected(resp)
                problem, delay = f"HTTP {code}: {self.server_message(resp)}", _retry_after(resp)
            if attempt + 1 < attempts:
                self.sleep(delay if delay is not None else self._backoff(attempt))
        raise ProviderError(f"{self.what} endpoint {url} failed after {attempts} attempts: {problem}",
                            "check that the server is up and reachable, or raise max_retries / timeout")

    def _backoff(self, attempt: int) -> float:
        # Full jitter: spreads out clients that failed together.
        return self.rng.uniform(0, min(BACKOFF_CAP, BACKOFF_BASE * 2 ** attempt))

    def server_message(self, resp: httpx.Response, limit: int = 300) -> str:
        """The error text a server sent back, shortened, with the key masked."""
        try:
            data = resp.json()
            err = data.get("error", data) if isinstance(data, dict) else data
            text = err.get("message", json.dumps(err)) if isinstance(err, dict) else str(err)
        except ValueError:
            text = resp.text
        text = self.scrub(" ".join(str(text).split()))
        return text if len(text) <= limit else text[:limit - 1] + "…"

    def rejected(self, resp: httpx.Response) -> ProviderError:
        """The ProviderError for a response that retrying cannot fix."""
        code, where = resp.status_code, f"{self.what} endpoint {self.base_url}"
        if code in (401, 403):
            return ProviderError(f"{where} refused the request (HTTP {code}): the API key is missing, "
                                 "wrong or not allowed to use this model", "check the API key")
        if code == 404:
            return ProviderError(f"{where} answered HTTP 404 for {resp.request.url.path}",
                                 "check base_url (it usually ends in /v1) and model")
        if 300 <= code < 400:
            return ProviderError(f"{where} redirected the request (HTTP {code}); it was not followed",
                                 "set base_url to the final address (https, trailing /v1)")
        return ProviderError(f"{where} rejected the request (HTTP {code}): {self.server_message(resp)}",
                             "check the model name and the endpoint settings")

    def close(self) -> None:
        if self._owns_client:
            self.client.close()


def _message_text(message: dict[str, Any]) -> str:
    """The reply text: content (a string or a list of parts), else reasoning content."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    if isinstance(content, str) and content.strip():
        return content
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return reasoning if isinstance(reasoning, str) else ""


class OpenAIChatModel:
    """A ChatModel over POST {base_url}/chat/completions."""

    offline = False

    def __init__(self, endpoint: ChatEndpoint, client: httpx.Client | None = None,
                 cache: ResponseCache | None = None, usage: Usage | None = None, *,
                 sleep: Sleep = time.sleep, rng: random.Random | None = None, log: Log | None = None,
                 json_modes: dict[tuple[str, str], str] | None = None):
        if not endpoint.base_url:
            raise ConfigError("no chat base_url is configured", "set BME_CHAT_BASE_URL or [chat] base_url")
        self.endpoint, self.cache, self.log = endpoint, cache, log
        self.name = endpoint.model
        self.usage = usage if usage is not None else Usage()
        self._http = _Http("chat", endpoint.base_url, endpoint.api_key, timeout=endpoint.timeout,
                           max_retries=endpoint.max_retries, concurrency=endpoint.concurrency,
                           client=client, usage=self.usage, sleep=sleep, rng=rng, log=log)
        self._modes = _LEARNED_MODES if json_modes is None else json_modes
        self._mode_key = (self._http.base_url, endpoint.model)

    @property
    def json_mode(self) -> str:
        """The JSON mode requests use now (forced by settings, or learned by downgrading)."""
        if self.endpoint.json_mode != "auto":
            return self.endpoint.json_mode
        with _MODES_LOCK:
            return self._modes.get(self._mode_key, MODES[0])

    def _downgrade(self, rejected: str) -> bool:
        """Step below `rejected` for the rest of the run; False if nothing is left to try."""
        if self.endpoint.json_mode != "auto" or rejected == MODES[-1]:
            return False
        lower = MODES[MODES.index(rejected) + 1]
        with _MODES_LOCK:
            current = self._modes.get(self._mode_key, MODES[0])
            if MODES.index(current) < MODES.index(lower):
                self._modes[self._mode_key] = lower
        if self.log:
            self.log(f"{self._http.base_url} ({self.endpoint.model}) rejected {rejected}; using {lower}")
        return True

    def _body(self, task: JsonTask[Any], mode: str, last: ReplyCheck[Any] | None,
              max_tokens: int | None = None) -> dict[str, Any]:
        schema = reply_schema(task)
        system = f"{task.system.rstrip()}\n\n{COMPACT_JSON_RULES}"
        if mode != "json_schema":
            text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
            if len(text) <= SCHEMA_IN_PROMPT_CHARS:
                system += "\nThe JSON must match this JSON Schema: " + text
        user = task.user if last is None else f"{task.user.rstrip()}\n\n{repair_note(last)}"
        body: dict[str, Any] = {
            "model": self.endpoint.model, "temperature": self.endpoint.temperature,
            "max_tokens": task_max_tokens(task, max_tokens or self.endpoint.max_tokens), "stream": False,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        if mode == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": task.kind, "schema": schema, "strict": False}}
        elif mode == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def _rejects_format(self, resp: httpx.Response) -> bool:
        text = resp.text.lower()
        return any(w in text for w in _FORMAT_WORDS)

    def _ask(self, task: JsonTask[Any], last: ReplyCheck[Any] | None) -> tuple[str, str | None]:
        """One completion (downgrading the JSON mode if the server rejects it): (text, finish_reason)."""
        while True:
            mode = self.json_mode
            resp = self._http.post("/chat/completions", self._body(task, mode, last), accept=(400, 422))
            if resp.is_success:
                return self._read(resp)
            if not (self._rejects_format(resp) and self._downgrade(mode)):
                raise self._http.rejected(resp)

    def _read(self, resp: httpx.Response) -> tuple[str, str | None]:
        try:
            data = resp.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ProviderError(f"chat endpoint {self._http.base_url} answered with something that is not "
                                "a chat completion",
                                "check base_url: it should point at an OpenAI-compatible API") from None
        self._count(data.get("usage") or {})
        return _message_text(message), choice.get("finish_reason")

    def _count(self, usage: dict[str, Any]) -> None:
        pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        ep, cost = self.endpoint, None
        if ep.price_prompt_per_m is not None or ep.price_completion_per_m is not None:
            cost = (pt * (ep.price_prompt_per_m or 0) + ct * (ep.price_completion_per_m or 0)) / 1e6
        self.usage.add(prompt_tokens=pt, completion_tokens=ct, cost=cost)

    def _cache_key(self, task: JsonTask[Any]) -> str:
        # The key names the request, not the transport: the JSON mode and the API key are not in it.
        return cache_key(kind="chat", base_url=self._http.base_url, model=self.endpoint.model,
                         system=task.system, user=task.user, schema=reply_schema(task),
                         temperature=self.endpoint.temperature, max_tokens=self.endpoint.max_tokens)

    def complete_json(self, task: JsonTask[T]) -> T:
        """A validated reply for task, repairing bad replies up to task.max_retries times."""
        key = self._cache_key(task) if self.cache is not None else None
        if key is not None and (cached := self.cache.get(key)) is not None:
            hit = check_reply(cached, task.response_model)
            if hit.value is not None:
                self.usage.add(cache_hits=1)
                return hit.value
        last: ReplyCheck[T] | None = None
        for _ in range(task.max_retries + 1):
            text, finish = self._ask(task, last)
            check = check_reply(text, task.response_model, finish)
            if check.value is not None:
                if key is not None and check.kept is None:  # a salvaged reply is not worth replaying
                    self.cache.put(key, text)
                return check.value
            last = check
        raise InvalidReplyError(
            f"the chat model gave no usable reply to the {task.kind} task in {task.max_retries + 1} "
            f"attempts: {last.problem if last else 'no reply'}",
            "try a stronger model, or raise chat.max_tokens if replies are cut off")

    def probe_json_modes(self, task: JsonTask[Any]) -> dict[str, str]:
        """Try task once in each JSON mode; mode -> 'accepted', 'accepted, reply unusable: …' or why not."""
        out: dict[str, str] = {}
        for mode in MODES:
            try:
                resp = self._http.post("/chat/completions", self._body(task, mode, None), accept=(400, 422))
            except ProviderError as e:
                out[mode] = f"error: {e.message}"
                continue
            if not resp.is_success:
                out[mode] = f"rejected (HTTP {resp.status_code}: {self._http.server_message(resp, 120)})"
                continue
            text, finish = self._read(resp)
            check = check_reply(text, task.response_model, finish)
            out[mode] = "accepted" if check.ok else f"accepted, reply unusable: {check.problem}"
        return out

    def close(self) -> None:
        """Close the HTTP client if this model created it."""
        self._http.close()


class OpenAIEmbedder:
    """An Embedder over POST {base_url}/embeddings, in batches, with count and dimension checks."""

    offline = False

    def __init__(self, endpoint: EmbeddingEndpoint, client: httpx.Client | None = None,
                 cache: ResponseCache | None = None, usage: Usage | None = None, *,
                 sleep: Sleep = time.sleep, rng: random.Random | None = None, log: Log | None = None):
        if not endpoint.base_url:
            raise ConfigError("no embedding base_url is configured",
                              "set BME_EMBEDDING_BASE_URL or [embedding] base_url")
        self.endpoint, self.cache = endpoint, cache
        self.usage = usage if usage is not None else Usage()
        dims = endpoint.dimensions
        self.model_id = f"openai:{endpoint.model}" + (f"@{dims}" if dims else "")
        self._dim: int | None = dims
        self._http = _Http("embedding", endpoint.base_url, endpoint.api_key, timeout=endpoint.timeout,
                           max_retries=endpoint.max_retries, concurrency=endpoint.concurrency,
                           client=client, usage=self.usage, sleep=sleep, rng=rng, log=log)

    @property
    def known_dimension(self) -> int | None:
        """The dimension if configured or already seen, without asking the server."""
        return self._dim

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
        vectors = self._vectors(self._http.post("/embeddings", body), len(texts))
        self.usage.add(embedded_texts=len(texts))
        return vectors

    def _vectors(self, resp: httpx.Response, expected: int) -> list[np.ndarray]:
        where = f"embedding endpoint {self._http.base_url}"
        try:
            payload = resp.json()
            items = sorted(payload["data"], key=lambda d: d.get("index", 0))
            vecs = [np.asarray(d["embedding"], dtype=np.float32) for d in items]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ProviderError(f"{where} answered with something that is not an embeddings response",
                                "check base_url and that the model is an embedding model") from None
        self._count(payload.get("usage") or {})
        if len(vecs) != expected:
            raise ProviderError(f"{where} returned {len(vecs)} vectors for {expected} texts",
                                "the server may not support batched input: lower embedding.batch_size")
        dims = {v.size for v in vecs} | ({self._dim} if self._dim else set())
        if len(dims) != 1 or 0 in dims or any(v.ndim != 1 or not np.isfinite(v).all() for v in vecs):
            raise ProviderError(f"{where} returned vectors of inconsistent or wrong dimension {sorted(dims)}"
                                + (f" (expected {self._dim})" if self._dim else ""),
                                "check embedding.model and embedding.dimensions")
        self._dim = dims.pop()
        return vecs

    def _count(self, usage: dict[str, Any]) -> None:
        pt = int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0)
        price = self.endpoint.price_per_m
        self.usage.add(prompt_tokens=pt, cost=None if price is None else pt * price / 1e6)

    def close(self) -> None:
        """Close the HTTP client if this embedder created it."""
        self._http.close()
