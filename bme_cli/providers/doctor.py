"""`bme doctor`: check the configuration and talk to the configured models once each.

Like ST-BME's "test connection" button, but for both endpoints: one tiny chat call, a
probe of which JSON modes the server accepts, one embedding call, with latencies. Every
failure becomes a line in the report; nothing here raises for a broken endpoint.
"""
from __future__ import annotations

import importlib.util
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel

from ..errors import BmeError
from ..settings import Settings
from .base import TASK_KINDS, Embedder, JsonTask, Usage
from .factory import Providers
from .replyschema import flag, record

Status = Literal["ok", "warn", "fail"]


class Ping(BaseModel):
    """The doctor's trivial reply: {"ok": true}."""

    ok: bool


PING_TASK = JsonTask(kind="recall", system="You are a connection test for a JSON API.",
                     user='Reply with exactly this JSON object: {"ok": true}', response_model=Ping,
                     max_retries=1, json_schema=record({"ok": flag()}, required=["ok"]))


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
    embedding_dimension: int | None = None

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings allowed)."""
        return all(c.status != "fail" for c in self.checks)

    def add(self, name: str, status: Status, detail: str, latency_ms: float | None = None) -> None:
        self.checks.append(DoctorCheck(name, status, detail, latency_ms))

    def as_dict(self) -> dict[str, Any]:
        """Plain data for --format json."""
        return {"ok": self.ok, "checks": [asdict(c) for c in self.checks],
                "json_modes": self.json_modes, "embedding_dimension": self.embedding_dimension}


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


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    result = fn()
    return result, (time.monotonic() - start) * 1000


def _check_chat(settings: Settings, providers: Providers, client: Any, report: DoctorReport) -> None:
    if providers.chat.offline:
        missing = [k for k in TASK_KINDS
                   if importlib.util.find_spec(f"{__package__}.heuristic.{k}") is None]
        if missing:
            report.add("chat", "fail", f"offline heuristics missing for: {', '.join(missing)}")
        else:
            report.add("chat", "ok", f"offline heuristic provider answers every task ({', '.join(TASK_KINDS)})")
        return
    from .openai import OpenAIChatModel
    # A fresh model: no cache, no learned downgrades, few retries, so the answers are honest and quick.
    endpoint = settings.chat.model_copy(update={"max_retries": min(settings.chat.max_retries, 1)})
    model = OpenAIChatModel(endpoint, client=client, usage=Usage(), json_modes={})
    try:
        _, ms = _timed(lambda: model.complete_json(PING_TASK))
        report.add("chat", "ok", f"{endpoint.model} answered a JSON task ({model.json_mode})", ms)
    except BmeError as e:
        report.add("chat", "fail", str(e))
    try:
        report.json_modes = model.probe_json_modes(PING_TASK)
        accepted = [m for m, v in report.json_modes.items() if v == "accepted"]
        report.add("json modes", "ok" if accepted else "warn",
                   "; ".join(f"{m}: {v}" for m, v in report.json_modes.items()))
    except BmeError as e:
        report.add("json modes", "fail", str(e))
    finally:
        model.close()


def _check_embedding(settings: Settings, providers: Providers, client: Any, report: DoctorReport) -> None:
    embedder: Embedder = providers.embedder
    fresh = None
    if not embedder.offline:
        from .embeddings import OpenAIEmbedder
        endpoint = settings.embedding.model_copy(update={"max_retries": min(settings.embedding.max_retries, 1)})
        embedder = fresh = OpenAIEmbedder(endpoint, client=client, usage=Usage())
    try:
        vectors, ms = _timed(lambda: embedder.embed(["test connection"]))
        report.embedding_dimension = int(vectors.shape[1])
        report.add("embedding", "ok", f"{embedder.model_id}: dimension {vectors.shape[1]}", ms)
    except BmeError as e:
        report.add("embedding", "fail", str(e))
    finally:
        if fresh is not None:
            fresh.close()


def run_doctor(settings: Settings, providers: Providers, *, client: Any = None) -> DoctorReport:
    """Check the configuration, one chat call, the JSON modes and one embedding call."""
    report = DoctorReport()
    _check_config(settings, report)
    _check_chat(settings, providers, client, report)
    _check_embedding(settings, providers, client, report)
    return report
