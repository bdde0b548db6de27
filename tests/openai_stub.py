"""A real OpenAI-compatible server on 127.0.0.1 for tests and benchmarks (stdlib only).

Scriptable per request: `stub.enqueue(behaviour, ..., endpoint="chat"|"embeddings"|"rerank")` queues
what the next requests to that endpoint get (a good reply, fenced JSON, prose around JSON,
a <think> block, malformed or truncated JSON, 429 with Retry-After, 500, a slow reply, a
dropped connection, 401, wrong embeddings...). With the queue empty a default handler
answers: chat replies are built from the requested JSON schema (response_format or the
schema quoted in the system prompt), embeddings are deterministic hash vectors returned
out of order (with correct `index`), and /rerank (Jina/Cohere shape) scores each document by
the query words it contains (`rerank_score`). Every request is recorded (path, headers, body).

    stub, base_url = start_stub()            # or the `openai_stub` pytest fixture
    python tests/openai_stub.py --port 8765 --delay 0.2    # for benchmarks
"""
from __future__ import annotations

import argparse
import hashlib
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Behaviour = Callable[["_Handler", "Recorded"], None]


@dataclass
class Recorded:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes

    @property
    def response_format(self) -> str:
        """'json_schema', 'json_object' or 'plain'."""
        rf = self.body.get("response_format") if isinstance(self.body, dict) else None
        return rf.get("type", "plain") if isinstance(rf, dict) else "plain"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", []) if isinstance(self.body, dict) else []


# ------------------------------------------------------------------ schema examples

def example_from_schema(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A small value valid for a (pydantic-generated) JSON schema."""
    root = root or schema
    if "$ref" in schema:
        return example_from_schema(root.get("$defs", {})[schema["$ref"].rsplit("/", 1)[-1]], root)
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return example_from_schema(options[0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: example_from_schema(props.get(k, {}), root) for k in schema.get("required", [])}
    if kind == "array":
        count = 0 if schema.get("maxItems") == 0 else max(schema.get("minItems", 1), 1)
        return [example_from_schema(schema.get("items", {}), root) for _ in range(count)]
    if kind == "string":
        n = max(schema.get("minLength", 1), 1)
        return "x" * min(n, schema.get("maxLength", n))
    if kind in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1)
        return min(lo, schema.get("maximum", lo))
    return {"boolean": True, "null": None}.get(kind)


def _schema_from_request(rec: Recorded) -> dict[str, Any] | None:
    rf = rec.body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return rf.get("json_schema", {}).get("schema")
    marker = "JSON Schema: "
    for msg in rec.messages:
        text = str(msg.get("content", ""))
        if marker in text:
            try:
                return json.JSONDecoder().raw_decode(text[text.index(marker) + len(marker):])[0]
            except ValueError:
                return None
    return None


def hash_vector(text: str, dim: int) -> list[float]:
    """A deterministic pseudo-embedding for text."""
    out, counter = [], 0
    while len(out) < dim:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        out += [(b - 127.5) / 127.5 for b in digest]
        counter += 1
    return out[:dim]


# ------------------------------------------------------------------ behaviours

def _completion(content: Any, finish_reason: str, usage: tuple[int, int] | None,
                reasoning: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    body: dict[str, Any] = {"id": "chatcmpl-stub", "object": "chat.completion", "model": "stub",
                            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                         "total_tokens": usage[0] + usage[1]}
    return body


def reply(content: Any, finish_reason: str = "stop", usage: tuple[int, int] | None = (10, 5),
          reasoning: str | None = None) -> Behaviour:
    """A 200 chat completion with this content (a string, or a list of content parts)."""
    return lambda h, rec: h.send_json(200, _completion(content, finish_reason, usage, reasoning))


def reply_json(obj: Any, **kw: Any) -> Behaviour:
    """A 200 chat completion whose content is obj as JSON."""
    return reply(json.dumps(obj), **kw)


def fenced(obj: Any) -> Behaviour:
    return reply(f"Here you go:\n```json\n{json.dumps(obj, indent=2)}\n```\n")


def prose(obj: Any) -> Behaviour:
    return reply(f"Sure! The answer is {json.dumps(obj)} and I hope that helps {{really}}.")


def think(obj: Any) -> Behaviour:
    return reply(f"<think>The user wants {{json}} like [1, 2 ... let me think.</think>\n{json.dumps(obj)}")


def malformed(text: str = '{"ok": true,, "oops": }') -> Behaviour:
    return reply(text)


def truncated(text: str = '{"items": [{"name": "a"}, {"name": "b', finish_reason: str = "length") -> Behaviour:
    return reply(text, finish_reason=finish_reason)


def status(code: int, message: str = "error", headers: dict[str, str] | None = None) -> Behaviour:
    """An error response with an OpenAI-style error body."""
    return lambda h, rec: h.send_json(code, {"error": {"message": message, "type": "stub"}}, headers)


def rate_limited(retry_after: str | None = "2") -> Behaviour:
    return status(429, "rate limited", {"Retry-After": retry_after} if retry_after is not None else None)


def server_error(code: int = 500) -> Behaviour:
    return status(code, "internal error")


def unauthorized(message: str = "invalid api key") -> Behaviour:
    return status(401, message)


def reject_json_schema() -> Behaviour:
    """400 'response_format json_schema is not supported' (once)."""
    return status(400, "response_format of type json_schema is not supported by this model")


def redirect(location: str) -> Behaviour:
    return lambda h, rec: h.send_json(307, {}, {"Location": location})


def slow(seconds: float, then: Behaviour | None = None) -> Behaviour:
    """Sleep (longer than the client's timeout, typically), then answer like `then` or the default."""
    def run(h: "_Handler", rec: Recorded) -> None:
        time.sleep(seconds)
        (then or h.stub.default)(h, rec)
    return run


def drop() -> Behaviour:
    """Close the connection without any response."""
    def run(h: "_Handler", rec: Recorded) -> None:
        h.close_connection = True
        try:
            h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    return run


def embeddings(vectors: list[list[float]], shuffle: bool = False) -> Behaviour:
    """Exactly these vectors (index = position), optionally returned in reverse order."""
    data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    return lambda h, rec: h.send_json(200, {"object": "list", "data": data[::-1] if shuffle else data,
                                            "usage": {"prompt_tokens": 3, "total_tokens": 3}})


def rerank_score(query: str, document: str) -> float:
    """The default reranker: the share of the query's words found in the document."""
    words = {w for w in query.lower().split() if len(w) > 2}
    doc = document.lower()
    return sum(w in doc for w in words) / len(words) if words else 0.0


def reranked(scores: Callable[[str, str], float] = rerank_score, field: str = "relevance_score") -> Behaviour:
    """A /rerank answer {"results": [{"index", <field>}]} best first, at most top_n."""
    def run(h: "_Handler", rec: Recorded) -> None:
        docs = rec.body["documents"]
        ranked = sorted(range(len(docs)), key=lambda i: (-scores(rec.body["query"], docs[i]), i))
        top = ranked[: int(rec.body.get("top_n") or len(docs))]
        h.send_json(200, {"model": rec.body.get("model"),
                          "results": [{"index": i, field: scores(rec.body["query"], docs[i])} for i in top]})
    return run


def wrong_count(delta: int = -1) -> Behaviour:
    """Embeddings with `delta` vectors too many or too few."""
    def run(h: "_Handler", rec: Recorded) -> None:
        n = max(len(rec.body["input"]) + delta, 0)
        embeddings([hash_vector(str(i), h.stub.embedding_dim) for i in range(n)])(h, rec)
    return run


def wrong_dimension(dim: int = 3) -> Behaviour:
    """Embeddings of the right count but the wrong dimension."""
    def run(h: "_Handler", rec: Recorded) -> None:
        embeddings([hash_vector(t, dim) for t in rec.body["input"]])(h, rec)
    return run


# ------------------------------------------------------------------ server

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub: "OpenAIStub"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without NODELAY each reply stalls ~40 ms
        # on delayed ACKs, which would swamp any latency a test or benchmark sets on purpose.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:   # keep test output clean
        pass

    def send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True   # the client gave up (timeout): fine

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = Recorded(method, self.path, dict(self.headers.items()), body, raw)
        self.stub._run(self, rec)

    def do_POST(self) -> None:
        self._handle("POST")

    def do_GET(self) -> None:
        self._handle("GET")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False      # keep-alive handler threads must not block stop()


def _endpoint(path: str) -> str | None:
    for suffix, name in (("/chat/completions", "chat"), ("/embeddings", "embeddings"), ("/models", "models"),
                         ("/rerank", "rerank")):
        if path.rstrip("/").endswith(suffix):
            return name
    return None


class OpenAIStub:
    """The server, its scripted queues and its request log."""

    def __init__(self, port: int = 0, delay: float = 0.0, embedding_dim: int = 8,
                 chat_content: Callable[[Recorded], str] | None = None):
        self.delay, self.embedding_dim, self.chat_content = delay, embedding_dim, chat_content
        self.requests: list[Recorded] = []
        self.rejected_modes: set[str] = set()   # response_format types always answered with 400
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Behaviour]] = {name: deque() for name in ("chat", "embeddings", "models", "rerank")}
        handler = type("Handler", (_Handler,), {"stub": self})
        self.server = _Server(("127.0.0.1", port), handler)
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def start(self) -> "OpenAIStub":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def enqueue(self, *behaviours: Behaviour, endpoint: str = "chat") -> None:
        """The next requests to `endpoint` ('chat', 'embeddings', 'models', 'rerank') get these, in order."""
        with self._lock:
            self._queues[endpoint].extend(behaviours)

    def requests_to(self, endpoint: str) -> list[Recorded]:
        """Recorded requests to one endpoint ('chat', 'embeddings', 'models')."""
        return [r for r in self.requests if _endpoint(r.path) == endpoint]

    def _run(self, h: _Handler, rec: Recorded) -> None:
        name = _endpoint(rec.path)
        with self._lock:
            self.requests.append(rec)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            queued = self._queues[name].popleft() if name and self._queues[name] else None
        try:
            if self.delay:
                time.sleep(self.delay)
            if name is None:
                status(404, f"no route {rec.path}")(h, rec)
            else:
                (queued or self.default)(h, rec)
        finally:
            with self._lock:
                self._in_flight -= 1

    def default(self, h: _Handler, rec: Recorded) -> None:
        """The unscripted answer for any endpoint."""
        name = _endpoint(rec.path)
        if name == "models":
            h.send_json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
        elif name == "rerank":
            reranked()(h, rec)
        elif name == "embeddings":
            inputs = rec.body["input"] if isinstance(rec.body["input"], list) else [rec.body["input"]]
            dim = rec.body.get("dimensions") or self.embedding_dim
            embeddings([hash_vector(t, dim) for t in inputs], shuffle=True)(h, rec)
        elif rec.response_format in self.rejected_modes:
            status(400, f"response_format {rec.response_format} is not supported")(h, rec)
        else:
            if self.chat_content is not None:
                content = self.chat_content(rec)
            else:
                schema = _schema_from_request(rec)
                content = json.dumps(example_from_schema(schema) if schema else {})
            prompt = sum(len(str(m.get("content", ""))) for m in rec.messages) // 4
            reply(content, usage=(prompt, max(len(content) // 4, 1)))(h, rec)


def start_stub(port: int = 0, delay: float = 0.0, **kw: Any) -> tuple[OpenAIStub, str]:
    """Start a stub in a daemon thread: (stub, base_url). Call stub.stop() when done."""
    stub = OpenAIStub(port=port, delay=delay, **kw).start()
    return stub, stub.base_url


def main() -> None:
    parser = argparse.ArgumentParser(description="OpenAI-compatible stub server (tests, benchmarks)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--dim", type=int, default=8, help="embedding dimension")
    args = parser.parse_args()
    stub = OpenAIStub(port=args.port, delay=args.delay, embedding_dim=args.dim)
    print(stub.base_url, flush=True)
    try:
        stub.server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stub.server.server_close()


if __name__ == "__main__":
    main()
