"""The API key goes only into the Authorization header of requests to its base URL, and
nowhere else: not in exceptions, hints, logs, cache files, reports or displayed settings.
(Library level; the CLI-level version runs whole commands.)"""
from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest
from pydantic import BaseModel

import openai_stub as st
from bme_cli.doctor import run_doctor
from bme_cli.errors import BmeError, ConfigError
from bme_cli.providers.factory import build_providers, describe
from bme_cli.settings import load_settings, redacted
from bme_cli.task import JsonTask

KEY = "sk-SECRET-7f3a9c1e5b2d4f6a8c0e"


class Reply(BaseModel):
    name: str


TASK = JsonTask(kind="extract", system="s", user="u", response_model=Reply, max_retries=1)

CHAT_FAULTS = {
    "ok": [st.reply_json({"name": "a"})],
    "fenced-after-malformed": [st.malformed(f'{{"bad": "{KEY[:6]}",,}}'), st.fenced({"name": "b"})],
    "invalid-twice": [st.malformed(), st.truncated()],
    "429-then-ok": [st.rate_limited("0"), st.reply_json({"name": "c"})],
    "500s": [st.server_error()] * 3,
    "slow": [st.slow(0.5)] * 3,
    "dropped": [st.drop()] * 3,
    "401-echoing-key": [st.unauthorized(f"Incorrect API key provided: {KEY}")],
    "403": [st.status(403, f"key {KEY} may not use this model")],
    "404": [st.status(404, f"no model for {KEY}")],
    "400-echoing-key": [st.status(400, f"bad request from {KEY}")],
    "422-format-echo": [st.status(422, f"response_format unsupported for {KEY}")] * 3,
    "redirect": [st.redirect(f"http://127.0.0.1:9/steal?k={KEY}")],
}
EMBEDDING_FAULTS = {
    "ok": [],
    "wrong-count": [st.wrong_count(1)],
    "wrong-dimension": [st.wrong_dimension(5)],
    "401": [st.unauthorized(f"bad key {KEY}")],
    "500s": [st.server_error()] * 3,
    "dropped": [st.drop()] * 3,
}


def _providers(stub, tmp_path: Path, log: list[str]):
    settings = load_settings(env={"BME_CHAT_BASE_URL": stub.base_url, "BME_API_KEY": KEY,
                                  "BME_CHAT_TIMEOUT": "0.2", "BME_CHAT_MAX_RETRIES": "2",
                                  "BME_EMBEDDING_TIMEOUT": "0.2", "BME_EMBEDDING_MAX_RETRIES": "2",
                                  "XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    p = build_providers(settings, cache_dir=tmp_path / "cache", use_cache=True, log=log.append)
    for model in (p.chat, p.embedder):
        model._http.sleep = lambda s: None      # no real waiting between retries
    return settings, p


def _record(exc: BaseException) -> str:
    return "\n".join([str(exc), repr(exc), repr(exc.args), getattr(exc, "hint", "") or "",
                      "".join(traceback.format_exception_only(type(exc), exc))])


def _run(fn, seen: list[str]) -> None:
    try:
        seen.append(repr(fn()))
    except BmeError as e:
        seen.append(_record(e))


@pytest.mark.parametrize("fault", list(CHAT_FAULTS))
def test_key_never_leaks_from_the_chat_client(openai_stub, tmp_path, fault):
    log: list[str] = []
    seen: list[str] = []
    settings, p = _providers(openai_stub, tmp_path, log)
    openai_stub.enqueue(*CHAT_FAULTS[fault])
    _run(lambda: p.chat.complete_json(TASK), seen)
    _assert_clean(openai_stub, tmp_path, settings, p, log, seen)


@pytest.mark.parametrize("fault", list(EMBEDDING_FAULTS))
def test_key_never_leaks_from_the_embedder(openai_stub, tmp_path, fault):
    log: list[str] = []
    seen: list[str] = []
    settings, p = _providers(openai_stub, tmp_path, log)
    openai_stub.enqueue(*EMBEDDING_FAULTS[fault], endpoint="embeddings")
    _run(lambda: p.embedder.embed(["one", "two"]), seen)
    _assert_clean(openai_stub, tmp_path, settings, p, log, seen)


def test_key_never_leaks_from_doctor(openai_stub, tmp_path):
    log: list[str] = []
    settings, p = _providers(openai_stub, tmp_path, log)
    openai_stub.enqueue(st.unauthorized(f"bad key {KEY}"), st.status(400, f"no {KEY}"))
    seen = [json.dumps(run_doctor(settings, p).as_dict())]
    _assert_clean(openai_stub, tmp_path, settings, p, log, seen)


def test_key_never_leaks_from_config_errors(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[chat]\napi_key = "{KEY}"\ntemperature = "{KEY}"\n')
    with pytest.raises(ConfigError) as e:
        load_settings(env={}, config_path=cfg)
    assert "chat.temperature" in str(e.value)
    cfg.write_text(f'[chat]\napi_key = ["{KEY}"]\n')
    with pytest.raises(ConfigError) as e2:
        load_settings(env={}, config_path=cfg)
    for err in (e.value, e2.value):
        assert KEY not in _record(err)
    with pytest.raises(ConfigError) as e3:
        load_settings(env={"BME_CHAT_API_KEY": KEY, "BME_CHAT_MAX_TOKENS": "1"})
    assert KEY not in _record(e3.value)


def _assert_clean(stub, tmp_path: Path, settings, p, log: list[str], seen: list[str]) -> None:
    # The key was sent, but only as a bearer token, and only to the configured server.
    assert stub.requests, "the scenario made no request"
    for req in stub.requests:
        assert req.headers.get("Authorization") == f"Bearer {KEY}"
        assert KEY not in req.raw.decode("utf-8", "replace") and KEY not in req.path
    outputs = seen + log + [json.dumps(redacted(settings), default=str), json.dumps(describe(p)),
                            repr(settings), str(settings), json.dumps(p.usage.as_dict())]
    for text in outputs:
        assert KEY not in text
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
