"""The OpenAI-compatible clients against a real local server (tests/openai_stub.py)."""
from __future__ import annotations

import email.utils
import json
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from pydantic import BaseModel, SecretStr

import openai_stub as st
from bme_cli.doctor import run_doctor
from bme_cli.errors import ConfigError, ExitCode, InvalidReplyError, ProviderError
from bme_cli.prompts.replyschema import items, record, text
from bme_cli.providers.cache import ResponseCache
from bme_cli.providers.factory import build_providers, describe
from bme_cli.providers.openai import BACKOFF_BASE, OpenAIChatModel, OpenAIEmbedder, task_max_tokens
from bme_cli.settings import ChatEndpoint, EmbeddingEndpoint, load_settings
from bme_cli.task import JsonTask

KEY = "sk-test-0123456789abcdef"
GOOD = {"items": [{"name": "Alice"}]}


class Item(BaseModel):
    name: str


class Items(BaseModel):
    items: list[Item]


def task(max_retries: int = 2, user: str = "Who is here?") -> JsonTask[Items]:
    return JsonTask(kind="extract", system="You extract people.", user=user, response_model=Items,
                    max_retries=max_retries)


def chat_model(stub, delays=None, cache=None, rng=None, clock=time.time, **kw) -> OpenAIChatModel:
    params = dict(base_url=stub.base_url, api_key=SecretStr(KEY), model="m", timeout=2.0, max_retries=3)
    params.update(kw)
    return OpenAIChatModel(ChatEndpoint(**params), cache=cache, json_modes={}, rng=rng, clock=clock,
                           sleep=(delays.append if delays is not None else lambda s: None))


def embedder(stub, cache=None, **kw) -> OpenAIEmbedder:
    params = dict(base_url=stub.base_url, model="e", max_retries=2, timeout=2.0)
    params.update(kw)
    return OpenAIEmbedder(EmbeddingEndpoint(**params), cache=cache, sleep=lambda s: None)


# ------------------------------------------------------------------ replies and JSON extraction

def test_good_reply_is_validated_and_request_is_openai_shaped(openai_stub):
    openai_stub.enqueue(st.reply_json(GOOD))
    assert chat_model(openai_stub).complete_json(task()) == Items(**GOOD)
    (req,) = openai_stub.requests
    assert (req.method, req.path) == ("POST", "/v1/chat/completions")
    assert req.headers["Authorization"] == f"Bearer {KEY}"
    assert [m["role"] for m in req.messages] == ["system", "user"]
    assert req.messages[0]["content"].startswith("You extract people.")
    assert req.messages[1]["content"] == "Who is here?"
    rf = req.body["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["name"] == "extract"
    assert rf["json_schema"]["strict"] is False and rf["json_schema"]["schema"] == Items.model_json_schema()
    assert req.body["model"] == "m" and req.body["max_tokens"] == 2048


@pytest.mark.parametrize("behaviour", [
    st.fenced(GOOD), st.prose(GOOD), st.think(GOOD),
    st.reply([{"type": "text", "text": json.dumps(GOOD)}]),
    st.reply("", reasoning=json.dumps(GOOD)),
    st.reply_json(GOOD["items"]),           # a bare list for a one-list-field model
], ids=["fenced", "prose", "think", "content-parts", "reasoning-content", "bare-list"])
def test_json_is_extracted_from_messy_replies(openai_stub, behaviour):
    openai_stub.enqueue(behaviour)
    assert chat_model(openai_stub).complete_json(task(max_retries=0)) == Items(**GOOD)


def test_malformed_reply_is_repaired_with_a_rebuilt_prompt(openai_stub):
    openai_stub.enqueue(st.malformed(), st.reply_json(GOOD))
    assert chat_model(openai_stub).complete_json(task()) == Items(**GOOD)
    first, second = openai_stub.requests
    assert len(second.messages) == 2                     # rebuilt, not grown
    assert second.messages[0] == first.messages[0]
    assert second.messages[1]["content"].startswith("Who is here?")
    assert "no parseable JSON" in second.messages[1]["content"]


def test_schema_mismatch_repair_note_quotes_the_validation_error(openai_stub):
    openai_stub.enqueue(st.reply_json({"items": [{"nom": "x"}]}), st.reply_json(GOOD))
    chat_model(openai_stub).complete_json(task())
    note = openai_stub.requests[1].messages[1]["content"]
    assert "did not match the schema" in note and "items.0.name" in note and "Field required" in note


# Cut inside the first item, so nothing can be kept (see the salvage tests below).
@pytest.mark.parametrize("behaviour", [
    st.truncated('{"items": [{"name": "a'),                                # finish_reason length
    st.truncated('{"items": [{"name": "a"', finish_reason="stop"),         # unbalanced
    st.reply('```json\n{"items": [{"nam', finish_reason="stop"),           # open fence
], ids=["finish-length", "unbalanced", "unclosed-fence"])
def test_truncated_reply_asks_for_shorter_output(openai_stub, behaviour):
    openai_stub.enqueue(behaviour, st.reply_json(GOOD))
    assert chat_model(openai_stub).complete_json(task()) == Items(**GOOD)
    note = openai_stub.requests[1].messages[1]["content"]
    assert "cut off" in note and "shorter" in note


def test_no_usable_reply_within_retries_raises_invalid_reply(openai_stub):
    openai_stub.enqueue(st.malformed(), st.malformed(), st.malformed(), st.reply_json(GOOD))
    with pytest.raises(InvalidReplyError) as e:
        chat_model(openai_stub).complete_json(task(max_retries=2))
    assert len(openai_stub.requests) == 3 and e.value.exit_code == ExitCode.UNUSABLE_REPLY
    assert "extract" in e.value.message and "3 attempts" in e.value.message


def test_malformed_envelope_is_a_provider_error(openai_stub):
    openai_stub.enqueue(lambda h, rec: h.send_json(200, {"hello": "world"}))
    with pytest.raises(ProviderError, match="not a chat completion"):
        chat_model(openai_stub).complete_json(task())


def test_extraction_is_string_aware_and_takes_the_first_complete_value():
    from bme_cli.providers.jsonreply import candidates, check_reply, strip_think
    assert candidates('note {"a": "}{"} end')[-1] == '{"a": "}{"}'
    assert check_reply('x {"name": "a \\" }"} y', Item).value == Item(name='a " }')
    assert check_reply('{"name": "a"} and then {"name": "b"}', Item).value == Item(name="a")
    assert strip_think("<think>unfinished {") == "" and strip_think("a<think>b</think>c") == "ac"
    assert check_reply("<think>cut", Item, "length").truncated


# ------------------------------------------------------------------ transport faults

def test_429_honours_retry_after_seconds_and_caps_long_waits(openai_stub):
    delays: list[float] = []
    openai_stub.enqueue(st.rate_limited("2"), st.rate_limited("3600"), st.reply_json(GOOD))
    assert chat_model(openai_stub, delays).complete_json(task()) == Items(**GOOD)
    assert delays == [2.0, 60.0] and len(openai_stub.requests) == 3


def test_429_honours_retry_after_http_date(openai_stub):
    delays: list[float] = []
    now = 1_700_000_000.0      # the client's clock, not the machine's: the wait is exact
    when = email.utils.formatdate(now + 10, usegmt=True)
    openai_stub.enqueue(st.rate_limited(when), st.rate_limited(email.utils.formatdate(now - 5, usegmt=True)),
                        st.reply_json(GOOD))
    chat_model(openai_stub, delays, clock=lambda: now).complete_json(task())
    assert delays == [10.0, 0.0]      # a date already past means retry at once


def test_5xx_is_retried_with_jittered_exponential_backoff(openai_stub):
    delays: list[float] = []
    openai_stub.enqueue(st.server_error(500), st.server_error(502), st.server_error(503), st.reply_json(GOOD))
    assert chat_model(openai_stub, delays, rng=random.Random(7)).complete_json(task()) == Items(**GOOD)
    # Full jitter: attempt n waits uniformly in [0, BACKOFF_BASE * 2**n), drawn from the injected rng.
    draw = random.Random(7)
    windows = [BACKOFF_BASE * 2 ** attempt for attempt in range(3)]
    assert delays == [draw.uniform(0, w) for w in windows]
    assert all(0 < d < w for d, w in zip(delays, windows)) and len(set(delays)) == 3


def test_persistent_5xx_fails_after_the_transport_budget(openai_stub):
    delays: list[float] = []
    openai_stub.enqueue(*[st.server_error()] * 10)
    with pytest.raises(ProviderError, match="failed after 3 attempts: HTTP 500") as e:
        chat_model(openai_stub, delays, max_retries=2).complete_json(task())
    assert len(openai_stub.requests) == 3 and len(delays) == 2
    assert not isinstance(e.value, InvalidReplyError) and e.value.exit_code == ExitCode.PROVIDER


def test_reply_slower_than_timeout_is_retried(openai_stub):
    openai_stub.enqueue(st.slow(1.0), st.reply_json(GOOD))
    start = time.monotonic()
    assert chat_model(openai_stub, timeout=0.3).complete_json(task()) == Items(**GOOD)
    assert len(openai_stub.requests_to("chat")) == 2 and time.monotonic() - start < 1.0


def test_timeouts_until_budget_exhausted_name_the_timeout(openai_stub):
    openai_stub.enqueue(st.slow(0.6), st.slow(0.6))
    with pytest.raises(ProviderError, match=r"no answer within 0.2 s"):
        chat_model(openai_stub, timeout=0.2, max_retries=1).complete_json(task())


def test_dropped_connection_is_retried(openai_stub):
    openai_stub.enqueue(st.drop(), st.reply_json(GOOD))
    assert chat_model(openai_stub).complete_json(task()) == Items(**GOOD)
    assert len(openai_stub.requests) == 2


def test_connection_refused_fails_after_retries_without_the_key():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]         # closed again: nothing listens here
    model = OpenAIChatModel(ChatEndpoint(base_url=f"http://127.0.0.1:{port}/v1", api_key=SecretStr(KEY),
                                         max_retries=1), json_modes={}, sleep=lambda s: None)
    with pytest.raises(ProviderError, match="connection failed") as e:
        model.complete_json(task())
    assert KEY not in str(e.value)


def test_401_fails_at_once_with_exit_code_4_and_no_key(openai_stub):
    openai_stub.enqueue(st.unauthorized(f"Incorrect API key provided: {KEY}"))
    with pytest.raises(ProviderError) as e:
        chat_model(openai_stub).complete_json(task())
    assert len(openai_stub.requests) == 1 and e.value.exit_code == ExitCode.PROVIDER
    assert "check the API key" in str(e.value) and KEY not in str(e.value)


def test_404_says_to_check_base_url_and_model(openai_stub):
    openai_stub.enqueue(st.status(404, "model not found"))
    with pytest.raises(ProviderError, match="check base_url .* and model"):
        chat_model(openai_stub).complete_json(task())
    assert len(openai_stub.requests) == 1


def test_other_4xx_quotes_the_server_with_the_key_masked(openai_stub):
    openai_stub.enqueue(st.status(400, f"max_tokens too large for key {KEY}"))
    with pytest.raises(ProviderError) as e:
        chat_model(openai_stub).complete_json(task())
    assert "max_tokens too large" in str(e.value) and KEY not in str(e.value) and "***" in str(e.value)
    assert len(openai_stub.requests) == 1      # not mistaken for an unsupported response_format


def test_redirects_are_not_followed_so_the_key_stays_home(openai_stub):
    other = st.OpenAIStub().start()
    try:
        openai_stub.enqueue(st.redirect(other.base_url + "/chat/completions"))
        with pytest.raises(ProviderError, match="redirected"):
            chat_model(openai_stub).complete_json(task())
        assert other.requests == []
    finally:
        other.stop()


def test_no_authorization_header_without_a_key(openai_stub):
    chat_model(openai_stub, api_key=None).complete_json(task())
    assert "Authorization" not in openai_stub.requests[0].headers


# ------------------------------------------------------------------ JSON mode downgrade

def test_json_schema_rejection_downgrades_and_is_remembered(openai_stub):
    openai_stub.rejected_modes = {"json_schema"}
    modes: dict = {}
    ep = ChatEndpoint(base_url=openai_stub.base_url, model="m")
    model = OpenAIChatModel(ep, json_modes=modes)
    assert model.complete_json(task()) == Items(items=[Item(name="x")])   # the stub's schema example
    assert [r.response_format for r in openai_stub.requests] == ["json_schema", "json_object"]
    model.complete_json(task(user="again"))
    assert openai_stub.requests[-1].response_format == "json_object"
    # A second model for the same endpoint in the same run starts where the first left off.
    OpenAIChatModel(ep, json_modes=modes).complete_json(task(user="third"))
    assert openai_stub.requests[-1].response_format == "json_object"
    assert len(openai_stub.requests) == 4


def test_learned_json_modes_belong_to_the_client_not_the_process(openai_stub):
    openai_stub.rejected_modes = {"json_schema"}
    ep = ChatEndpoint(base_url=openai_stub.base_url, model="m")
    first = OpenAIChatModel(ep)
    first.complete_json(task())
    assert first.json_mode == "json_object"
    assert OpenAIChatModel(ep).json_mode == "json_schema"   # a new client has learned nothing yet


def test_downgrade_reaches_plain_prompting_with_the_schema_in_the_prompt(openai_stub):
    openai_stub.rejected_modes = {"json_schema", "json_object"}
    model = chat_model(openai_stub)
    assert model.complete_json(task()) is not None
    assert [r.response_format for r in openai_stub.requests] == ["json_schema", "json_object", "plain"]
    plain = openai_stub.requests[-1]
    assert "response_format" not in plain.body
    assert json.dumps(Items.model_json_schema(), separators=(",", ":")) in plain.messages[0]["content"]
    assert model.json_mode == "plain"


def test_a_one_off_rejection_from_the_queue_also_downgrades(openai_stub):
    openai_stub.enqueue(st.reject_json_schema(), st.reply_json(GOOD))
    assert chat_model(openai_stub).complete_json(task()) == Items(**GOOD)
    assert [r.response_format for r in openai_stub.requests] == ["json_schema", "json_object"]


def test_forced_json_mode_is_used_and_never_downgraded(openai_stub):
    openai_stub.rejected_modes = {"json_object"}
    with pytest.raises(ProviderError, match="HTTP 400"):
        chat_model(openai_stub, json_mode="json_object").complete_json(task())
    assert [r.response_format for r in openai_stub.requests] == ["json_object"]


def test_probe_reports_each_json_mode(openai_stub):
    openai_stub.rejected_modes = {"json_schema"}
    model = chat_model(openai_stub)
    rejected, accepted = model.probe(task(), "json_schema"), model.probe(task(), "json_object")
    assert rejected.status == "rejected" and rejected.format_rejected and rejected.detail.startswith("HTTP 400")
    assert accepted.status == "accepted" and accepted.usable and accepted.tokens > 0
    assert model.json_mode == "json_schema"   # a probe learns nothing: it only reports


# ------------------------------------------------------------------ concurrency, usage, cache, logs

def _hammer(model: OpenAIChatModel, n: int) -> None:
    threads = [threading.Thread(target=model.complete_json, args=(task(user=f"q{i}"),)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_concurrency_limit_is_shared_by_all_threads(openai_stub):
    openai_stub.delay = 0.15
    _hammer(chat_model(openai_stub, concurrency=2), 6)
    assert len(openai_stub.requests) == 6 and openai_stub.max_in_flight == 2


def test_without_a_tight_limit_requests_do_overlap(openai_stub):
    openai_stub.delay = 0.3
    _hammer(chat_model(openai_stub, concurrency=8), 6)
    assert openai_stub.max_in_flight > 2


def test_usage_counts_requests_tokens_and_cost(openai_stub):
    openai_stub.enqueue(st.reply_json(GOOD, usage=(100, 20)), st.malformed(), st.reply_json(GOOD, usage=(50, 10)))
    model = chat_model(openai_stub, price_prompt_per_m=1.0, price_completion_per_m=4.0)
    model.complete_json(task())
    model.complete_json(task(user="2"))
    u = model.usage
    assert (u.requests, u.prompt_tokens, u.completion_tokens) == (3, 160, 35)
    assert u.cost == pytest.approx((160 * 1.0 + 35 * 4.0) / 1e6)
    assert chat_model(openai_stub).usage.cost is None


def test_cache_hit_avoids_a_second_request_and_never_stores_the_key(openai_stub, tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    openai_stub.enqueue(st.malformed(), st.reply_json(GOOD))
    first = chat_model(openai_stub, cache=cache)
    assert first.complete_json(task()) == Items(**GOOD)
    second = chat_model(openai_stub, cache=cache)
    assert second.complete_json(task()) == Items(**GOOD)
    assert len(openai_stub.requests) == 2 and second.usage.cache_hits == 1 and second.usage.requests == 0
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["content"] == json.dumps(GOOD)
    assert all(KEY not in p.read_text() for p in files)
    chat_model(openai_stub, cache=cache, temperature=0.9).complete_json(task())
    assert len(openai_stub.requests) == 3          # other sampling settings: a different entry


def test_cache_entries_survive_a_json_mode_downgrade(openai_stub, tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    openai_stub.rejected_modes = {"json_schema"}
    chat_model(openai_stub, cache=cache).complete_json(task())
    n = len(openai_stub.requests)
    chat_model(openai_stub, cache=cache).complete_json(task())   # fresh mode memory, still a hit
    assert len(openai_stub.requests) == n


def test_request_log_has_method_url_status_latency_and_no_headers(openai_stub):
    lines: list[str] = []
    openai_stub.enqueue(st.server_error(), st.reply_json(GOOD))
    model = OpenAIChatModel(ChatEndpoint(base_url=openai_stub.base_url, api_key=SecretStr(KEY)),
                            json_modes={}, sleep=lambda s: None, log=lines.append)
    model.complete_json(task())
    assert lines[0].startswith(f"POST {openai_stub.base_url}/chat/completions -> 500 in ")
    assert lines[1].endswith(" ms") and "-> 200" in lines[1]
    assert not any(KEY in line or "Authorization" in line or "Bearer" in line for line in lines)


def test_chat_model_needs_a_base_url():
    with pytest.raises(ConfigError, match="base_url"):
        OpenAIChatModel(ChatEndpoint())


# ------------------------------------------------------------------ embeddings

def test_embeddings_are_batched_sorted_by_index_and_unit_length(openai_stub):
    texts = [f"text {i}" for i in range(5)]
    emb = embedder(openai_stub, batch_size=2)
    out = emb.embed(texts)
    reqs = openai_stub.requests_to("embeddings")
    assert [r.body["input"] for r in reqs] == [texts[0:2], texts[2:4], texts[4:5]]
    assert out.shape == (5, 8) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    expected = np.asarray(st.hash_vector("text 3", 8), dtype=np.float32)
    assert np.allclose(out[3], expected / np.linalg.norm(expected), atol=1e-6)   # not out of order
    assert emb.dimension == 8 and emb.model_id == "openai:e" and emb.usage.embedded_texts == 5


def test_configured_dimensions_are_sent_and_tag_the_model(openai_stub):
    emb = embedder(openai_stub, dimensions=16)
    assert emb.model_id == "openai:e@16" and emb.dimension == 16 and openai_stub.requests == []
    assert emb.embed(["a"]).shape == (1, 16)
    assert openai_stub.requests[0].body["dimensions"] == 16


def test_dimension_is_learned_from_the_server_when_not_configured(openai_stub):
    emb = embedder(openai_stub)
    assert emb.known_dimension is None and emb.dimension == 8 and len(openai_stub.requests) == 1


def test_wrong_number_of_embeddings_is_a_provider_error(openai_stub):
    openai_stub.enqueue(st.wrong_count(-1), endpoint="embeddings")
    with pytest.raises(ProviderError, match="returned 2 vectors for 3 texts"):
        embedder(openai_stub).embed(["a", "b", "c"])


def test_wrong_dimension_is_a_provider_error(openai_stub):
    openai_stub.enqueue(st.wrong_dimension(3), endpoint="embeddings")
    with pytest.raises(ProviderError, match="dimension"):
        embedder(openai_stub, dimensions=8).embed(["a", "b"])


def test_dimension_change_between_batches_is_a_provider_error(openai_stub):
    openai_stub.enqueue(st.embeddings([[1.0] * 8]), st.embeddings([[1.0] * 9]), endpoint="embeddings")
    emb = embedder(openai_stub, batch_size=1)
    with pytest.raises(ProviderError, match="dimension"):
        emb.embed(["a", "b"])


def test_embedding_retries_like_chat_and_sends_no_key_when_none(openai_stub):
    openai_stub.enqueue(st.server_error(503), st.drop(), endpoint="embeddings")
    out = embedder(openai_stub).embed(["a", ""])
    assert out.shape == (2, 8) and len(openai_stub.requests) == 3
    assert "Authorization" not in openai_stub.requests[-1].headers
    assert openai_stub.requests[-1].body["input"] == ["a", " "]     # servers reject empty strings


def test_embedding_cache_skips_known_texts(openai_stub, tmp_path):
    cache = ResponseCache(tmp_path / "c")
    first = embedder(openai_stub, cache=cache).embed(["a", "b"])
    again = embedder(openai_stub, cache=cache)
    out = again.embed(["b", "c", "a"])
    assert [r.body["input"] for r in openai_stub.requests_to("embeddings")] == [["a", "b"], ["c"]]
    assert np.allclose(out[0], first[1]) and np.allclose(out[2], first[0])
    assert again.usage.cache_hits == 2


def test_embedding_401_fails_at_once(openai_stub):
    openai_stub.enqueue(st.unauthorized(), endpoint="embeddings")
    emb = OpenAIEmbedder(EmbeddingEndpoint(base_url=openai_stub.base_url, api_key=SecretStr(KEY)))
    with pytest.raises(ProviderError, match="check the API key") as e:
        emb.embed(["a"])
    assert len(openai_stub.requests) == 1 and KEY not in str(e.value)


# ------------------------------------------------------------------ factory and doctor online

def test_factory_builds_http_providers_from_settings(openai_stub, tmp_path):
    s = load_settings(env={"BME_CHAT_BASE_URL": openai_stub.base_url, "BME_API_KEY": KEY,
                           "XDG_CONFIG_HOME": str(tmp_path)})
    p = build_providers(s, cache_dir=tmp_path / "cache", use_cache=True)
    assert isinstance(p.chat, OpenAIChatModel) and isinstance(p.embedder, OpenAIEmbedder)
    assert p.notice.startswith("embeddings: sent to the chat endpoint")   # said, since only chat was set
    assert p.chat.usage is p.usage and p.embedder.usage is p.usage
    p.chat.complete_json(task())
    p.embedder.embed(["x"])
    assert p.usage.requests == 2 and p.usage.embedded_texts == 1
    info = describe(p)
    assert info["chat"]["base_url"] == openai_stub.base_url and info["embedder"]["dimension"] == 8
    assert KEY not in json.dumps(info)
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in openai_stub.requests)
    p.close()


def test_doctor_reports_latency_json_modes_and_dimension(openai_stub, tmp_path):
    openai_stub.rejected_modes = {"json_schema"}
    s = load_settings(env={"BME_CHAT_BASE_URL": openai_stub.base_url, "XDG_CONFIG_HOME": str(tmp_path)})
    report = run_doctor(s, build_providers(s, use_cache=False))
    assert report.ok, report.as_dict()
    assert report.json_modes["json_object"] == "accepted" and report.json_modes["json_schema"].startswith("rejected")
    assert report.embedding_dimension == 8
    chat = next(c for c in report.checks if c.name == "chat")
    assert chat.latency_ms is not None and "json_object" in chat.detail


def test_doctor_pings_with_few_tokens_once_and_reports_mode_and_context(openai_stub, tmp_path):
    openai_stub.enqueue(lambda h, rec: h.send_json(200, {"object": "list", "data": [
        {"id": "stub-model", "meta": {"n_ctx": 4096, "n_ctx_train": 8192}}]}), endpoint="models")
    s = load_settings(env={"BME_CHAT_BASE_URL": openai_stub.base_url, "XDG_CONFIG_HOME": str(tmp_path)})
    report = run_doctor(s, build_providers(s, use_cache=False))
    chats = openai_stub.requests_to("chat")
    assert len(chats) == 1 and chats[0].body["max_tokens"] < 32      # one ping, a handful of tokens
    assert report.json_mode == "json_schema" and report.context_size == 4096
    context = next(c for c in report.checks if c.name == "context")
    assert context.status == "warn" and "-c 8192" in context.detail  # 4096 < prompt + max_tokens 2048


def test_doctor_stops_at_its_time_limit_against_a_slow_server(openai_stub, tmp_path):
    openai_stub.enqueue(st.slow(30))
    s = load_settings(env={"BME_CHAT_BASE_URL": openai_stub.base_url, "XDG_CONFIG_HOME": str(tmp_path)})
    report = run_doctor(s, build_providers(s, use_cache=False), time_limit=2)
    assert report.seconds < 2 + 5 and not report.ok
    failed = {c.name: c.detail for c in report.checks if c.status == "fail"}
    assert "no answer within" in failed["chat"] and "time limit" in failed["embedding"]
    assert report.json_modes == {"json_schema": f"error ({failed['chat'].split(': ', 1)[1]})"}


def test_doctor_steps_down_only_when_the_server_rejects_a_mode(openai_stub, tmp_path):
    openai_stub.rejected_modes = {"json_schema", "json_object"}
    s = load_settings(env={"BME_CHAT_BASE_URL": openai_stub.base_url, "XDG_CONFIG_HOME": str(tmp_path)})
    report = run_doctor(s, build_providers(s, use_cache=False))
    assert report.json_mode == "plain" and [r.response_format for r in openai_stub.requests_to("chat")] == \
        ["json_schema", "json_object", "plain"]
    mode = next(c for c in report.checks if c.name == "json mode")
    assert mode.detail.startswith("plain, the mode requests will use") and "json_object: rejected" in mode.detail


def test_doctor_warns_when_the_model_answers_without_usable_json(openai_stub, tmp_path):
    openai_stub.enqueue(st.reply("I am a small model and I like trains."))
    s = load_settings(env={"BME_CHAT_BASE_URL": openai_stub.base_url, "XDG_CONFIG_HOME": str(tmp_path)})
    report = run_doctor(s, build_providers(s, use_cache=False))
    chat = next(c for c in report.checks if c.name == "chat")
    assert report.ok and chat.status == "warn" and "stronger" in chat.detail


def test_doctor_captures_failures_as_lines(openai_stub, tmp_path):
    openai_stub.enqueue(*[st.unauthorized()] * 5)
    openai_stub.enqueue(st.wrong_dimension(3), endpoint="embeddings")
    s = load_settings(env={"BME_CHAT_BASE_URL": openai_stub.base_url, "BME_API_KEY": KEY,
                           "BME_EMBEDDING_DIMENSIONS": "8", "XDG_CONFIG_HOME": str(tmp_path)})
    report = run_doctor(s, build_providers(s, use_cache=False))
    assert not report.ok
    failed = {c.name for c in report.checks if c.status == "fail"}
    assert failed == {"chat", "embedding"}
    assert KEY not in json.dumps(report.as_dict())


# ------------------------------------------------------------------ subprocess stub and llama-server

def test_stub_runs_as_a_script_for_benchmarks():
    script = Path(__file__).with_name("openai_stub.py")
    proc = subprocess.Popen([sys.executable, str(script), "--port", "0", "--delay", "0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        base_url = proc.stdout.readline().strip()
        model = OpenAIChatModel(ChatEndpoint(base_url=base_url), json_modes={})
        assert model.complete_json(task()) == Items(items=[Item(name="x")])
        model.close()
    finally:
        proc.terminate()
        proc.wait(5)


@pytest.mark.llama
def test_end_to_end_against_llama_server(llama):
    """The clients against llama.cpp's real server and a real small model (SmolLM2-135M)."""
    chat, embed = llama
    model = OpenAIChatModel(ChatEndpoint(base_url=chat.base_url, model="smollm2", timeout=180, max_retries=2),
                            json_modes={})
    people = JsonTask(kind="extract", system="You extract people.", response_model=Items, max_retries=2,
                      user="Alice and Bob met in Paris. List the people.",
                      json_schema=record({"items": items(record({"name": text(40)}, ["name"]), 5)}, ["items"]))
    reply = model.complete_json(people)
    assert isinstance(reply, Items) and len(reply.items) <= 5
    assert model.json_mode == "json_schema"                     # llama.cpp takes bounded schemas
    assert model.usage.completion_tokens <= task_max_tokens(people, 2048) * model.usage.requests
    model.close()
    embedder = OpenAIEmbedder(EmbeddingEndpoint(base_url=embed.base_url, model="smollm2"))
    vecs = embedder.embed(["hello", "world"])
    assert vecs.shape == (2, 576) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    embedder.close()
