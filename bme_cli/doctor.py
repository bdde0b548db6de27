"""`bme doctor`: check the configuration and talk to the configured models once each.

Like ST-BME's "test connection" button, but for both endpoints and in seconds even
against a slow local server: one tiny chat call in the best JSON mode the server takes
(json_schema, then json_object, then plain: the mode every later request will use), the
context size if the server says it (llama.cpp's /v1/models or /props), one embedding
call, with latencies. The probes ask for a handful of tokens, and the whole check stops
at a time limit. Every failure becomes a line in the report that says what to change;
nothing here raises for a broken endpoint.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel

from .errors import BmeError
from .prompts.replyschema import flag, record
from .providers.base import Embedder, Usage
from .providers.factory import Providers
from .settings import Settings
from .task import TASK_KINDS, JsonTask

Status = Literal["ok", "warn", "fail"]


class Ping(BaseModel):
    """The doctor's trivial reply: {"ok": true}."""

    ok: bool


PING_TASK = JsonTask(kind="recall", system="You are a connection test for a JSON API.",
                     user='Reply with exactly this JSON object: {"ok": true}', response_model=Ping,
                     max_retries=0, json_schema=record({"ok": flag()}, required=["ok"]), label="doctor")

TIME_LIMIT = 50.0            # seconds for the whole check (bme doctor --time-limit)
EXTRACT_PROMPT_TOKENS = 2500  # a typical extraction prompt: instructions, node types, dialogue


@dataclass
class DoctorCheck:
    """One line of the report."""

    name: str
    status: Status
    detail: str
    latency_ms: float | None = None


@dataclass
class DoctorReport:
    """Everything `bme doctor` found out."""

    checks: list[DoctorCheck] = field(default_factory=list)
    json_modes: dict[str, str] = field(default_factory=dict)
    json_mode: str | None = None          # the mode requests to this endpoint will use
    context_size: int | None = None
    embedding_dimension: int | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings allowed)."""
        return all(c.status != "fail" for c in self.checks)

    def add(self, name: str, status: Status, detail: str, latency_ms: float | None = None) -> None:
        self.checks.append(DoctorCheck(name, status, detail, latency_ms))

    def as_dict(self) -> dict[str, Any]:
        """Plain data for --format json."""
        return {"ok": self.ok, "checks": [asdict(c) for c in self.checks], "json_modes": self.json_modes,
                "json_mode": self.json_mode, "context_size": self.context_size,
                "embedding_dimension": self.embedding_dimension, "seconds": round(self.seconds, 2)}


class _Clock:
    """The doctor's time limit: what is left, for each request's timeout."""

    def __init__(self, limit: float):
        self.end = time.monotonic() + limit

    def left(self) -> float:
        return self.end - time.monotonic()

    def timeout(self, configured: float) -> float:
        return max(1.0, min(configured, self.left()))


def _is_local(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1") or host.endswith(".local")


def _check_config(settings: Settings, report: DoctorReport) -> None:
    chat, emb = settings.chat, settings.embedding
    if chat.base_url:
        key = "an API key" if chat.api_key is not None else "no API key"
        report.add("config", "ok", f"chat: {chat.model} at {chat.base_url} with {key}")
        if chat.api_key is not None and urlsplit(chat.base_url).scheme == "http" and not _is_local(chat.base_url):
            report.add("config", "warn", "the chat API key would travel unencrypted (http://): use https")
    else:
        report.add("config", "ok", "chat: offline heuristic provider (no chat base_url)")
        if chat.api_key is not None:
            report.add("config", "warn", "an API key is set but no chat base_url, so it is unused")
    if emb.base_url and not emb.offline:
        key = "an API key" if emb.api_key is not None else "no API key"
        report.add("config", "ok", f"embedding: {emb.model} at {emb.base_url} with {key}")
    else:
        report.add("config", "ok", f"embedding: offline ({emb.offline_model})")


def _check_offline_chat(chat: Any, report: DoctorReport) -> None:
    missing = chat.missing_kinds()   # an OfflineChatModel: kinds without a heuristic, or not installed
    if missing:
        report.add("chat", "fail", f"offline heuristics missing for: {', '.join(missing)}")
    else:
        report.add("chat", "ok", f"offline heuristic provider answers every task ({', '.join(TASK_KINDS)})")


def _probe_modes(model: Any, report: DoctorReport, clock: _Clock) -> Any:
    """Ping in json_schema, then json_object, then plain, stepping down only when the server
    rejects a mode (as every request would): the first accepted probe, or None."""
    from .providers.openai import MODES
    forced = model.endpoint.json_mode
    for mode in ([forced] if forced != "auto" else list(MODES)):
        if clock.left() <= 0:
            report.json_modes[mode] = "not tried: time limit"
            break
        probe = model.probe(PING_TASK, mode)
        if probe.status == "accepted":
            report.json_modes[mode] = "accepted" if probe.usable else f"accepted, reply unusable: {probe.detail}"
            return probe
        report.json_modes[mode] = f"{probe.status} ({probe.detail})"
        if not probe.format_rejected:
            report.add("chat", "fail", f"{model.endpoint.model} at {model.endpoint.base_url}: {probe.detail}",
                       probe.seconds * 1000)
            return None
    report.add("chat", "fail", "the server rejected every JSON mode bme can ask for (set chat.json_mode, "
               "or use a server with JSON output: llama.cpp, Ollama, vLLM, OpenAI)")
    return None


def _speed_note(probe: Any, endpoint: Any) -> str | None:
    """A warning when chat.timeout is too short for a full reply at the speed the ping showed."""
    if probe.tokens < 1 or probe.seconds <= 0:
        return None
    full = endpoint.max_tokens * probe.seconds / probe.tokens
    if full <= endpoint.timeout:
        return None
    return (f"about {probe.tokens / probe.seconds:.1f} tokens/s: a reply of chat.max_tokens={endpoint.max_tokens} "
            f"tokens could take {full:.0f} s, more than chat.timeout={endpoint.timeout:g} s; "
            "raise chat.timeout, lower chat.max_tokens, or use a faster model or server")


def _check_context(model: Any, report: DoctorReport, clock: _Clock) -> None:
    info = model.server_info() if clock.left() > 0 else {}
    size = info.get("context_size")
    report.context_size = size
    if size is None:
        report.add("context", "ok", "the server does not say its context size (Ollama's default is smaller "
                   "than an extraction prompt: start it with OLLAMA_CONTEXT_LENGTH=8192)")
        return
    need = EXTRACT_PROMPT_TOKENS + model.endpoint.max_tokens
    if size < need:
        report.add("context", "warn", f"{size} tokens: less than an extraction prompt (~{EXTRACT_PROMPT_TOKENS}) "
                   f"plus chat.max_tokens ({model.endpoint.max_tokens}); start the server with a larger context "
                   "(llama.cpp: -c 8192; Ollama: OLLAMA_CONTEXT_LENGTH=8192) or lower chat.max_tokens")
    else:
        report.add("context", "ok", f"{size} tokens (from {info['source']})")


def _check_chat(settings: Settings, providers: Providers, client: Any, report: DoctorReport, clock: _Clock) -> None:
    if providers.chat.offline:
        _check_offline_chat(providers.chat, report)
        return
    from .providers.openai import OpenAIChatModel
    # A fresh model: no cache, no learned downgrades, no retries, a timeout within the limit.
    endpoint = settings.chat.model_copy(update={"max_retries": 0, "timeout": clock.timeout(settings.chat.timeout)})
    model = OpenAIChatModel(endpoint, client=client, usage=Usage(), json_modes={}, calls=providers.calls)
    try:
        probe = _probe_modes(model, report, clock)
        if probe is None:
            return
        report.json_mode = probe.mode
        status: Status = "ok" if probe.usable else "warn"
        detail = (f"{endpoint.model} answered in {probe.mode} mode" if probe.usable else
                  f"{endpoint.model} answered, but not with the JSON asked for ({probe.detail}): "
                  "a model this weak will fail most tasks; try a stronger one")
        report.add("chat", status, detail, probe.seconds * 1000)
        others = "; ".join(f"{m}: {v}" for m, v in report.json_modes.items() if m != probe.mode)
        report.add("json mode", "ok", f"{probe.mode}, the mode requests will use" + (f" ({others})" if others else ""))
        note = _speed_note(probe, settings.chat)
        if note:
            report.add("speed", "warn", note)
        _check_context(model, report, clock)
    finally:
        model.close()


def _check_embedding(settings: Settings, providers: Providers, client: Any, report: DoctorReport,
                     clock: _Clock) -> None:
    embedder: Embedder = providers.embedder
    fresh = None
    if not embedder.offline:
        if clock.left() <= 0:
            report.add("embedding", "fail", "not checked: the doctor's time limit was reached "
                       "(raise --time-limit, or check the chat endpoint's speed first)")
            return
        from .providers.embeddings import OpenAIEmbedder
        endpoint = settings.embedding.model_copy(update={"max_retries": 0,
                                                         "timeout": clock.timeout(settings.embedding.timeout)})
        embedder = fresh = OpenAIEmbedder(endpoint, client=client, usage=Usage(), calls=providers.calls)
    try:
        start = time.monotonic()
        vectors = embedder.embed(["test connection"])
        report.embedding_dimension = int(vectors.shape[1])
        report.add("embedding", "ok", f"{embedder.model_id}: dimension {vectors.shape[1]}",
                   (time.monotonic() - start) * 1000)
    except BmeError as e:
        report.add("embedding", "fail", str(e))
    finally:
        if fresh is not None:
            fresh.close()


def run_doctor(settings: Settings, providers: Providers, *, client: Any = None,
               time_limit: float = TIME_LIMIT) -> DoctorReport:
    """Check the configuration, one chat call in the best JSON mode, the context size and one
    embedding call, all within time_limit seconds."""
    start, clock = time.monotonic(), _Clock(time_limit)
    report = DoctorReport()
    _check_config(settings, report)
    _check_chat(settings, providers, client, report, clock)
    _check_embedding(settings, providers, client, report, clock)
    report.seconds = time.monotonic() - start
    return report
