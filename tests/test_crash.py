"""Crash safety of `bme ingest`: SIGKILLed at random moments against a real HTTP model, the
sidecar always loads and validates, and resuming ends with the graph an uninterrupted run
makes (compared by content: ids are random uuids and times are wall-clock).

The stub's "model" is bme's own offline extraction heuristic, fed with the ExtractInput
parsed back out of the prompt, so it answers like a (very literal) model: creates, updates
of overview ids, links by ref and by id, all deterministic in the prompt's content.
Other tasks (conflict, evolve, synopsis, compress) get the stub's schema example.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from openai_stub import OpenAIStub, Recorded, _schema_from_request, example_from_schema
from fakes import NOW
from bme_cli.chat import read_chat
from bme_cli.graph.model import Graph
from bme_cli.graph.schema import Schema
from bme_cli.graph.store import load_graph, lock_path, sidecar_path
from bme_cli.memory.ingest import plan_for
from bme_cli.prompts.extract import (DialogueMessage, ExtractInput, OverviewGroup, OverviewNode,
                                     schema_types)
from bme_cli.providers.heuristic import extract as heuristic_extract
from bme_cli.settings import MemorySettings

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_chats" / "adventure.jsonl"
KILLS = 20
LATENCY = 0.03          # seconds the stub waits before each answer
KEY = "sk-crash-test-key"


# -- the stub's brain ---------------------------------------------------------------------------
_PROMPT = re.compile(r"## Dialogue to extract \(messages #(-?\d+) to #(-?\d+)\)\n\n(.*?)\n\n"
                     r"## Current graph\n\n(.*?)\n\n## Node types", re.S)
_TURN_START = re.compile(r"\n\n(?=#\d+ \[(?:user|assistant)\] )")
_TURN = re.compile(r"#(\d+) \[(user|assistant)\] (.*?)(?: \((\d{1,2} [A-Z][a-z]{2} \d{4}|\d{4}年\d{1,2}月\d{1,2}日)\))?: "
                   r"(.*)", re.S)
_GROUP = re.compile(r"### (\S+) \((.*)\): (\d+) node\(s\)")
_NODE = re.compile(r"  - \[([^\]]+)\] (.*?)(?: \((.*)\))?")


def _messages(start: int, text: str) -> list[DialogueMessage]:
    turns = []
    for chunk in _TURN_START.split(text):
        m = _TURN.fullmatch(chunk)
        assert m, f"unparsable dialogue line: {chunk[:80]!r}"
        seq, role, name, date, body = m.groups()
        turns.append(DialogueMessage(seq=int(seq), role=role, name=name, date=date, text=body))
    before = [t.seq for t in turns if t.role == "assistant" and t.seq < start]
    first_new = max(before) + 1 if before else turns[0].seq
    return [t.model_copy(update={"new": t.seq >= first_new}) for t in turns]


def _overview(text: str) -> list[OverviewGroup]:
    groups: list[OverviewGroup] = []
    for line in text.splitlines():
        if g := _GROUP.fullmatch(line):
            groups.append(OverviewGroup(type=g[1], label=g[2], count=int(g[3])))
        elif (n := _NODE.fullmatch(line)) and groups:
            groups[-1].nodes.append(OverviewNode(id=n[1], label=n[2], detail=n[3] or ""))
    return groups


def parse_extract_prompt(user: str) -> ExtractInput:
    """The ExtractInput an extraction prompt was rendered from (as far as the text shows it)."""
    m = _PROMPT.search(user)
    assert m, "not an extraction prompt"
    start, end, dialogue, overview = int(m[1]), int(m[2]), m[3], m[4]
    language = "zh" if "Chinese" in user.rsplit("Field values in", 1)[-1] else "en"
    return ExtractInput(messages=_messages(start, dialogue), start_seq=start, end_seq=end,
                        overview=[] if overview.startswith("(the graph is empty") else _overview(overview),
                        types=schema_types(Schema.default()), language=language)


def _task_kind(rec: Recorded) -> str:
    rf = rec.body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return rf["json_schema"]["name"]
    return "extract" if "## Dialogue to extract" in str(rec.messages[-1].get("content")) else "other"


_SUMMARY = re.compile(r"^  summary: (?:\[[^\]]*\] )?(.*)$", re.M)


def _compress(user: str) -> dict[str, Any]:
    """A merged record: the first words of each record's summary, in order."""
    parts = [" ".join(s.split()[:12]) for s in _SUMMARY.findall(user)]
    return {"fields": {"summary": "; ".join(parts)[:300] or "merged", "status": "resolved"}}


def heuristic_brain(rec: Recorded) -> str:
    """Answer extraction like the offline heuristic would, compression by joining summaries,
    the rest (conflict: "add") with the schema's example."""
    kind, user = _task_kind(rec), str(rec.messages[-1]["content"])
    if kind == "extract":
        return heuristic_extract.answer(parse_extract_prompt(user)).model_dump_json(by_alias=True)
    if kind == "compress":
        return json.dumps(_compress(user), ensure_ascii=False)
    schema = _schema_from_request(rec)
    return json.dumps(example_from_schema(schema) if schema else {})


# -- comparing graphs by content ----------------------------------------------------------------
_TIME_KEYS = {"created_time", "last_access_time", "valid_at"}


def _node_key(n) -> str:
    return json.dumps([n.type, n.fields, n.seq_range, n.seq], sort_keys=True, ensure_ascii=False)


def _swap_ids(value: Any, names: dict[str, str]) -> Any:
    """Every id string inside value (a node's or edge's extra) replaced by its content name."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [_swap_ids(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _swap_ids(v, names) for k, v in value.items()}
    return value


def graph_content(graph: Graph) -> dict[str, Any]:
    """The graph with ids replaced by content, wall-clock times left out (equal iff same memories)."""
    names = {n.id: "node:" + _node_key(n) for n in graph.nodes}
    for e in graph.edges:
        names[e.id] = f"edge:{names.get(e.from_id)}->{names.get(e.to_id)}:{e.relation}"
    nodes = Counter()
    for n in graph.nodes:
        nodes[json.dumps({
            "_key": names[n.id], "level": n.level, "archived": n.archived, "importance": n.importance,
            "access": n.access_count, "parent": names.get(n.parent_id), "prev": names.get(n.prev_id),
            "next": names.get(n.next_id), "children": sorted(names.get(c, c) for c in n.child_ids),
            "clusters": n.clusters, "history": _swap_ids(n.evolution_history, names),
            "extra": _swap_ids(n.extra, names),
            "embedding": None if n.embedding is None else [round(float(x), 6) for x in n.embedding],
        }, sort_keys=True, ensure_ascii=False)] += 1
    edges = Counter()
    for e in graph.edges:
        edges[json.dumps({
            "_key": names[e.id], "strength": round(e.strength, 9), "type": e.edge_type,
            "invalid": e.invalid_at is not None, "expired": e.expired_at is not None,
            "extra": _swap_ids(e.extra, names)}, sort_keys=True, ensure_ascii=False)] += 1
    meta = graph.meta
    return {"lastProcessedSeq": graph.last_processed_seq, "nodes": nodes, "edges": edges,
            "extractionCount": meta.extraction_count, "fingerprints": dict(meta.fingerprints),
            "embedding": (meta.embedding_model, meta.embedding_dim), "metaExtra": meta.extra,
            "graphExtra": graph.extra}


def assert_same_content(got: Graph, want: Graph) -> None:
    """Equal by content; on failure show what differs, not two huge dicts."""
    a, b = graph_content(got), graph_content(want)
    for key in b:
        if key in ("nodes", "edges"):
            missing, extra = b[key] - a[key], a[key] - b[key]
            assert not missing and not extra, (
                f"{key} differ: {sum(missing.values())} missing, {sum(extra.values())} unexpected, e.g.\n"
                f" missing {[m[:400] for m in missing][:2]}\n unexpected {[x[:400] for x in extra][:2]}")
        else:
            assert a[key] == b[key], f"{key}: {a[key]!r} != {b[key]!r}"


# -- validity of a sidecar at any moment ---------------------------------------------------------
def assert_valid_sidecar(path: Path, batch_ends: list[int], last_seq: int) -> Graph:
    """The sidecar loads (the loader refuses dangling edges, self-loops, bad types) and its
    bookkeeping agrees with itself: nothing from beyond lastProcessedSeq, one extraction per
    finished batch, fingerprints only of messages read."""
    graph = load_graph(path, NOW)
    assert graph is not None, f"{path} is missing"
    ids = {n.id for n in graph.nodes}
    assert len(ids) == len(graph.nodes), "duplicate node ids"
    for e in graph.edges:
        assert e.from_id in ids and e.to_id in ids and e.from_id != e.to_id
    for n in graph.nodes:
        assert n.parent_id is None or n.parent_id in ids
        assert all(c in ids for c in n.child_ids)
    lps = graph.last_processed_seq
    assert -1 <= lps <= last_seq
    assert lps == -1 or lps in batch_ends, f"lastProcessedSeq {lps} is not the end of a batch"
    assert graph.meta.extraction_count == sum(1 for end in batch_ends if end <= lps)
    assert all(n.seq_range[1] <= lps and n.seq <= lps for n in graph.nodes), "a node from the future"
    assert all(int(s) <= lps for s in graph.meta.fingerprints), "a fingerprint from the future"
    return graph


def temp_litter(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# -- running bme ---------------------------------------------------------------------------------
def bme_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "bme_cli", *args]


def stub_env(base_url: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a bme subprocess talking to the stub: no BME_*/OPENAI_* variables
    of the caller, config and cache folders under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_"))}
    env.update({"XDG_CONFIG_HOME": str(home / "xdg-config"), "XDG_CACHE_HOME": str(home / "xdg-cache"),
                "BME_CHAT_BASE_URL": base_url, "BME_API_KEY": KEY, "BME_CHAT_MODEL": "stub-model",
                "BME_CHAT_MAX_RETRIES": "1", "BME_EMBEDDING_MAX_RETRIES": "1",
                "BME_CHAT_TIMEOUT": "20", "BME_EMBEDDING_TIMEOUT": "20", "NO_COLOR": "1",
                "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def run_to_end(chat: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(bme_command("ingest", str(chat), "--seed", "7"), env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc


_BATCH_DONE = re.compile(r": batch \d+/\d+ ")


def _kill_at_random_moment(chat: Path, env: dict[str, str], rng: random.Random) -> bool:
    """Start an ingest and SIGKILL it after a random number of batches plus a random delay.

    Returns False when the run finished before the kill (nothing left to do)."""
    # --verbose: a progress line after every batch (by default they come every few seconds)
    proc = subprocess.Popen(bme_command("--verbose", "ingest", str(chat), "--seed", "7"), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        batches = rng.choice([0, 1, 1, 2])
        if batches == 0:
            time.sleep(rng.uniform(0.05, 0.8))  # during start-up, loading, or the first batch
        else:
            seen = 0
            while seen < batches:
                line = proc.stderr.readline()
                if not line:
                    break
                seen += bool(_BATCH_DONE.search(line))
            time.sleep(rng.uniform(0.0, 4 * LATENCY))  # in a request, an upkeep step or a save
        finished = proc.poll() is not None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return not finished
    finally:
        proc.stderr.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def brain_stub():
    stub = OpenAIStub(delay=LATENCY, chat_content=heuristic_brain).start()
    try:
        yield stub
    finally:
        stub.stop()


def extraction_only(folder: Path) -> dict[str, str]:
    """Settings under which all work happens before each batch's save: no evolution, synopsis
    or compression (their results are lost by a kill between the save and the upkeep, see
    test_kill_between_a_batch_save_and_its_upkeep_loses_nothing)."""
    types = [{**t, "compression": {**t["compression"], "mode": "none"}} for t in Schema.default().types]
    schema = folder / "schema-no-compression.json"
    schema.write_text(json.dumps(types), encoding="utf-8")
    return {"BME_ENABLE_EVOLUTION": "false", "BME_ENABLE_SYNOPSIS": "false",
            "BME_NODE_TYPE_SCHEMA": str(schema)}


def plan_ends(chat_path: Path) -> tuple[list[int], int]:
    """The end seq of every batch a fresh ingest runs, and the chat's last seq."""
    chat = read_chat(chat_path)
    ends = [b.end_seq for b in plan_for(chat, Graph(), MemorySettings())]
    return ends, len(chat.messages) - 1


# -- the tests ----------------------------------------------------------------------------------
def test_brain_parses_the_prompt_back_into_the_heuristics_input():
    from bme_cli.memory.context import MemoryContext
    from bme_cli.memory.extract import extract_task
    from bme_cli.memory.trigger import plan_batches

    chat = read_chat(SAMPLE)
    batch = plan_batches(chat, -1, MemorySettings(extract_context_turns=3))[5]
    ctx = MemoryContext(chat=None, embedder=None)  # type: ignore[arg-type]
    task = extract_task(Graph(), batch, ctx, user_name=chat.user_name, character_name=chat.character_name)
    parsed = parse_extract_prompt(task.user)
    assert parsed.messages == task.data.messages
    assert (parsed.start_seq, parsed.end_seq) == (task.data.start_seq, task.data.end_seq)
    assert heuristic_extract.answer(parsed).operations, "the brain would extract nothing"


@pytest.mark.slow
def test_ingest_killed_20_times_resumes_to_the_uninterrupted_graph(brain_stub, tmp_path):
    env = stub_env(brain_stub.base_url, tmp_path, **extraction_only(tmp_path))
    batch_ends, last_seq = plan_ends(SAMPLE)
    reference = tmp_path / "reference" / SAMPLE.name
    crashed = tmp_path / "crashed" / SAMPLE.name
    for path in (reference, crashed):
        path.parent.mkdir()
        shutil.copy(SAMPLE, path)
    run_to_end(reference, env)
    want = assert_valid_sidecar(sidecar_path(reference), batch_ends, last_seq)
    assert want.last_processed_seq == batch_ends[-1] and len(want.nodes) > 40

    rng = random.Random(20240601)
    kills, states = 0, set()
    while kills < KILLS:
        if not _kill_at_random_moment(crashed, env, rng):
            break
        kills += 1
        if sidecar_path(crashed).exists():
            graph = assert_valid_sidecar(sidecar_path(crashed), batch_ends, last_seq)
            states.add(graph.last_processed_seq)
    assert kills == KILLS, f"the run finished after {kills} kills: give it more work"
    assert len(states) >= 5, f"the kills hit too few different moments: {sorted(states)}"
    final = run_to_end(crashed, env)
    got = assert_valid_sidecar(sidecar_path(crashed), batch_ends, last_seq)
    assert_same_content(got, want)
    assert temp_litter(crashed.parent) == []  # the killed writers' temp files were cleaned up
    assert not lock_path(sidecar_path(crashed)).exists()
    # the key went to the stub in every request, and into no file: sidecars, cache, locks
    assert all(r.headers.get("Authorization") == f"Bearer {KEY}" for r in brain_stub.requests)
    assert KEY not in final.stdout + final.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any("xdg-cache" in str(p) for p in written)  # the response cache was used
    assert not [p for p in written if KEY.encode() in p.read_bytes()]


class _Killed(BaseException):
    """Stands for SIGKILL in-process: nothing after it runs, nothing catches it."""


def _offline_context(prefix: str):
    from fakes import Clock, ScriptedChatModel, WordHashEmbedder, counter_ids, heuristic
    from bme_cli.memory.context import MemoryContext

    return MemoryContext(chat=ScriptedChatModel(fallback=heuristic), embedder=WordHashEmbedder(),
                         new_id=counter_ids(prefix), now=Clock())


def test_kill_between_a_batch_save_and_its_upkeep_loses_nothing():
    import copy

    from bme_cli.memory.ingest import ingest_chat
    from bme_cli.memory.upkeep import run_cadence

    chat = read_chat(SAMPLE)
    whole = Graph()
    ingest_chat(chat, whole, _offline_context("w"), save=lambda g: None, upkeep=run_cadence, until=30)
    disk: dict[str, Graph] = {}

    def save_then_die_after_batch_10(graph: Graph) -> None:
        disk["sidecar"] = copy.deepcopy(graph)
        if graph.meta.extraction_count == 10 and "killed" not in disk:
            disk["killed"] = graph  # the first compression is due right after this save
            raise _Killed

    with pytest.raises(_Killed):
        ingest_chat(chat, Graph(), _offline_context("k"), save=save_then_die_after_batch_10,
                    upkeep=run_cadence, until=30)
    resumed = disk["sidecar"]
    ingest_chat(chat, resumed, _offline_context("r"), save=lambda g: None, upkeep=run_cadence, until=30)
    assert_same_content(resumed, whole)
