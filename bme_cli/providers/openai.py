"""The OpenAI-compatible chat client (OpenAI, DeepSeek, OpenRouter, Ollama, llama.cpp's
server, vLLM): JSON modes learned per endpoint, bounded reply schemas, validated replies.
The transport (retries, the key) is providers/http.py; embeddings are providers/embeddings.py.
"""
from __future__ import annotations

import functools
import json
import random
import threading
import time
from typing import Any

from ..errors import ConfigError, InvalidReplyError, ProviderError
from ..settings import ChatEndpoint
from .base import JsonTask, T, Usage
from .cache import ResponseCache, cache_key
from .embeddings import OpenAIEmbedder  # noqa: F401  (re-exported: both clients from one place)
from .http import BACKOFF_BASE, Client, Http, Log, Response, Sleep, new_client  # noqa: F401
from .jsonreply import COMPACT_JSON_RULES, ReplyCheck, check_reply, repair_note
from .replyschema import token_bound

MODES = ("json_schema", "json_object", "plain")
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

    def __init__(self, endpoint: ChatEndpoint, client: Client | None = None,
                 cache: ResponseCache | None = None, usage: Usage | None = None, *,
                 sleep: Sleep = time.sleep, rng: random.Random | None = None, log: Log | None = None,
                 json_modes: dict[tuple[str, str], str] | None = None):
        if not endpoint.base_url:
            raise ConfigError("no chat base_url is configured", "set BME_CHAT_BASE_URL or [chat] base_url")
        self.endpoint, self.cache, self.log = endpoint, cache, log
        self.name = endpoint.model
        self.usage = usage if usage is not None else Usage()
        self._http = Http("chat", endpoint.base_url, endpoint.api_key, timeout=endpoint.timeout,
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

    def _rejects_format(self, resp: Response) -> bool:
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

    def _read(self, resp: Response) -> tuple[str, str | None]:
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
