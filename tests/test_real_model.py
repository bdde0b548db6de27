"""Every model-calling command through the real `bme` console script, against llama.cpp's
server with a real small model (SmolLM2-135M-Instruct; see tests/llama_server.py).

What is asserted is what bme controls, not the small model's wisdom: exit codes, nothing
lost (the chat file untouched, a graph that loads and `bme stats` reads, no node beyond
the field limits), every call recorded, replies within their token bound, each command
within a time bound. Where the model's skill decides between two honest outcomes (an
upkeep reply it cannot get right), both are allowed and each is checked for what it must
leave behind. The commands share one chat, in file order: doctor, ingest (with the
conflict check and evolution), recall with LLM recall, synopsis, reflect, compress (last:
it merges the events a synopsis needs).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import llama_server
from fakes import NOW
from cli_support import SAMPLES
from test_chaos import assert_graph_within_limits

from bme_cli.graph.schema import Schema
from bme_cli.graph.store import load_graph, sidecar_path
from bme_cli.memory.guard import Scaffold, measure, verdict

pytestmark = pytest.mark.llama

BME = Path(sys.executable).with_name("bme")
MAX_TOKENS = 384        # chat.max_tokens for these runs: a cap the task bounds stay under
UNTIL = 4               # ingest messages up to #4: three extraction batches of group.jsonl
# Time bounds, generous for a busy 2-core machine (one llama.cpp thread): a command over
# its bound fails the test instead of hanging CI.
BOUNDS = {"doctor": 60, "ingest": 900, "recall": 240, "compress": 300, "synopsis": 240, "reflect": 240,
          "stats": 60, "log": 60}
TIMINGS = llama_server.TIMINGS   # printed at the end of the run (conftest)


@dataclass
class Run:
    """One `bme` run: exit code, output, and how long it took."""

    code: int
    stdout: str
    stderr: str
    seconds: float


@dataclass
class World:
    """The servers, a chat copy and the environment every `bme` run of this module shares."""

    chat: Path
    env: dict[str, str]
    original: bytes

    def bme(self, *args: str | Path, bound: str) -> Run:
        start = time.monotonic()
        proc = subprocess.run([str(BME), *map(str, args)], env=self.env, capture_output=True, text=True,
                              timeout=BOUNDS[bound], stdin=subprocess.DEVNULL)
        run = Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
        if bound not in ("log", "stats"):
            TIMINGS.append(f"bme {' '.join(str(a) for a in args if a != self.chat)}: exit {run.code} "
                           f"in {run.seconds:.1f} s")
        assert "Traceback" not in run.stderr, run.stderr
        return run

    def graph_bytes(self) -> bytes | None:
        path = sidecar_path(self.chat)
        return path.read_bytes() if path.exists() else None

    def calls(self, task: str | None = None) -> list[dict]:
        args = ["log", "--format", "json", "--limit", "100000"] + (["--task", task] if task else [])
        run = self.bme(*args, bound="log")
        assert run.code == 0, run.stderr
        return json.loads(run.stdout)["calls"]

    def stats(self) -> dict:
        run = self.bme("stats", self.chat, "--format", "json", bound="stats")
        assert run.code == 0, run.stderr
        [one] = json.loads(run.stdout)["chats"]
        return one


@pytest.fixture(scope="module")
def world(llama, tmp_path_factory: pytest.TempPathFactory) -> World:
    if not BME.exists():
        pytest.skip(f"needs the bme console script beside {sys.executable} (pip install -e .)")
    chat_server, embed_server = llama
    home = tmp_path_factory.mktemp("real-model")
    chat = home / "chats" / "group.jsonl"
    chat.parent.mkdir()
    shutil.copy(SAMPLES / "group.jsonl", chat)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_"))}
    # The default schema, but events compress in pairs (fanIn 2), so that `compress --force`
    # has a chunk to send once three extraction batches made three events.
    types = Schema.default().types
    next(t for t in types if t["id"] == "event")["compression"]["fanIn"] = 2
    (home / "schema.json").write_text(json.dumps(types), encoding="utf-8")
    env.update({
        "XDG_CONFIG_HOME": str(home / "config"), "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_DATA_HOME": str(home / "data"), "COLUMNS": "80", "NO_COLOR": "1",
        "BME_CHAT_BASE_URL": chat_server.base_url, "BME_CHAT_MODEL": "smollm2",
        "BME_EMBEDDING_BASE_URL": embed_server.base_url, "BME_EMBEDDING_MODEL": "smollm2",
        "BME_CHAT_MAX_TOKENS": str(MAX_TOKENS), "BME_CHAT_TIMEOUT": "300", "BME_CHAT_MAX_RETRIES": "1",
        "BME_CHAT_TEMPERATURE": "0",
        # low enough that the conflict check is asked (its similarity floor is 0.5)
        "BME_CONFLICT_THRESHOLD": "0.5",
        "BME_NODE_TYPE_SCHEMA": str(home / "schema.json"),
    })
    return World(chat, env, chat.read_bytes())


@pytest.fixture(scope="module")
def ingested(world: World) -> Run:
    return world.bme("ingest", world.chat, "--until", str(UNTIL), bound="ingest")


@pytest.fixture(scope="module")
def filled(world: World, ingested: Run) -> Run:
    """The rest of the chat extracted offline (the heuristic, with the real embedder), so that the
    upkeep tests have events to send to the real model whatever of the tiny model's own
    extraction the screen kept (it drops what a model copied from the prompt or made up)."""
    env = {k: v for k, v in world.env.items() if k != "BME_CHAT_BASE_URL"}
    proc = subprocess.run([str(BME), "ingest", "-q", "--until", str(UNTIL + 8), str(world.chat)], env=env,
                          capture_output=True, text=True,
                          timeout=BOUNDS["ingest"], stdin=subprocess.DEVNULL)
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr  # 1: failed batches kept
    events = [n for n in load_graph(sidecar_path(world.chat), NOW).nodes if n.type == "event" and not n.archived]
    assert len(events) >= 3
    return Run(proc.returncode, proc.stdout, proc.stderr, 0.0)


def _valid_graph(world: World) -> None:
    """Nothing lost: the chat file as it was, a graph that loads and that `bme stats` reads."""
    assert world.chat.read_bytes() == world.original
    graph = load_graph(sidecar_path(world.chat), NOW)
    assert graph is not None
    assert_graph_within_limits(graph)
    stats = world.stats()
    assert stats["total_nodes"] == len(graph.nodes) and stats["last_processed_seq"] == graph.last_processed_seq


def test_doctor_checks_both_endpoints_in_seconds(world: World):
    run = world.bme("doctor", "--format", "json", bound="doctor")
    report = json.loads(run.stdout)
    assert run.code == 0 and report["ok"], run.stdout
    assert report["json_mode"] == "json_schema" and report["context_size"] == 8192
    assert report["embedding_dimension"] == 576 and report["seconds"] < 60
    (ping,) = world.calls("doctor")
    assert ping["outcome"] == "ok" and ping["completion_tokens"] < 32


def test_ingest_against_a_real_model_saves_every_batch_it_could_answer(world: World, ingested: Run):
    # A batch the model cannot answer never blocks the chat: it is recorded in the sidecar
    # (retried with --retry-failed), named on stderr, and the run exits 1; the rest is extracted.
    assert ingested.code in (0, 1), ingested.stderr
    _valid_graph(world)
    graph = load_graph(sidecar_path(world.chat), NOW)
    assert graph.last_processed_seq >= UNTIL - 1
    failed = graph.meta.extra.get("failedBatches") or []
    assert bool(failed) == (ingested.code == 1), (ingested.stderr, failed)
    for record in failed:
        assert f"#{record['startSeq']}" in ingested.stderr and record["reason"]
    extract = world.calls("extract")
    assert extract and all(c["chat"] == str(world.chat.resolve()) for c in extract)
    if ingested.code == 0:
        assert graph.nodes
    if any(n.type == "event" for n in graph.nodes):
        # what the model extracted passed the screen: evolution ran against the real model too
        # (SmolLM2's events are mostly copies of the prompt, which the screen drops)
        assert world.calls("evolve")
    for call in world.calls():
        assert call["outcome"] != "error", call            # no timeouts, no refused requests
        assert call["completion_tokens"] <= MAX_TOKENS, call


def test_recall_with_llm_recall_picks_only_stored_memories(world: World, ingested: Run):
    before = len(world.calls("recall"))
    run = world.bme("recall", world.chat, "--format", "json", bound="recall")
    assert run.code == 0, run.stderr
    result = json.loads(run.stdout)
    graph = load_graph(sidecar_path(world.chat), NOW)
    ids = {n.id for n in graph.nodes}
    injected = [n["id"] for n in result["nodes"] if n["type"] != "excerpt"]
    assert set(injected) <= ids
    if any(not n.archived for n in graph.nodes):
        assert 1 <= len(world.calls("recall")) - before <= 2   # the model was asked (max_retries 1)
        assert result["text"].strip()                       # its choice, or the ranking when unusable
    _valid_graph(world)


def _upkeep(world: World, command: str, *flags: str) -> Run:
    before = world.graph_bytes()
    run = world.bme(command, world.chat, *flags, bound=command)
    # A reply the model cannot get right, or one the upkeep guard rejects (empty, only a date,
    # a loop, a copy of the prompt), is exit 6 with the graph as it was; otherwise 0.
    assert run.code in (0, 6), run.stderr
    if run.code == 6:
        assert ("no usable reply" in run.stderr or "was rejected" in run.stderr), run.stderr
        assert world.graph_bytes() == before
    _valid_graph(world)
    for node in load_graph(sidecar_path(world.chat), NOW).nodes:  # whatever upkeep stored is no junk
        text = " ".join(str(v) for v in node.fields.values() if isinstance(v, str))
        if node.type in ("synopsis", "reflection") or node.level > 0:
            assert verdict(measure(text, Scaffold(frozenset(), frozenset())), required=True) is None, text
    return run


def test_synopsis_with_a_real_model(world: World, filled: Run):
    run = _upkeep(world, "synopsis")
    assert world.calls("synopsis")
    if run.code == 0:
        synopses = [n for n in load_graph(sidecar_path(world.chat), NOW).nodes if n.type == "synopsis" and not n.archived]
        assert len(synopses) <= 1 and all(len(n.fields.get("summary", "")) <= 1500 for n in synopses)


def test_reflect_with_a_real_model(world: World, filled: Run):
    _upkeep(world, "reflect")
    assert world.calls("reflect")


def test_compress_with_a_real_model(world: World, filled: Run):
    plan = world.bme("compress", world.chat, "--force", "--dry-run", "--format", "json", bound="compress")
    assert plan.code == 0, plan.stderr
    planned = len(json.loads(plan.stdout)["chunks"])
    events = [n for n in load_graph(sidecar_path(world.chat), NOW).nodes if n.type == "event" and not n.archived]
    assert planned or len(events) <= 2                     # fanIn 2: three events make a chunk
    _upkeep(world, "compress", "--force")
    # the model was asked; a chunk above a summary the guard rejected is not sent, so there may
    # be fewer calls than planned chunks
    assert not planned or world.calls("compress")


def test_every_call_is_in_the_log_with_its_totals(world: World, filled: Run):
    run = world.bme("log", "--format", "json", "--limit", "100000", bound="log")
    data = json.loads(run.stdout)
    tasks = {c["task"] for c in data["calls"]}
    assert {"doctor", "embed", "extract", "recall", "synopsis", "reflect"} <= tasks
    assert data["totals"]["calls"] == len(data["calls"])
    assert data["totals"]["prompt_tokens"] == sum(c["prompt_tokens"] for c in data["calls"])
    assert all(c["tokens_reported"] for c in data["calls"])   # llama.cpp reports usage
    for task in sorted(tasks):
        mine = [c for c in data["calls"] if c["task"] == task]
        TIMINGS.append(f"  {task}: {len(mine)} call(s), {sum(c['seconds'] for c in mine):.1f} s, "
                       f"tokens {sum(c['prompt_tokens'] for c in mine)}+{sum(c['completion_tokens'] for c in mine)}")
