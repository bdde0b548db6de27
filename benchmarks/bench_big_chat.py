#!/usr/bin/env python3
"""`bme ingest --dry-run` and `bme stats` on one very large chat: wall time and peak memory.

The chat is made up (a seeded generator of role-play turns: names, places, numbers, a few
reasoning blocks and status panels, some Chinese), `--mb` megabytes of it, written once into
`--work`. Each command runs as a fresh child process, measured by the kernel (os.wait4's
rusage: user + sys CPU seconds and the child's peak RSS) with its wall time beside it;
with `--runs N` each figure is the median of N runs.

    python benchmarks/bench_big_chat.py [--mb 200] [--runs 3] [--work /tmp/bme-big] [--json out.json]

Issue 17 asks for a 200 MB chat under 60 s and 500 MB peak for both commands.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

NAMES = ["Mira", "Rowan", "Tobin", "Elsa", "Kade", "Lin", "Ouyang", "Farah"]
PLACES = ["the harbour", "the old tower", "Saltmere", "the river ford", "the night market", "北门"]
THINGS = ["a lantern", "the map", "a silver key", "the letter", "bread", "a sword", "雨伞"]


def _turn(rng: random.Random, i: int) -> str:
    """One message of varied prose, sometimes with a reasoning block or a status panel."""
    who, where, what = rng.choice(NAMES), rng.choice(PLACES), rng.choice(THINGS)
    sentences = [f"{who} walked to {where} carrying {what} at hour {i % 24}.",
                 f"There were {rng.randint(2, 90)} people waiting, and {rng.choice(NAMES)} counted them twice.",
                 f"\"We leave at dawn,\" {who} said, looking at {rng.choice(PLACES)}.",
                 "雨下了一整夜，我们在门口等着。"]
    text = " ".join(rng.choice(sentences) for _ in range(rng.randint(3, 12)))
    if rng.random() < 0.1:
        text = f"<think>{who} should be careful here.</think>\n{text}"
    if rng.random() < 0.05:
        text += f"\n```status\nHP: {rng.randint(1, 100)}/100\nLocation: {where}\n```"
    return text


def write_chat(path: Path, megabytes: float, seed: int = 17) -> int:
    """A chat of about `megabytes` MB at path (header line, then alternating turns); its message count."""
    rng, limit, count = random.Random(seed), int(megabytes * 1_000_000), 0
    with path.open("w", encoding="utf-8") as f:
        size = f.write(json.dumps({"user_name": "Rowan", "character_name": "Mira", "chat_metadata": {}}) + "\n")
        while size < limit:
            user = count % 2 == 1
            line = {"name": "Rowan" if user else "Mira", "is_user": user, "is_system": False,
                    "send_date": f"2024-0{1 + count % 9}-1{count % 10}T12:00:00.000Z", "mes": _turn(rng, count),
                    "extra": {}, "swipe_id": 0}
            size += f.write(json.dumps(line, ensure_ascii=False) + "\n")
            count += 1
    return count


def measure(args: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process."""
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(args)} exited {code}: {err.strip()[-500:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the runs (of an odd count, the middle one)."""
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=200.0)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bme-big"))
    parser.add_argument("--runs", type=int, default=1, help="runs of each command; the median is shown")
    parser.add_argument("--json", type=Path)
    opts = parser.parse_args()
    opts.work.mkdir(parents=True, exist_ok=True)
    chat = opts.work / f"big-{opts.mb:g}mb.jsonl"
    if not chat.exists():
        print(f"writing {chat}: {write_chat(chat, opts.mb):,} messages", file=sys.stderr)
    env = {**os.environ, "XDG_CONFIG_HOME": str(opts.work / "xdg"), "XDG_CACHE_HOME": str(opts.work / "xdg"),
           "XDG_DATA_HOME": str(opts.work / "xdg"), "BME_EMBEDDING_OFFLINE_MODEL": "hash"}
    bme = [sys.executable, "-m", "bme_cli"]
    commands = {"ingest --dry-run": ["ingest", "--dry-run", str(chat)], "stats": ["stats", str(chat)]}
    rows = {name: median([measure(bme + args, env) for _ in range(max(1, opts.runs))])
            for name, args in commands.items()}
    size = chat.stat().st_size / 1e6
    for name, row in rows.items():
        print(f"{name:18} {size:7.1f} MB  wall {row['wall_s']:7.2f} s  cpu {row['cpu_s']:7.2f} s  "
              f"peak {row['peak_rss_mb']:7.1f} MB")
    if opts.json:
        opts.json.write_text(json.dumps({"chat_mb": round(size, 1), **rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
