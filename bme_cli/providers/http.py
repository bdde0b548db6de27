"""The HTTP transport every OpenAI-compatible client uses. The only module that imports httpx.

Retries with exponential backoff and full jitter on 429 (honouring Retry-After), 5xx,
timeouts and dropped connections; 401/403/404 fail at once. One semaphore per client
instance bounds concurrent requests. `timeout` is a whole-request deadline (connect, send
and every read together), not httpx's per-read timeout, so a server that trickles one byte
at a time cannot hold bme past it. The API key goes only into the Authorization header
of requests to the configured base URL (redirects are not followed) and never into a
message, log line or cache entry.
"""
from __future__ import annotations

import email.utils
import json
import random
import threading
import time
from contextvars import ContextVar
from typing import Any, Callable

import httpcore  # httpx's own transport layer: the deadline hooks in below its reads
import httpx
from pydantic import SecretStr

from ..errors import ProviderError
from .base import Usage

Log = Callable[[str], None]
Sleep = Callable[[float], None]
Clock = Callable[[], float]   # the wall clock, seconds since the epoch: Retry-After may be an HTTP date
Client = httpx.Client
Response = httpx.Response

RETRY_AFTER_CAP = 60.0      # seconds; a server asking for longer is answered with a failure later
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0
_RETRYABLE_5XX = frozenset(range(500, 600)) - {501, 505}


_DEADLINE: ContextVar[float | None] = ContextVar("bme_http_deadline", default=None)


def _left(timeout: float | None) -> float | None:
    """The per-operation timeout cut to what is left of this request's deadline."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the whole-request deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A socket stream whose every read and write ends by the request's deadline."""

    def __init__(self, inner: httpcore.NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sync backend, with connections that honour the request's deadline."""

    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        return _DeadlineStream(self._inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _deadline_transport() -> httpx.HTTPTransport:
    """httpx's default transport over the deadline backend (its pool rebuilt with it)."""
    transport = httpx.HTTPTransport()
    transport._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(),  # noqa: SLF001
                                              network_backend=_DeadlineBackend())
    return transport


def new_client(timeout: float) -> httpx.Client:
    """An httpx client that never follows redirects (the key must not reach another host) and
    ends every request by its deadline (see `Http._send`)."""
    return httpx.Client(timeout=timeout, follow_redirects=False, transport=_deadline_transport())


def _retry_after(resp: httpx.Response, clock: Clock) -> float | None:
    """Seconds from Retry-After (seconds or an HTTP date, counted from `clock`) or retry-after-ms, capped."""
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
    return min(max(when.timestamp() - clock(), 0.0), RETRY_AFTER_CAP)


class Http:
    """POSTs JSON to one base URL with retries, a concurrency limit and request logging.

    `sleep`, `rng` (the backoff's jitter) and `clock` (for Retry-After dates) are injected so
    tests are exact; without an rng the jitter is unseeded, so that processes which failed
    together do not retry together.
    """

    def __init__(self, what: str, base_url: str, api_key: SecretStr | None, *, timeout: float,
                 max_retries: int, concurrency: int, client: httpx.Client | None, usage: Usage,
                 sleep: Sleep, rng: random.Random | None, log: Log | None, clock: Clock = time.time):
        self.what, self.base_url = what, base_url.rstrip("/")
        self._key = api_key.get_secret_value() if api_key is not None else None
        self.timeout, self.max_retries = timeout, max_retries
        self.semaphore = threading.BoundedSemaphore(concurrency)
        self._owns_client = client is None
        self.client = client if client is not None else new_client(timeout)
        self.usage, self.sleep, self.log, self.clock = usage, sleep, log, clock
        self.rng = rng if rng is not None else random.Random()

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
            token = _DEADLINE.set(start + self.timeout)  # connect, send and all reads together
            try:
                resp = self.client.post(url, json=body, headers=self._headers(),
                                        timeout=self.timeout, follow_redirects=False)
            except httpx.HTTPError as e:
                if self.log:
                    self.log(f"POST {url} -> {type(e).__name__} after {(time.monotonic() - start) * 1000:.0f} ms")
                raise
            finally:
                _DEADLINE.reset(token)
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
                problem, delay = f"HTTP {code}: {self.server_message(resp)}", _retry_after(resp, self.clock)
            if attempt + 1 < attempts:
                self.sleep(delay if delay is not None else self._backoff(attempt))
        raise ProviderError(f"{self.what} endpoint {url} failed after {attempts} attempts: {problem}",
                            "check that the server is up and reachable, or raise max_retries / timeout")

    def get_json(self, path: str, *, root: bool = False) -> Any:
        """GET {base_url}{path} (with root, the server's root: base_url without /v1) once;
        the parsed JSON, or None whatever went wrong (for optional facts such as /props)."""
        base = self.base_url[:-3] if root and self.base_url.endswith("/v1") else self.base_url
        try:
            with self.semaphore:
                token = _DEADLINE.set(time.monotonic() + self.timeout)
                try:
                    resp = self.client.get(f"{base}{path}", headers=self._headers(), timeout=self.timeout,
                                           follow_redirects=False)
                finally:
                    _DEADLINE.reset(token)
            return resp.json() if resp.is_success else None
        except (httpx.HTTPError, ValueError):
            return None

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
