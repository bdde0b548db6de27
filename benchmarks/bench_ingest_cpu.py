#!/usr/bin/env python3
"""Offline ingest as a whole process, in CPU seconds: this bme, optionally paired with another.

Each run is `python -m bme_cli --no-cache ingest DIR --jobs 1` on a fresh copy of one chat,
with bme's bytecode written first (as an installed package has it),
with the offline heuristic and the hash embedder (`BME_EMBEDDING_OFFLINE_MODEL=hash`),
default settings, BME_*/OPENAI_* cleared and config and cache in a scratch folder. CPU is the
child's user + sys (start-up included); msg/s is the chat's messages (header excluded) over
that. With `--base PYTHON` (the interpreter of another checkout's venv) the two run in turn,
A B A B ..., so both see the same machine state; the table gives each one's median and the
median of the per-pair ratios.

    python benchmarks/bench_ingest_cpu.py [--base OTHER/.venv/bin/python] [--repeat 3] CHAT...
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bme_cli.chat import read_chat


def run_once(python: str, chat: Path, work: Path) -> float:
    """Child CPU seconds of one offline ingest of a fresh copy of `chat`; fails loudly."""
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("chats", "cache", "config"):
        (work / sub).mkdir(parents=True)
    shutil.copyfile(chat, work / "chats" / chat.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_", "PYTHONPATH"))}
    env.update(XDG_CACHE_HOME=str(work / "cache"), XDG_CONFIG_HOME=str(work / "config"), NO_COLOR="1",
               BME_EMBEDDING_OFFLINE_MODEL="hash")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([python, "-m", "bme_cli", "--no-cache", "ingest", str(work / "chats"), "--jobs", "1"],
                          env=env, cwd=work, capture_output=True, text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{python} failed on {chat}:\n{proc.stderr[-3000:]}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def compile_package(python: str) -> None:
    """Write the bytecode of the `bme_cli` that `python` imports, as `pip install` does.

    With PYTHONDONTWRITEBYTECODE set (this machine sets it) a source checkout would compile
    all of bme's modules in every timed run, 0.15-0.2 s that an installed bme never spends."""
    where = subprocess.run([python, "-c", "import bme_cli, os; print(os.path.dirname(bme_cli.__file__))"],
                           capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", where], check=True, cwd=tempfile.gettempdir())


def main(argv: list[str] | None = None) -> int:
    """Print a Markdown table: per chat, each version's median CPU s and msg/s."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chats", nargs="+", type=Path)
    ap.add_argument("--base", help="the Python of the version to pair with (its checkout installed)")
    ap.add_argument("--this", default=sys.executable,
                    help="the Python of this version (default: the one running the script); a wrapper "
                         "script that sets PYTHONPATH lets two checkouts share one venv")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bme-bench-ingest-cpu-"))
    versions = ([("base", args.base)] if args.base else []) + [("this", args.this)]
    for _, python in versions:
        compile_package(python)
    print(f"# offline ingest, hash embedder, --jobs 1, whole process ({time.strftime('%Y-%m-%d %H:%M')}, "
          f"load {os.getloadavg()[0]:.1f}, median of {args.repeat})\n")
    print("| chat | messages | " + " | ".join(f"{v} CPU s (msg/s)" for v, _ in versions)
          + (" | this / base, median of pairs |" if args.base else " |"))
    print("|---|---:|" + "---:|" * len(versions) + ("---:|" if args.base else ""))
    try:
        for chat in args.chats:
            n = len(read_chat(chat).messages)
            cpu: dict[str, list[float]] = {v: [] for v, _ in versions}
            for _ in range(args.repeat):
                for tag, python in versions:
                    cpu[tag].append(run_once(python, chat.resolve(), work / tag))
            cells = [f"{statistics.median(cpu[v]):.2f} ({n / statistics.median(cpu[v]):.0f})" for v, _ in versions]
            ratio = ([f"{statistics.median(t / b for t, b in zip(cpu['this'], cpu['base'])):.2f}"]
                     if args.base else [])
            print(f"| {chat.name} | {n} | " + " | ".join(cells + ratio) + " |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
