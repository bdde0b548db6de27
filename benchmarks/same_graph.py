#!/usr/bin/env python3
"""Does a change to bme leave what `bme ingest` stores as it was? Compare two versions' graphs.

Each chat is ingested the way `bme ingest --jobs 1` does it (offline heuristic, hash embedder,
default settings), in a child process that fixes the clock (`time.time`), the ids
(`uuid.uuid4` counts up) and the seed, so two versions of bme given the same chat must write
the same sidecar. The sidecars are compared by content (the JSON, parsed), with node and edge
ids replaced by their position in case one version made its ids in another order:

    python benchmarks/same_graph.py --base /path/to/other/checkout/.venv/bin/python CHAT...

`--base` is the Python of the other version (its venv has that checkout installed); this one
runs with the interpreter the script is started with. Prints one line per chat (`same` or
the first differences) and exits 1 when any differs. `--dump DIR` keeps both canonical dumps.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

FIXED_TIME = 1_764_000_000.0   # 2025-11-24, any fixed moment will do
SHOWN = 8


def child(chat: Path, out: Path) -> None:
    """In the child: ingest `chat` (a fresh copy) with a fixed clock and counted ids, write the
    canonical form of its sidecar to `out`."""
    import threading
    import time
    import uuid

    counter = iter(range(1, 1 << 62))
    time.time = lambda: FIXED_TIME   # type: ignore[assignment]
    uuid.uuid4 = lambda: uuid.UUID(int=next(counter))   # type: ignore[assignment]

    from bme_cli import ingest_runner
    from bme_cli.graph.schema import Schema
    from bme_cli.graph.store import sidecar_path
    from bme_cli.providers.factory import build_providers
    from bme_cli.settings import load_settings

    settings = load_settings()
    providers = build_providers(settings, use_cache=False)
    run = ingest_runner.ingest_many([chat], settings, providers, Schema.default(),
                                    ingest_runner.IngestOptions(seed=7), ingest_runner.IngestEvents(), 1,
                                    threading.Event())
    providers.close()
    errors = [o.error for o in run.outcomes if o.error]
    if errors:
        raise SystemExit(f"ingest failed: {errors}")
    out.write_text(json.dumps(canonical(json.loads(sidecar_path(chat).read_bytes())), indent=1, sort_keys=True))


def canonical(doc: dict[str, Any]) -> Any:
    """The sidecar with node ids as n0, n1, ... and edge ids as e0, e1, ... (graph order)."""
    graph = doc.get("graph") or {}
    names = {n["id"]: f"n{i}" for i, n in enumerate(graph.get("nodes") or [])}
    names.update({e["id"]: f"e{i}" for i, e in enumerate(graph.get("edges") or [])})

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return {names.get(k, k): walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return names.get(x, x) if isinstance(x, str) else x
    return walk(doc)


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two canonical documents differ (paths, at most a few per branch)."""
    if type(a) is not type(b):
        return [f"{path}: {type(a).__name__} vs {type(b).__name__}"]
    if isinstance(a, dict):
        out = [f"{path}.{k}: only in {'base' if k in a else 'this'}" for k in sorted(a.keys() ^ b.keys())]
        for k in sorted(a.keys() & b.keys()):
            out += differences(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list):
        out = [f"{path}: {len(a)} vs {len(b)} items"] if len(a) != len(b) else []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {str(a)[:60]!r} vs {str(b)[:60]!r}"]


def run_child(python: str, chat: Path, work: Path, tag: str, hash_seed: str = "0") -> Any:
    """Canonical sidecar of `chat` ingested by `python`'s bme (in `work`/`tag`)."""
    folder = work / tag
    shutil.rmtree(folder, ignore_errors=True)
    for sub in ("chats", "cache", "config"):
        (folder / sub).mkdir(parents=True)
    copy = folder / "chats" / chat.name
    shutil.copyfile(chat, copy)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_", "PYTHONPATH"))}
    env.update(XDG_CACHE_HOME=str(folder / "cache"), XDG_CONFIG_HOME=str(folder / "config"),
               BME_EMBEDDING_OFFLINE_MODEL="hash", NO_COLOR="1", PYTHONHASHSEED=hash_seed)
    out = folder / "canonical.json"
    proc = subprocess.run([python, str(Path(__file__).resolve()), "--child", str(copy), str(out)],
                          env=env, cwd=folder, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{tag} ({python}) failed on {chat}:\n{proc.stderr[-3000:]}")
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    """Compare every chat's graph between --base and this interpreter's bme."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chats", nargs="*", type=Path)
    ap.add_argument("--base", help="the Python whose bme is the reference")
    ap.add_argument("--this", default=sys.executable,
                    help="the Python of this version (default: the one running the script); a wrapper "
                         "script that sets PYTHONPATH lets two checkouts share one venv")
    ap.add_argument("--dump", type=Path, default=None, help="keep both canonical dumps here")
    ap.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    if not args.base or not args.chats:
        ap.error("give --base PYTHON and at least one chat")
    work = Path(tempfile.mkdtemp(prefix="bme-same-graph-"))
    differ = 0
    try:
        for chat in args.chats:
            base = run_child(args.base, chat.resolve(), work, "base")
            this = run_child(args.this, chat.resolve(), work, "this")
            if args.dump:
                args.dump.mkdir(parents=True, exist_ok=True)
                for tag, doc in (("base", base), ("this", this)):
                    (args.dump / f"{chat.stem}.{tag}.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
            diff = differences(base, this)
            nodes = len((this.get("graph") or {}).get("nodes") or [])
            edges = len((this.get("graph") or {}).get("edges") or [])
            print(f"{chat.name}: " + (f"same ({nodes} nodes, {edges} edges)" if not diff else
                                      f"{len(diff)} differences: " + "; ".join(diff[:SHOWN])))
            differ += bool(diff)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
