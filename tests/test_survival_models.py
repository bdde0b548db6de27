"""Issue 17's model-endpoint findings through the CLI: a dead embedding endpoint (circuit
breaker, honest exit code, vectors filled on the next run) and a server that trickles bytes
(a whole-request deadline). Every server is a 127.0.0.1 one the test starts.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

import openai_stub as stubs
from bme_cli.graph import store
from fakes import NOW
from cli_support import chats, cli_env, error_lines, invoke, ok, sidecar  # noqa: F401
from test_crash import _task_kind, heuristic_brain

pytestmark = pytest.mark.usefixtures("cli_env")

def _html(h, rec) -> None:  # noqa: ANN001 - a stub handler and request
    body = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
    h.send_response(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


EMBED_FAULTS = {  # the embedding endpoint's fault table (the chat endpoint's is below)
    "429": stubs.rate_limited("0"),
    "500": stubs.server_error(500),
    "dropped": stubs.drop(),
    "malformed": stubs.status(200, "not an embeddings response"),
    "wrong count": stubs.wrong_count(-1),
    "401": stubs.unauthorized(),
    "html page": _html,
}


@pytest.fixture
def remote(openai_stub, monkeypatch):
    """Chat and embeddings both served by the stub (the chat answering like the heuristic)."""
    openai_stub.chat_content = heuristic_brain
    for name, value in {"BME_CHAT_BASE_URL": openai_stub.base_url, "BME_API_KEY": "sk-survival",
                        "BME_CHAT_MAX_RETRIES": "0", "BME_EMBEDDING_MAX_RETRIES": "1",
                        "BME_EMBEDDING_OFFLINE_MODEL": "use-m3", "BME_EMBEDDING_GIVE_UP_AFTER": "3"}.items():
        monkeypatch.setenv(name, value)
    return openai_stub


def _break_embeddings(stub, behaviour, endpoint: str = "embeddings") -> None:
    """Every request to `endpoint` answered by behaviour, the others as before; stub.heal() mends it."""
    healthy = stub.default

    def answer(h, rec):
        if stubs._endpoint(rec.path) == endpoint:
            return behaviour(h, rec)
        return healthy(h, rec)

    stub.default = answer
    stub.heal = lambda: setattr(stub, "default", healthy)


def _unembedded(chat: Path) -> tuple[int, int]:
    graph = store.load_graph(sidecar(chat), NOW)
    active = [n for n in graph.nodes if not n.archived]
    return sum(n.embedding is None for n in active), len(active)


@pytest.mark.parametrize("fault", list(EMBED_FAULTS))
def test_a_dead_embedding_endpoint_stops_early_exits_4_and_the_next_run_fills_the_vectors(
        chats, remote, fault):
    chat = chats["group"]
    _break_embeddings(remote, EMBED_FAULTS[fault])
    result = invoke("ingest", chat)
    assert result.exit_code == 4, result.stderr
    errors = error_lines(result)
    assert len(errors) == 1 and "have no vector" in errors[0], result.stderr
    assert " ok " not in result.stderr.splitlines()[-3]  # the summary does not say ok
    # the breaker: 3 failed calls (2 attempts each, or 1 for a 401), then no more asking
    assert len(remote.requests_to("embeddings")) <= 6
    missing, total = _unembedded(chat)
    assert total > 0 and missing > 0  # the memories were saved, without vectors
    done = store.load_graph(sidecar(chat), NOW).last_processed_seq
    remote.heal()
    again = invoke("ingest", chat)
    assert again.exit_code == 0, again.stderr
    assert _unembedded(chat)[0] == 0
    assert store.load_graph(sidecar(chat), NOW).last_processed_seq >= done


def test_an_up_to_date_chat_with_missing_vectors_gets_them_on_the_next_ingest(chats, remote):
    chat = chats["group"]
    ok("ingest", "--quiet", chat)
    graph = store.load_graph(sidecar(chat), NOW)
    for node in graph.nodes:
        node.embedding = None
    store.save_graph(sidecar(chat), graph)
    ok("ingest", "--quiet", chat)
    assert _unembedded(chat)[0] == 0


def test_the_breaker_gives_up_after_its_seconds_even_before_its_count(chats, remote, monkeypatch):
    monkeypatch.setenv("BME_EMBEDDING_GIVE_UP_AFTER", "100")
    monkeypatch.setenv("BME_EMBEDDING_GIVE_UP_SECONDS", "0.01")
    _break_embeddings(remote, stubs.server_error(500))
    result = invoke("ingest", chats["group"])
    assert result.exit_code == 4 and "stopped asking" in result.stderr
    assert len(remote.requests_to("embeddings")) <= 4


# -- the fault table, chat endpoint only (embeddings healthy) ------------------------------------
PROVIDER, UNUSABLE = {4}, {1, 6}  # exit codes: the endpoint failed / it answered unusably
CHAT_FAULTS = {
    "429": (stubs.rate_limited("0"), PROVIDER),
    "500": (stubs.server_error(500), PROVIDER),
    "401": (stubs.unauthorized(), PROVIDER),
    "403": (stubs.status(403, "forbidden"), PROVIDER),
    "400": (stubs.status(400, "bad request"), PROVIDER),
    "timeout": (stubs.slow(3.0), PROVIDER),
    "dropped": (stubs.drop(), PROVIDER),
    "not a completion": (stubs.status(200, "not a chat completion"), PROVIDER),
    "html page": (_html, PROVIDER),
    "malformed": (stubs.malformed(), UNUSABLE),
    "truncated": (stubs.truncated(), UNUSABLE),
    "wrong shape": (stubs.reply_json({"answer": [1, 2, 3]}), UNUSABLE),
    "200,000 deep": (stubs.reply("[" * 200_000 + "]" * 200_000), UNUSABLE),
}



@pytest.mark.parametrize("fault", list(CHAT_FAULTS))
def test_every_persistent_chat_fault_ends_in_its_exit_code_with_nothing_saved_wrongly(chats, remote, fault,
                                                                                     monkeypatch):
    monkeypatch.setenv("BME_CHAT_TIMEOUT", "1")
    behaviour, codes = CHAT_FAULTS[fault]
    chat = chats["adventure"]
    ok("ingest", "--quiet", "--until", "6", chat)
    before = store.load_graph(sidecar(chat), NOW)
    _break_embeddings(remote, behaviour, endpoint="chat")
    start = time.monotonic()
    result = invoke("ingest", "--until", "16", chat)
    assert result.exit_code in codes, result.stderr
    assert len(error_lines(result)) == 1 or result.exit_code == 1, result.stderr
    assert "sk-survival" not in result.stdout + result.stderr
    assert time.monotonic() - start < 30
    after = store.load_graph(sidecar(chat), NOW)  # loads and validates
    kept = {n.id: n.fields for n in before.nodes}
    assert {n.id: n.fields for n in after.nodes if n.id in kept} == kept  # nothing overwritten
    assert len(after.nodes) == len(before.nodes)  # and nothing made up from a broken reply


# -- 5. a server that trickles its answer ------------------------------------------------------
class Trickler:
    """A 127.0.0.1 HTTP server that answers every request one byte every `gap` seconds, for at
    most `limit` seconds per connection (so a test can never hang on it)."""

    def __init__(self, gap: float = 0.3, limit: float = 20.0):
        self.gap, self.limit, self.connections = gap, limit, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        body = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n" + b" " * 100000
        end = time.monotonic() + self.limit
        try:
            conn.settimeout(1.0)
            conn.recv(65536)
            for byte in body:
                if self.stopped.is_set() or time.monotonic() > end:
                    break
                conn.sendall(bytes([byte]))
                time.sleep(self.gap)
        except OSError:
            pass
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopped.set()
        self.sock.close()
        self.thread.join(2)


@pytest.fixture
def trickler():
    server = Trickler()
    yield server
    server.stop()


def test_a_trickling_chat_server_is_cut_off_at_the_whole_request_deadline(chats, trickler, monkeypatch):
    """One byte every 0.3 s never lets a read time out; the deadline of 1 s per request does."""
    # embeddings offline: a group chat's members are embedded as seeds before the first chat call
    for name, value in {"BME_CHAT_BASE_URL": trickler.base_url, "BME_CHAT_TIMEOUT": "1",
                        "BME_CHAT_MAX_RETRIES": "1", "BME_EMBEDDING_OFFLINE": "true"}.items():
        monkeypatch.setenv(name, value)
    start = time.monotonic()
    result = invoke("ingest", "--quiet", chats["group"])
    elapsed = time.monotonic() - start
    assert result.exit_code == 4, result.stderr
    assert "no answer within 1 s" in result.stderr
    assert trickler.connections == 2  # one attempt and one retry, each cut at its deadline
    assert elapsed < trickler.limit  # not held until the server gave up by itself


def test_a_trickling_embedding_server_is_cut_off_at_the_whole_request_deadline(chats, trickler, monkeypatch):
    for name, value in {"BME_EMBEDDING_BASE_URL": trickler.base_url, "BME_EMBEDDING_TIMEOUT": "1",
                        "BME_EMBEDDING_MAX_RETRIES": "0", "BME_EMBEDDING_OFFLINE_MODEL": "use-m3"}.items():
        monkeypatch.setenv(name, value)
    start = time.monotonic()
    result = invoke("ingest", "--quiet", chats["group"])
    assert result.exit_code == 4, result.stderr
    assert "no answer within 1 s" in result.stderr and "have no vector" in result.stderr
    assert trickler.connections <= 3  # the breaker stopped asking
    assert time.monotonic() - start < trickler.limit


# -- 11. vectors of an implausible or changed dimension -----------------------------------------
def test_vectors_of_another_dimension_than_the_graphs_are_rejected(chats, remote):
    chat = chats["group"]
    ok("ingest", "--quiet", "--until", "10", chat)
    dim = store.load_graph(sidecar(chat), NOW).meta.embedding_dim
    assert dim == remote.embedding_dim
    _break_embeddings(remote, stubs.wrong_dimension(3))
    result = invoke("ingest", chat)
    assert result.exit_code == 4 and "have no vector" in result.stderr, result.stderr
    graph = store.load_graph(sidecar(chat), NOW)
    assert {len(n.embedding) for n in graph.nodes if n.embedding is not None} == {dim}
    assert graph.meta.embedding_dim == dim


def test_vectors_of_200000_dimensions_are_never_stored(chats, remote, monkeypatch):
    monkeypatch.setenv("BME_EMBEDDING_BATCH_SIZE", "1")
    _break_embeddings(remote, stubs.wrong_dimension(200_000))
    result = invoke("ingest", chats["group"])
    assert result.exit_code == 4 and "more than any embedding model makes" in result.stderr, result.stderr
    graph = store.load_graph(sidecar(chats["group"]), NOW)
    assert all(n.embedding is None for n in graph.nodes) and graph.meta.embedding_dim is None


def test_vectors_of_3_dimensions_are_never_stored_in_a_fresh_graph(chats, remote):
    """No graph vectors to compare with and no embedding.dimensions: the floor refuses them."""
    _break_embeddings(remote, stubs.wrong_dimension(3))
    result = invoke("ingest", chats["group"])
    assert result.exit_code == 4 and "fewer than any embedding model makes" in result.stderr, result.stderr
    graph = store.load_graph(sidecar(chats["group"]), NOW)
    assert all(n.embedding is None for n in graph.nodes) and graph.meta.embedding_dim is None


def test_a_configured_dimension_below_the_floor_is_trusted(chats, remote, monkeypatch):
    monkeypatch.setenv("BME_EMBEDDING_DIMENSIONS", "4")  # the stub answers the dimensions asked for
    ok("ingest", "--quiet", chats["group"])
    assert store.load_graph(sidecar(chats["group"]), NOW).meta.embedding_dim == 4


# -- 11. a long batch answered with no operations at all ----------------------------------------
EMPTY = json.dumps({"thought": "nothing to record " * 50, "operations": []})


def _long_chat(tmp_path: Path, turns: int = 4) -> Path:
    """A role-play whose every message is a page of prose (well over a batch's 2,000 characters)."""
    lines = [{"user_name": "Ana", "character_name": "Bo", "chat_metadata": {}}]
    for i in range(turns):
        page = " ".join(f"In the {i}th hour Bo walked past stall {j} of the night market and bought "
                        f"lantern {i * 100 + j} from the old seller." for j in range(30))
        lines += [{"name": "Ana", "is_user": True, "mes": f"What happens in hour {i}?"},
                  {"name": "Bo", "is_user": False, "mes": page}]
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


def _extract_requests(stub) -> list:
    return [r for r in stub.requests_to("chat") if _task_kind(r) == "extract"]


def test_a_long_batch_answered_with_no_operations_is_asked_again_then_failed(tmp_path, remote):
    chat = _long_chat(tmp_path)
    remote.chat_content = lambda rec: EMPTY if _task_kind(rec) == "extract" else heuristic_brain(rec)
    result = invoke("ingest", chat)
    assert result.exit_code == 1, result.stderr
    assert "no operations although the new dialogue is" in result.stderr
    graph = store.load_graph(sidecar(chat), NOW)
    assert not [n for n in graph.nodes if n.type == "event"]  # nothing marked done with 0 memories
    assert "--retry-failed" in result.stderr
    asked = _extract_requests(remote)
    assert "no operations" in str(asked[1].messages[-1]["content"])  # the retry says what was wrong
    batches = len({str(r.messages[-1]["content"]).split("\n")[0] for r in asked})
    assert len(asked) == 3 * batches  # each batch: the first ask and its two retries, then failed
    remote.chat_content = heuristic_brain
    again = invoke("ingest", "--retry-failed", chat)  # the empty replies were never cached
    assert again.exit_code == 0, again.stderr
    assert [n for n in store.load_graph(sidecar(chat), NOW).nodes if n.type == "event"]


def test_a_long_batch_whose_second_answer_has_operations_is_extracted(tmp_path, remote):
    chat = _long_chat(tmp_path, turns=1)
    answers = iter([EMPTY])
    remote.chat_content = lambda rec: (next(answers, None) or heuristic_brain(rec)) \
        if _task_kind(rec) == "extract" else heuristic_brain(rec)
    ok("ingest", "--quiet", chat)
    assert len(_extract_requests(remote)) == 2
    assert [n for n in store.load_graph(sidecar(chat), NOW).nodes if n.type == "event"]


def test_a_short_batch_may_have_nothing_worth_remembering(chats, remote):
    remote.chat_content = lambda rec: EMPTY if _task_kind(rec) == "extract" else heuristic_brain(rec)
    ok("ingest", "--quiet", "--until", "4", chats["adventure"])
    assert len(_extract_requests(remote)) == len({str(r.messages[-1]["content"]).split("\n")[0]
                                                  for r in _extract_requests(remote)})


# -- 12. a reply that is malformed, not cut off -----------------------------------------------
def test_a_persistently_malformed_reply_is_not_reported_as_cut_off(chats, remote):
    """Unbalanced JSON from a server that says it finished (finish_reason "stop") is retried as
    if cut off, but the final error says it was malformed, not cut off."""
    remote.chat_content = lambda rec: '{"operations": [{"op": "create", "type": "event"'
    result = invoke("ingest", "--until", "4", chats["group"])
    assert result.exit_code in (1, 6), result.stderr
    errors = " ".join(error_lines(result))
    assert "malformed, not cut off" in errors, result.stderr
