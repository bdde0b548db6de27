#!/usr/bin/env python3
"""Ingest throughput of `bme ingest` in messages per second (issue 4, item 11).

Two parts, each running the real CLI as a subprocess (`python -m bme_cli --no-cache ingest`)
on fresh copies of the chats in a temporary folder, with BME_*/OPENAI_* cleared and
XDG_CACHE_HOME/XDG_CONFIG_HOME pointed into that folder, so no user config, key or response
cache can change the result:

* offline: the heuristic chat model with the USE embedder and with the hash embedder, on
  the sample chats and on LoCoMo conversations, `--jobs 1` (CPU-bound);
* stub: an OpenAI-compatible stub on 127.0.0.1 (tests/openai_stub.py, in this process) that
  sleeps `--delay` seconds per request, for `--jobs 1 4 8` over `--copies` copies of one
  chat, chat concurrency 64, hash embedder (or the stub's delayed /embeddings with
  `--stub-embeddings`). The stub answers extraction and compression with the offline
  heuristic's reply for the prompt it was sent (parsed back into ExtractInput /
  CompressInput), so batches create real nodes; other tasks get a minimal schema-valid reply;
* `--profile JOBS`: one stub run in a child process, each worker thread under cProfile,
  summarised as where the workers' wall time went.

"messages" = every message in the chat files (greeting and user turns included); msg/s =
messages / best wall time of `--repeat` runs (process start-up included; the "start-up" row
is an ingest of chats that are already up to date). CPU = user+sys of the child. Traffic
goes to 127.0.0.1 only, and the number of runs is bounded by the options.

    python benchmarks/bench_ingest.py [--repeat 3] [--delay 0.1] [--copies 8] [--jobs 1 4 8]
        [--locomo /work/shared/data/locomo-dev] [--skip-offline] [--skip-stub] [--stub-embeddings]
        [--profile 8]

Results and their analysis: docs/perf/ingest.md.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))   # the stub lives with the tests

from openai_stub import OpenAIStub, Recorded, _schema_from_request, example_from_schema  # noqa: E402

from bme_cli.chat import read_chat  # noqa: E402
from bme_cli.graph.model import now_ms  # noqa: E402
from bme_cli.graph.schema import Schema  # noqa: E402
from bme_cli.graph.store import load_graph, sidecar_path  # noqa: E402
from bme_cli.prompts.compress import ColumnSpec, CompressInput, CompressNodeView  # noqa: E402
from bme_cli.prompts.extract import (DialogueMessage, ExtractInput, OverviewGroup,  # noqa: E402
                                     OverviewNode, schema_types)
from bme_cli.providers.heuristic import compress as heuristic_compress  # noqa: E402
from bme_cli.providers.heuristic import extract as heuristic_extract  # noqa: E402

SAMPLES = REPO / "sample_chats"
LOCOMO = Path("/work/shared/data/locomo-dev")
LOCOMO_CHATS = ("conv-26.jsonl", "conv-30.jsonl")


# ------------------------------------------------------------------ running the CLI

@dataclass
class Timing:
    """Best-of-N result of one configuration."""

    label: str
    messages: int
    wall: float = float("inf")
    cpu: float = float("inf")
    runs: list[tuple[float, float]] = field(default_factory=list)   # (wall, CPU) of each run
    nodes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.messages / self.wall


def clean_env(work: Path, **extra: str) -> dict[str, str]:
    """The environment without BME_*/OPENAI_*, config and cache inside work, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_"))}
    for name in ("cache", "config"):
        (work / name).mkdir(parents=True, exist_ok=True)
    env.update(XDG_CACHE_HOME=str(work / "cache"), XDG_CONFIG_HOME=str(work / "config"),
               NO_COLOR="1", PYTHONPATH=str(REPO))
    env.update(extra)
    return env


def count_messages(paths: list[Path]) -> int:
    """Messages in these chat files (header excluded)."""
    return sum(len(read_chat(p).messages) for p in paths)


def fresh_copies(sources: list[Path], dest: Path, copies: int = 1) -> Path:
    """dest (emptied) holding `copies` copies of each source chat, and no graph yet."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for src in sources:
        for i in range(copies):
            name = src.name if copies == 1 else f"{src.stem}-{i:02d}{src.suffix}"
            shutil.copyfile(src, dest / name)
    return dest


def run_cli(chat_dir: Path, env: dict[str, str], jobs: int) -> tuple[float, float]:
    """(wall s, child CPU s) of one `bme --no-cache ingest chat_dir --jobs N`; fails loudly."""
    cmd = [sys.executable, "-m", "bme_cli", "--no-cache", "ingest", str(chat_dir), "--jobs", str(jobs)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=chat_dir, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    if "failed" in proc.stderr or "error" in proc.stderr.lower():
        print(f"warning: {chat_dir}: {proc.stderr[-1500:]}", file=sys.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def active_nodes(chat_dir: Path) -> int:
    """Active (not archived) nodes over the chats' graphs in chat_dir."""
    graphs = [load_graph(sidecar_path(chat), now_ms()) for chat in chat_dir.glob("*.jsonl")]
    return sum(1 for g in graphs if g is not None for n in g.nodes if not n.archived)


def best_of(timing: Timing, repeat: int, sources: list[Path], work: Path, env: dict[str, str],
            jobs: int, copies: int = 1, before_run: Any = None) -> Timing:
    """Run `repeat` fresh ingests and keep the fastest in timing."""
    for i in range(repeat):
        chat_dir = fresh_copies(sources, work / "chats", copies)
        if before_run is not None:
            before_run()
        wall, cpu = run_cli(chat_dir, env, jobs)
        timing.runs.append((wall, cpu))
        if wall < timing.wall:
            timing.wall, timing.cpu, timing.nodes = wall, cpu, active_nodes(chat_dir)
        print(f"  {timing.label}: run {i + 1}/{repeat} {wall:.2f} s (cpu {cpu:.2f} s)", file=sys.stderr)
    return timing


def startup(work: Path, env: dict[str, str], sources: list[Path]) -> float:
    """Best wall time of an ingest with nothing pending: start-up, chat and graph load."""
    chat_dir = fresh_copies(sources, work / "chats")
    run_cli(chat_dir, env, 1)
    return min(run_cli(chat_dir, env, 1)[0] for _ in range(3))


# ------------------------------------------------------------------ the stub's extraction reply

_HEAD = re.compile(r"## Dialogue to extract \(messages #(\d+) to #(\d+)\)\n\n")
_LINE = re.compile(r"^#(\d+) \[(user|assistant)\] (.*?)(?: \((\d{1,2} \w{3} \d{4}|\d{4}年\d{1,2}月\d{1,2}日)\))?: ",
                   re.M)
_GROUP = re.compile(r"^### (\S+) \((.*)\): (\d+) node\(s\)$")
_NODE = re.compile(r"^  - \[([^\]]+)\] (.+?)(?: \((.*)\))?$")


def _dialogue(text: str, start: int) -> list[DialogueMessage]:
    heads = list(_LINE.finditer(text))
    msgs = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        msgs.append(DialogueMessage(seq=int(m[1]), role=m[2], name=m[3], date=m[4],
                                    text=text[m.end():end].strip()))
    # `new` as memory/extract.dialogue sets it: from the user turn after the last earlier reply.
    before = [m.seq for m in msgs if m.role == "assistant" and m.seq < start]
    first_new = max(before) + 1 if before else (msgs[0].seq if msgs else start)
    return [m.model_copy(update={"new": m.seq >= first_new}) for m in msgs]


def _overview(text: str) -> list[OverviewGroup]:
    groups: list[OverviewGroup] = []
    for line in text.splitlines():
        if g := _GROUP.match(line):
            groups.append(OverviewGroup(type=g[1], label=g[2], count=int(g[3])))
        elif (n := _NODE.match(line)) and groups:
            groups[-1].nodes.append(OverviewNode(id=n[1], label=n[2], detail=n[3] or ""))
    return groups


def parse_extract_prompt(user: str) -> ExtractInput:
    """The ExtractInput behind bme's extraction user prompt (default schema)."""
    head = _HEAD.search(user)
    if head is None:
        raise ValueError("not an extraction prompt")
    start, end = int(head[1]), int(head[2])
    body = user[head.end():]
    dialogue, _, rest = body.partition("\n\n## Current graph\n\n")
    overview, _, _ = rest.partition("\n\n## Node types\n\n")
    language = "zh" if "Field values in Chinese" in user else "en"
    return ExtractInput(messages=_dialogue(dialogue, start), start_seq=start, end_seq=end,
                        overview=_overview(overview), types=schema_types(Schema.default()),
                        language=language)


_RECORDS = re.compile(r"^(\d+) (.+) records \(level (\d+)\) to merge:$")
_RECORD = re.compile(r"^record \d+ \[messages (-?\d+)-(-?\d+)\]$")
_FIELD = re.compile(r"^  ([^:\s][^:]*): (.*)$")


def _records(lines: list[str]) -> list[CompressNodeView]:
    nodes: list[dict[str, Any]] = []
    key = None
    for line in lines:
        if r := _RECORD.match(line):
            nodes.append({"seq": int(r[2]), "seq_range": (int(r[1]), int(r[2])), "fields": {}})
            key = None
        elif (f := _FIELD.match(line)) and nodes:
            key = f[1]
            nodes[-1]["fields"][key] = f[2]
        elif nodes and key and not line.startswith("Required fields:"):
            nodes[-1]["fields"][key] += "\n" + line   # a value that spans lines
    return [CompressNodeView(**n) for n in nodes]


def parse_compress_prompt(system: str, user: str) -> CompressInput:
    """The CompressInput behind bme's compression prompt (default schema, matched by label)."""
    lines = user.splitlines()
    head = _RECORDS.match(lines[0]) if lines else None
    types = {t["label"]: t for t in Schema.default().types}
    if head is None or head[2] not in types:
        raise ValueError("not a compression prompt of the default schema")
    t = types[head[2]]
    columns = [ColumnSpec(name=c["name"], hint=str(c.get("hint") or ""), required=bool(c.get("required")))
               for c in t["columns"]]
    return CompressInput(type_id=t["id"], type_label=t["label"], columns=columns, level=int(head[3]),
                         language="zh" if "Simplified Chinese" in system else "en", nodes=_records(lines[1:]))


class HeuristicReplies:
    """The stub's chat_content hook: the offline heuristic's answer for extraction and
    compression (parsed back from the prompt), a minimal schema example for other tasks."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def _heuristic(self, kind: str | None, system: str, user: str) -> Any:
        if kind == "extract":
            return heuristic_extract.answer(parse_extract_prompt(user)).model_dump(
                by_alias=True, exclude={"invalid_ops", "excess_ops"})
        if kind == "compress":
            return heuristic_compress.answer(parse_compress_prompt(system, user)).model_dump()
        return None

    def __call__(self, rec: Recorded) -> str:
        rf = rec.body.get("response_format") or {}
        kind = (rf.get("json_schema") or {}).get("name")
        text = {m.get("role"): str(m.get("content", "")) for m in rec.messages}
        try:
            answer = self._heuristic(kind, text.get("system", ""), text.get("user", ""))
        except ValueError:   # includes pydantic's ValidationError: a prompt we could not read
            answer = None
        if answer is not None:
            self._count(f"{kind} (heuristic)")
            return json.dumps(answer, ensure_ascii=False)
        self._count(f"{kind} (schema example)")
        schema = _schema_from_request(rec)
        return json.dumps(example_from_schema(schema) if schema else {})

    def _count(self, key: str) -> None:
        with self._lock:
            self.counts[key] = self.counts.get(key, 0) + 1


class TimedStub(OpenAIStub):
    """The stub, recording each request's (start, end) to measure real concurrency.

    With `nodelay` its sockets set TCP_NODELAY: the stub writes the status line and headers,
    then the body, in two sends, and Nagle holds the body until the client's delayed ACK
    (~40 ms on Linux loopback) -- a stall per request that a real API server does not add.
    """

    def __init__(self, *args: Any, nodelay: bool = True, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.spans: list[tuple[float, float]] = []
        if nodelay:
            base = self.server.RequestHandlerClass

            def setup(handler: Any) -> None:
                base.setup(handler)
                handler.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            self.server.RequestHandlerClass = type("NoDelayHandler", (base,), {"setup": setup})

    def _run(self, h: Any, rec: Recorded) -> None:
        start = time.perf_counter()
        try:
            super()._run(h, rec)
        finally:
            with self._lock:
                self.spans.append((start, time.perf_counter()))

    def reset(self) -> None:
        """Forget the requests of the previous run."""
        with self._lock:
            self.requests.clear()
            self.spans.clear()
            self.max_in_flight = 0


# ------------------------------------------------------------------ the two parts

def offline_part(args: argparse.Namespace, work: Path) -> list[Timing]:
    """Heuristic chat model with each offline embedder, on each chat set, --jobs 1."""
    sets = {"sample_chats (3)": sorted(SAMPLES.glob("*.jsonl"))}
    locomo = [args.locomo / name for name in LOCOMO_CHATS if (args.locomo / name).is_file()]
    if locomo:
        sets["LoCoMo conv-26+30"] = locomo
    results = []
    for embedder in args.embedders:
        env = clean_env(work, BME_EMBEDDING_OFFLINE_MODEL=embedder)
        for name, sources in sets.items():
            t = Timing(f"{name}, {embedder}", count_messages(sources))
            results.append(best_of(t, args.repeat, sources, work, env, jobs=1))
    return results


def stub_env(work: Path, base_url: str, stub_embeddings: bool) -> dict[str, str]:
    """Chat (and optionally embeddings) at the stub, with room for every job's requests."""
    extra = {"BME_CHAT_BASE_URL": base_url, "BME_CHAT_CONCURRENCY": "64", "BME_CHAT_TIMEOUT": "60",
             "BME_CHAT_MODEL": "stub-model"}
    if stub_embeddings:
        extra.update(BME_EMBEDDING_CONCURRENCY="64", BME_EMBEDDING_MODEL="stub-embed")
    else:
        extra.update(BME_EMBEDDING_OFFLINE="true", BME_EMBEDDING_OFFLINE_MODEL="hash")
    return clean_env(work, **extra)


def _in_flight(spans: list[tuple[float, float]]) -> float:
    """Average requests in flight between the first start and the last end."""
    if not spans:
        return 0.0
    first, last = min(s for s, _ in spans), max(e for _, e in spans)
    return sum(e - s for s, e in spans) / max(last - first, 1e-9)


def stub_part(args: argparse.Namespace, work: Path) -> tuple[list[Timing], dict[str, int]]:
    """--jobs 1/4/8 over `copies` copies of one chat against the delayed stub."""
    hook = HeuristicReplies()
    stub = TimedStub(delay=args.delay, embedding_dim=64, chat_content=hook, nodelay=not args.stub_nagle).start()
    try:
        env = stub_env(work, stub.base_url, args.stub_embeddings)
        sources = [args.stub_chat]
        messages = count_messages(sources) * args.copies
        results, replies = [], {}

        def reset() -> None:
            stub.reset()
            hook.counts.clear()

        for jobs in args.jobs:
            t = Timing(f"--jobs {jobs}", messages)
            for _ in range(args.repeat):
                best_of(t, 1, sources, work, env, jobs, args.copies, reset)
                if t.runs[-1][0] == t.wall:   # keep the stub's view of the fastest run
                    t.extra = {"calls": len(stub.requests), "max_in_flight": stub.max_in_flight,
                               "avg_in_flight": _in_flight(stub.spans)}
                    replies = dict(hook.counts)
            results.append(t)
        return results, replies
    finally:
        stub.stop()


# ------------------------------------------------------------------ profiling

def profile_child(chat_dir: Path, jobs: int, out: Path) -> None:
    """In the child: ingest chat_dir like the CLI, each worker thread under its own cProfile."""
    import cProfile

    from bme_cli import ingest_runner, workflow
    from bme_cli.providers.factory import build_providers
    from bme_cli.settings import load_settings

    profiles: list[cProfile.Profile] = []
    plain = ingest_runner.ingest_one

    def profiled(*a: Any, **kw: Any) -> Any:
        prof = cProfile.Profile()   # wall clock: time spent waiting counts where it is spent
        profiles.append(prof)
        return prof.runcall(plain, *a, **kw)

    ingest_runner.ingest_one = profiled
    settings = load_settings()
    providers = build_providers(settings, use_cache=False)
    start = time.perf_counter()
    run = ingest_runner.ingest_many(workflow.find_chats([str(chat_dir)]), settings, providers, Schema.default(),
                                    ingest_runner.IngestOptions(), ingest_runner.IngestEvents(), jobs,
                                    threading.Event())
    wall = time.perf_counter() - start
    providers.close()
    if any(o.error for o in run.outcomes):
        raise SystemExit(f"profiled ingest failed: {[o.error for o in run.outcomes if o.error]}")
    profiles[0].create_stats()
    import pstats
    stats = pstats.Stats(profiles[0])
    for prof in profiles[1:]:
        prof.create_stats()
        stats.add(prof)
    stats.dump_stats(out)
    print(f"{wall:.3f}")


# Where a worker thread's wall time goes: (label, function-name suffix in pstats keys).
PROFILE_PARTS = (("ingest_one (whole chat)", ("ingest_runner.py", "ingest_one")),
                 ("HTTP send incl. stub delay", ("openai.py", "_send")),
                 ("chat complete_json", ("openai.py", "complete_json")),
                 ("extract_batch", ("extract.py", "extract_batch")),
                 ("upkeep run_cadence", ("upkeep.py", "run_cadence")),
                 ("save after batch (save_graph)", ("store.py", "save_graph")),
                 ("os.fsync", ("~", "<built-in method posix.fsync>")),
                 ("embed_missing", ("embed.py", "embed_missing")))


def profile_part(args: argparse.Namespace, work: Path) -> str:
    """Profile one stub run with --jobs args.profile; a Markdown breakdown of worker wall time."""
    import pstats

    stub = TimedStub(delay=args.delay, embedding_dim=64, chat_content=HeuristicReplies(),
                     nodelay=not args.stub_nagle).start()
    try:
        chat_dir = fresh_copies([args.stub_chat], work / "chats", args.copies)
        out = work / "ingest.prof"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--profile-child", str(chat_dir),
               "--profile", str(args.profile), "--profile-out", str(out)]
        proc = subprocess.run(cmd, env=stub_env(work, stub.base_url, args.stub_embeddings),
                              capture_output=True, text=True, timeout=1800)
    finally:
        stub.stop()
    if proc.returncode != 0:
        raise SystemExit(f"profile child failed:\n{proc.stderr[-3000:]}")
    stats = pstats.Stats(str(out)).stats  # type: ignore[attr-defined]
    rows = ["| part (summed over worker threads) | calls | cumulative s |", "|---|---:|---:|"]
    for label, (file_end, name) in PROFILE_PARTS:
        hits = [(v[1], v[3]) for (f, _, fn), v in stats.items() if f.endswith(file_end) and fn == name]
        rows.append(f"| {label} | {sum(h[0] for h in hits)} | {sum(h[1] for h in hits):.2f} |")
    text = io.StringIO()
    pstats.Stats(str(out), stream=text).sort_stats("tottime").print_stats(15)
    top = "\n".join(line for line in text.getvalue().splitlines() if line.strip())
    return (f"ingest wall {proc.stdout.strip()} s with --jobs {args.profile}\n\n" + "\n".join(rows)
            + "\n\n```\n" + top[top.find("ncalls"):] + "\n```")


# ------------------------------------------------------------------ output

def load_line() -> str:
    """`uptime` as the shell prints it (load averages of the shared machine)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def offline_table(rows: list[Timing], start_s: float) -> str:
    """Markdown table of the offline part."""
    out = ["| chats, embedder | messages | best wall s | CPU s | msg/s | active nodes | all runs: wall/CPU s |",
           "|---|---:|---:|---:|---:|---:|---|"]
    for t in rows:
        runs = ", ".join(f"{w:.2f}/{c:.2f}" for w, c in t.runs)
        out.append(f"| {t.label} | {t.messages} | {t.wall:.2f} | {t.cpu:.2f} | {t.rate:.0f} | {t.nodes} | {runs} |")
    out.append(f"| start-up (nothing pending) | 0 | {start_s:.2f} | | | | |")
    return "\n".join(out)


def stub_table(rows: list[Timing], delay: float) -> str:
    """Markdown table of the stub part, with the speed-up over --jobs 1."""
    base = rows[0].wall if rows else 1.0
    out = ["| jobs | messages | stub requests | requests x delay / jobs s | best wall s | CPU s | msg/s "
           "| speed-up | avg / max in flight | all runs: wall/CPU s |",
           "|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for t in rows:
        jobs = int(t.label.split()[-1])
        calls = t.extra.get("calls", 0)
        runs = ", ".join(f"{w:.2f}/{c:.2f}" for w, c in t.runs)
        out.append(f"| {jobs} | {t.messages} | {calls} | {calls * delay / jobs:.1f} | {t.wall:.2f} | "
                   f"{t.cpu:.2f} | {t.rate:.1f} | {base / t.wall:.2f}x | "
                   f"{t.extra.get('avg_in_flight', 0):.1f} / {t.extra.get('max_in_flight', 0)} | {runs} |")
    return "\n".join(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration (best is reported)")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a new temp dir)")
    ap.add_argument("--locomo", type=Path, default=LOCOMO, help="folder with conv-26.jsonl and conv-30.jsonl")
    ap.add_argument("--embedders", nargs="+", default=["use-m3", "hash"], choices=["use-m3", "hash"])
    ap.add_argument("--skip-offline", action="store_true", help="skip the offline part")
    ap.add_argument("--skip-stub", action="store_true", help="skip the stub part")
    ap.add_argument("--delay", type=float, default=0.1, help="stub delay per request, seconds")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 4, 8], help="--jobs values (first is the base)")
    ap.add_argument("--copies", type=int, default=8, help="copies of --stub-chat ingested at once")
    ap.add_argument("--stub-chat", type=Path, default=SAMPLES / "group.jsonl", help="chat copied for the stub part")
    ap.add_argument("--stub-embeddings", action="store_true", help="embed via the stub (delayed) instead of hash")
    ap.add_argument("--profile", type=int, default=None, metavar="JOBS",
                    help="also profile one stub run with this --jobs (per-thread cProfile, in a child)")
    ap.add_argument("--profile-child", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--profile-out", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--stub-nagle", action="store_true",
                    help="leave Nagle on in the stub (adds a ~40 ms delayed-ACK stall per request)")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the selected parts and print Markdown tables (progress on stderr)."""
    args = parse_args(argv)
    if args.profile_child is not None:
        profile_child(args.profile_child, args.profile, args.profile_out)
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="bme-bench-ingest-"))
    print(f"# bench_ingest ({time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, repeat {args.repeat})")
    print(f"load before: `{load_line()}`\n")
    if not args.skip_offline:
        rows = offline_part(args, work)
        start_s = startup(work, clean_env(work, BME_EMBEDDING_OFFLINE_MODEL="hash"), [SAMPLES / "group.jsonl"])
        print("## Offline (heuristic chat model), --jobs 1\n\n" + offline_table(rows, start_s) + "\n")
        print(f"load: `{load_line()}`\n")
    if not args.skip_stub:
        rows, counts = stub_part(args, work)
        emb = "stub /embeddings (delayed)" if args.stub_embeddings else "offline hash"
        print(f"## Stub at 127.0.0.1, delay {args.delay:g} s/request, {args.copies} x "
              f"{args.stub_chat.name}, chat concurrency 64, embedder {emb}\n\n" + stub_table(rows, args.delay))
        print(f"\nstub chat replies in the last fastest run: {counts}\n\nload after: `{load_line()}`")
    if args.profile is not None:
        print(f"\n## Profile (delay {args.delay:g} s)\n\n{profile_part(args, work)}\n\nload: `{load_line()}`")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
