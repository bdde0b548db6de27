"""[rerank]: a Jina/Cohere-style /rerank endpoint reorders recall's best candidates before the
block is filled; a timeout or an error falls back to bme's own ranking and says so. The server
is tests/openai_stub.py on 127.0.0.1 speaking the /rerank shape."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import openai_stub as st
from cli_support import cli_env, error_lines, ingested, ingested_template, invoke, ok  # noqa: F401
from test_recall import G, ctx, ids_of, run

from bme_cli.errors import ConfigError, ProviderError
from bme_cli.graph.model import Node
from bme_cli.memory.rerank import reranked
from bme_cli.providers.factory import build_providers
from bme_cli.providers.rerank import HttpReranker
from bme_cli.settings import RerankEndpoint, load_settings


def endpoint(base_url: str, **kw) -> RerankEndpoint:
    return RerankEndpoint(base_url=base_url, model="jina-reranker-v2", **kw)


# -- the client ------------------------------------------------------------------------------------
def test_the_client_posts_the_jina_cohere_shape_and_reads_results_best_first(openai_stub):
    rr = HttpReranker(endpoint(openai_stub.base_url, api_key="sk-rerank"), sleep=lambda s: None)
    out = rr.rerank("where is the lantern", ["a boat", "the lantern is in the tower", "lantern oil"], 3)
    assert [i for i, _ in out] == [1, 2, 0] and out[0][1] > out[1][1]
    [req] = openai_stub.requests_to("rerank")
    assert req.path == "/v1/rerank" and req.headers["Authorization"] == "Bearer sk-rerank"
    assert req.body == {"model": "jina-reranker-v2", "query": "where is the lantern",
                        "documents": ["a boat", "the lantern is in the tower", "lantern oil"], "top_n": 3}
    rr.close()


def test_a_base_url_ending_in_rerank_is_used_as_is_and_score_is_accepted(openai_stub):
    openai_stub.enqueue(st.reranked(field="score"), endpoint="rerank")
    rr = HttpReranker(endpoint(openai_stub.base_url + "/rerank"), sleep=lambda s: None)
    assert [i for i, _ in rr.rerank("lantern", ["x", "lantern"], 2)] == [1, 0]
    assert openai_stub.requests_to("rerank")[0].path == "/v1/rerank"
    assert rr.url == openai_stub.base_url + "/rerank"


@pytest.mark.parametrize("behaviour,needle", [
    (st.server_error(), "failed after 2 attempts"),
    (st.slow(2.0), "no answer within"),
    (st.reply("not a rerank body"), "not a rerank response"),
    (lambda h, rec: h.send_json(200, {"results": [{"index": 7, "relevance_score": 1.0}]}), "not sent"),
    (lambda h, rec: h.send_json(200, {"results": [{"index": 0, "relevance_score": "NaN"}]}), "not a number"),
])
def test_failures_are_provider_errors(openai_stub, behaviour, needle):
    openai_stub.enqueue(behaviour, behaviour, endpoint="rerank")
    rr = HttpReranker(endpoint(openai_stub.base_url, timeout=0.5, max_retries=1), sleep=lambda s: None)
    with pytest.raises(ProviderError, match=needle):
        rr.rerank("q", ["a", "b"], 2)


def test_a_base_url_without_a_model_is_a_config_error():
    with pytest.raises(ConfigError, match="model"):
        HttpReranker(RerankEndpoint(base_url="http://127.0.0.1:9/v1"))


def test_the_factory_builds_it_only_when_configured_and_the_chat_key_stays_at_home(tmp_path):
    base = {"XDG_CONFIG_HOME": str(tmp_path), "BME_CHAT_BASE_URL": "https://api.x.com/v1", "BME_API_KEY": "k"}
    assert build_providers(load_settings(env=base), use_cache=False).reranker is None
    same = load_settings(env={**base, "BME_RERANK_BASE_URL": "https://api.x.com/v1", "BME_RERANK_MODEL": "m"})
    assert same.rerank.api_key.get_secret_value() == "k"
    other = load_settings(env={**base, "BME_RERANK_BASE_URL": "https://api.jina.ai/v1", "BME_RERANK_MODEL": "m"})
    assert other.rerank.api_key is None     # the chat key never goes to another host
    p = build_providers(other, use_cache=False)
    assert p.reranker is not None and p.reranker.name == "m" and p.reranker.top_n == 30
    p.close()


# -- the step --------------------------------------------------------------------------------------
class Reverse:
    """A reranker that ranks the documents in reverse order (or fails)."""

    name, top_n = "reverse", 3

    def __init__(self, fail: bool = False, returns: int | None = None):
        self.fail, self.returns, self.calls = fail, returns, []

    def rerank(self, query, documents, top_n):
        self.calls.append((query, list(documents), top_n))
        if self.fail:
            raise ProviderError("rerank endpoint timed out")
        out = [(i, float(i)) for i in reversed(range(len(documents)))]
        return out[: self.returns or top_n]


def items(*spec: str) -> list[tuple[Node, str]]:
    return [(Node(id=f"{s}{i}", type="event", fields={"summary": f"event {s}{i}"}),
             "core" if s == "c" else "recalled") for i, s in enumerate(spec)]


def test_the_first_top_n_movable_take_the_rerankers_order_in_their_own_places():
    order = items("c", "r", "r", "c", "r", "r")
    out, note = reranked(order, "the query", Reverse(), ctx().schema, fixed=lambda item: item[1] == "core")
    ids = [n.id for n, _ in out]
    assert ids == ["c0", "r4", "r2", "c3", "r1", "r5"]   # the fixed stay, r5 was beyond top_n
    assert (note.sent, note.moved, note.error) == (3, 2, None)


def test_candidates_the_reranker_did_not_return_keep_their_order_after_it():
    out, _ = reranked(items("r", "r", "r"), "q", Reverse(returns=1), ctx().schema)
    assert [n.id for n, _ in out] == ["r2", "r0", "r1"]


def test_a_failing_reranker_leaves_the_order_and_says_why():
    order = items("r", "r", "r")
    out, note = reranked(order, "q", Reverse(fail=True), ctx().schema)
    assert [n.id for n, _ in out] == ["r0", "r1", "r2"] and "timed out" in note.error
    assert "bme's own ranking" in note.line()


def _story() -> G:
    b = G()
    b.filler(30)
    b.add("event", 40, summary="Mira hides the Lantern of Vael in the old tower, wrapped in oilcloth under the "
                               "third stair where nobody would look for it")
    b.add("event", 41, summary="Mira talks at length about the lantern festival of her childhood, the paper "
                               "boats and the songs her brother Tobin used to sing")
    return b


def test_recall_fills_the_block_in_the_rerankers_order():
    # a budget with room for one of the two lantern events: the reranker decides which
    plain = run(_story(), "lantern", budget=50)
    assert [i.node.label()[:9] for i in plain.nodes] == ["Mira hide"]
    rr = Reverse()
    rr.top_n = 2
    c = ctx()
    c.reranker = rr
    result = run(_story(), "lantern", c, budget=50)
    [(query, docs, top_n)] = rr.calls
    assert query == "lantern" and top_n == 2 and docs[0].startswith("Mira hides")
    assert [i.node.label()[:9] for i in result.nodes] == ["Mira talk"]
    assert result.as_json()["rerank"] == {"model": "reverse", "sent": 2, "moved": 2, "error": None}


def test_the_synopsis_is_reranked_like_any_other_row():
    # issue 10: the synopsis earns its place in the budget like any other row, reranker included
    b = _story()
    b.add("synopsis", 41, summary="Mira searches for the lantern and her brother")
    c = ctx()
    c.reranker = Reverse()
    run(b, "lantern", c, budget=80)
    assert any("searches" in d for d in c.reranker.calls[0][1])


def test_recall_with_a_failing_reranker_is_bmes_own_recall_plus_a_warning():
    plain = run(_story(), "lantern", budget=50)
    c = ctx()
    c.reranker = Reverse(fail=True)
    result = run(_story(), "lantern", c, budget=50)
    assert ids_of(result) == ids_of(plain) and result.text == plain.text
    assert any("rerank failed" in w for w in result.warnings) and result.rerank.error


# -- the command -----------------------------------------------------------------------------------
@pytest.fixture
def rerank_env(openai_stub, monkeypatch):
    monkeypatch.setenv("BME_RERANK_BASE_URL", openai_stub.base_url)
    monkeypatch.setenv("BME_RERANK_MODEL", "jina-reranker-v2")
    monkeypatch.setenv("BME_RERANK_TIMEOUT", "0.5")
    monkeypatch.setenv("BME_RERANK_MAX_RETRIES", "0")
    return openai_stub


def _recall(chat: Path, *extra: str):
    return invoke("recall", chat, "--query", "Where is the Sunken Archive?", "--no-reinforce",
                  "--format", "json", *extra, env={"COLUMNS": "80"})


def test_recall_command_reranks_through_the_endpoint(ingested, rerank_env):  # noqa: F811
    result = _recall(ingested["adventure"], "--explain")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["rerank"]["model"] == "jina-reranker-v2" and data["rerank"]["sent"] >= 2
    assert data["rerank"]["error"] is None and data["warnings"] == []
    [req] = rerank_env.requests_to("rerank")
    assert req.body["query"].startswith("Where is the Sunken Archive?")
    assert len(req.body["documents"]) == data["rerank"]["sent"] <= 30
    assert "reranked the top" in result.stderr


def test_recall_command_falls_back_when_the_endpoint_times_out(ingested, rerank_env, monkeypatch):  # noqa: F811
    monkeypatch.delenv("BME_RERANK_BASE_URL")
    plain = json.loads(_recall(ingested["adventure"]).stdout)
    monkeypatch.setenv("BME_RERANK_BASE_URL", rerank_env.base_url)
    rerank_env.enqueue(st.slow(2.0), endpoint="rerank")
    result = _recall(ingested["adventure"], "--explain")
    assert result.exit_code == 0 and error_lines(result) == []
    data = json.loads(result.stdout)
    assert [n["id"] for n in data["nodes"]] == [n["id"] for n in plain["nodes"]]
    assert data["rerank"]["error"] and any("rerank failed" in w for w in data["warnings"])
    assert "bme's own ranking was used" in result.stderr


def test_a_server_echoing_the_key_never_gets_it_into_an_error(openai_stub):
    key = "sk-rerank-secret-123"
    openai_stub.enqueue(st.status(422, f"bad request from key {key}"), endpoint="rerank")
    rr = HttpReranker(endpoint(openai_stub.base_url, api_key=key, max_retries=0), sleep=lambda s: None)
    with pytest.raises(ProviderError) as err:
        rr.rerank("q", ["a", "b"], 2)
    assert key not in str(err.value) and "***" in str(err.value)
    assert key not in rr.url
