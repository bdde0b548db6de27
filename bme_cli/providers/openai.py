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
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, InvalidReplyError, ProviderError
from ..prompts.replyschema import token_bound
from ..settings import ChatEndpoint
from ..task import JsonTask, T
from ..text import estimate_tokens
from .base import Usage
from .cache import ResponseCache, cache_key
from .calllog import CallLog, CallRecord, origin
from .embeddings import OpenAIEmbedder  # noqa: F401  (re-exported: both clients from one place)
from .http import BACKOFF_BASE, Client, Clock, Http, Log, Response, Sleep, new_client  # noqa: F401  (re-exported)
from .jsonreply import COMPACT_JSON_RULES, ReplyCheck, check_reply, repair_note

MODES = ("json_schema", "json_object", "plain")
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "json schema", "schema",
                 "structured", "grammar", "unsupported", "not supported")

# Guards every learned-modes dict (one per client unless a caller shares one): a lock, no state.
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


@dataclass(frozen=True)
class Answer:
    """One completion as received: its text, why it stopped, what was sent, time and tokens."""

    text: str
    finish: str | None
    prompt: str
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    reported: bool          # the token counts are the server's, not bme's estimate


@dataclass(frozen=True)
class Probe:
    """One request in one JSON mode (bme doctor): accepted, rejected or error, and the reply's fate."""

    mode: str
    status: str
    detail: str
    seconds: float
    format_rejected: bool = False   # the server's error names the JSON mode (it cannot do it)
    usable: bool = False
    tokens: int = 0                 # completion tokens of the reply


def _prompt_text(body: dict[str, Any]) -> str:
    return "\n\n".join(str(m.get("content", "")) for m in body.get("messages", []))


def _tokens(usage: Any, prompt: str, reply: str) -> tuple[int, int, bool]:
    """(prompt, completion, reported): the server's counts, else bme's estimates of both."""
    if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int) and usage["prompt_tokens"] > 0:
        return usage["prompt_tokens"], int(usage.get("completion_tokens") or 0), True
    return estimate_tokens(prompt), estimate_tokens(reply), False


def _estimate(task: JsonTask[Any]) -> int:
    """bme's estimate of a task's prompt, the same one `ingest --dry-run` shows."""
    return estimate_tokens(task.system) + estimate_tokens(task.user)


def _message_text(message: dict[str, Any]) -> str:
    """The reply text: content (a string or a list of parts), else reasoning content."""
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    if isinstance(content, str) and content.strip():
        return content
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return reasoning if isinstance(reasoning, str) else ""


def _final_problem(last: ReplyCheck[Any] | None, finish: str | None) -> str:
    """What was wrong with the last reply. Unbalanced JSON is retried as if cut off, but when
    the server said it had finished ("stop") the user is told it was malformed, not cut off."""
    if last is None:
        return "no reply"
    if last.truncated and finish == "stop" and last.kept is None:
        return "unfinished JSON although the server said it was done: malformed, not cut off"
    return last.problem


def _judged(task: JsonTask[T], check: ReplyCheck[T]) -> ReplyCheck[T]:
    """The check, made unusable when the task finds its valid reply implausible."""
    problem = task.plausible(check.value) if check.value is not None and task.plausible else None
    return check if problem is None else ReplyCheck(None, problem)


class OpenAIChatModel:
    """A ChatModel over POST {base_url}/chat/completions.

    JSON-mode downgrades are learned per client, per (base_url, model): the CLI builds one
    client per run, so a run learns once; pass the same `json_modes` dict to clients that
    should share what they learned.
    """

    offline = False

    def __init__(self, endpoint: ChatEndpoint, client: Client | None = None,
                 cache: ResponseCache | None = None, usage: Usage | None = None, *,
                 sleep: Sleep = time.sleep, rng: random.Random | None = None, log: Log | None = None,
                 json_modes: dict[tuple[str, str], str] | None = None, calls: CallLog | None = None,
                 clock: Clock = time.time):
        if not endpoint.base_url:
            raise ConfigError("no chat base_url is configured", "set BME_CHAT_BASE_URL or [chat] base_url")
        self.endpoint, self.cache, self.log, self.calls = endpoint, cache, log, calls
        self._origin = origin(endpoint.base_url)
        self.name = endpoint.model
        self.usage = usage if usage is not None else Usage()
        self._http = Http("chat", endpoint.base_url, endpoint.api_key, timeout=endpoint.timeout,
                           max_retries=endpoint.max_retries, concurrency=endpoint.concurrency,
                           client=client, usage=self.usage, sleep=sleep, rng=rng, log=log, clock=clock)
        self._modes: dict[tuple[str, str], str] = {} if json_modes is None else json_modes
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

    def _ask(self, task: JsonTask[Any], last: ReplyCheck[Any] | None) -> Answer:
        """One completion (downgrading the JSON mode if the server rejects it)."""
        while True:
            mode = self.json_mode
            body = self._body(task, mode, last)
            start = time.monotonic()
            resp = self._post(task, body, start)
            if resp.is_success:
                return self._read(task, resp, body, start)
            rejected = self._http.rejected(resp)
            self._record_failure(task, body, start, "rejected", f"{mode}: {rejected.message}")
            if not (self._rejects_format(resp) and self._downgrade(mode)):
                raise rejected

    def _post(self, task: JsonTask[Any], body: dict[str, Any], start: float) -> Response:
        try:
            return self._http.post("/chat/completions", body, accept=(400, 422))
        except ProviderError as e:
            self._record_failure(task, body, start, "error", e.message)
            raise

    def _read(self, task: JsonTask[Any], resp: Response, body: dict[str, Any], start: float) -> Answer:
        try:
            data = resp.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            error = ProviderError(f"chat endpoint {self._http.base_url} answered with something that is not "
                                  "a chat completion", "check base_url: it should point at an OpenAI-compatible API")
            self._record_failure(task, body, start, "error", error.message)
            raise error from None
        text = _message_text(message)
        answer = Answer(text, choice.get("finish_reason"), _prompt_text(body), time.monotonic() - start,
                        *_tokens(data.get("usage"), _prompt_text(body), text))
        self._count(answer)
        return answer

    def _count(self, answer: Answer) -> None:
        """Add an answer's tokens to the run's usage: the same numbers the call log records."""
        pt, ct = answer.prompt_tokens, answer.completion_tokens
        ep, cost = self.endpoint, None
        if ep.price_prompt_per_m is not None or ep.price_completion_per_m is not None:
            cost = (pt * (ep.price_prompt_per_m or 0) + ct * (ep.price_completion_per_m or 0)) / 1e6
        self.usage.add(prompt_tokens=pt, completion_tokens=ct, cost=cost)

    def _record(self, task: JsonTask[Any], answer: Answer, check: ReplyCheck[Any]) -> None:
        if self.calls is None:
            return
        outcome = "unusable" if not check.ok else ("cut_off" if check.kept is not None else "ok")
        self.calls.record(CallRecord(
            task=task.label or task.kind, model=self.endpoint.model, endpoint=self._origin,
            prompt_tokens=answer.prompt_tokens, completion_tokens=answer.completion_tokens,
            prompt_estimate=_estimate(task), tokens_reported=answer.reported,
            seconds=round(answer.seconds, 3), outcome=outcome, detail=None if outcome == "ok" else check.problem,
            prompt=answer.prompt, reply=answer.text))

    def _record_failure(self, task: JsonTask[Any], body: dict[str, Any], start: float, outcome: str,
                        detail: str) -> None:
        if self.calls is not None:
            prompt = _prompt_text(body)
            self.calls.record(CallRecord(
                task=task.label or task.kind, model=self.endpoint.model, endpoint=self._origin,
                prompt_tokens=0, completion_tokens=0, prompt_estimate=_estimate(task),
                tokens_reported=False, seconds=round(time.monotonic() - start, 3), outcome=outcome,
                detail=self._http.scrub(detail)[:500], prompt=prompt))

    def _cache_key(self, task: JsonTask[Any]) -> str:
        # The key names the request, not the transport: the JSON mode and the API key are not in it.
        return cache_key(kind="chat", base_url=self._http.base_url, model=self.endpoint.model,
                         system=task.system, user=task.user, schema=reply_schema(task),
                         temperature=self.endpoint.temperature, max_tokens=self.endpoint.max_tokens)

    def complete_json(self, task: JsonTask[T]) -> T:
        """A validated reply for task, repairing bad replies up to task.max_retries times."""
        key = self._cache_key(task) if self.cache is not None else None
        if key is not None and (cached := self.cache.get(key)) is not None:
            hit = _judged(task, check_reply(cached, task.response_model))
            if hit.value is not None:
                self.usage.add(cache_hits=1)
                return hit.value
        last: ReplyCheck[T] | None = None
        finish: str | None = None
        for _ in range(task.max_retries + 1):
            answer = self._ask(task, last)
            check = _judged(task, check_reply(answer.text, task.response_model, answer.finish))
            self._record(task, answer, check)
            if check.value is not None:
                if key is not None and check.kept is None:  # a salvaged reply is not worth replaying
                    self.cache.put(key, answer.text)
                return check.value
            last, finish = check, answer.finish
        raise InvalidReplyError(
            f"the chat model gave no usable reply to the {task.kind} task in {task.max_retries + 1} "
            f"attempts: {_final_problem(last, finish)}",
            "try a stronger model, or raise chat.max_tokens if replies are cut off")

    def probe(self, task: JsonTask[Any], mode: str) -> Probe:
        """Ask task once in one JSON mode, without downgrading: did the server take it, and was the reply usable?"""
        body = self._body(task, mode, None)
        start = time.monotonic()
        try:
            resp = self._post(task, body, start)
            if not resp.is_success:
                detail = f"HTTP {resp.status_code}: {self._http.server_message(resp, 120)}"
                self._record_failure(task, body, start, "rejected", f"{mode}: {detail}")
                return Probe(mode, "rejected", detail, time.monotonic() - start, self._rejects_format(resp))
            answer = self._read(task, resp, body, start)
        except ProviderError as e:
            return Probe(mode, "error", e.message, time.monotonic() - start)
        check = check_reply(answer.text, task.response_model, answer.finish)
        self._record(task, answer, check)
        return Probe(mode, "accepted", check.problem or "", answer.seconds, usable=check.ok,
                     tokens=answer.completion_tokens)

    def server_info(self) -> dict[str, Any]:
        """What the server says about the model without generating anything: its context size
        (llama.cpp: /v1/models meta.n_ctx or /props; vLLM: max_model_len), when it says."""
        models = self._http.get_json("/models")
        for item in (models.get("data") or []) if isinstance(models, dict) else []:
            if not isinstance(item, dict):
                continue
            meta = item.get("meta") if isinstance(item.get("meta"), dict) else {}
            for size in (meta.get("n_ctx"), item.get("max_model_len"), item.get("context_length")):
                if isinstance(size, int) and size > 0:
                    return {"context_size": size, "source": "/models", "model": item.get("id")}
        props = self._http.get_json("/props", root=True)
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        size = settings.get("n_ctx") if isinstance(settings, dict) else None
        return {"context_size": size, "source": "/props"} if isinstance(size, int) and size > 0 else {}

    def close(self) -> None:
        """Close the HTTP client if this model created it."""
        self._http.close()
