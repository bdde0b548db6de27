"""`bme recall` as a whole process on synthetic ST-BME graphs: wall time and peak memory.

Each graph from ../shared/eval/synth_graph.py is imported once into a sidecar beside a
small chat (vectors kept), then `bme recall` runs as a fresh process:

* single: one `--query` (the hash embedder is configured, so no model is loaded; the
  graph's 384-d vectors do not match it, so recall runs on names, BM25 and the graph);
* batch: all 50 queries with their own embeddings in one `--queries` file.

Peak memory is the child's maximum RSS; "graph size" is the sidecar's size on disk.

  python benchmarks/bench_recall_process.py --sizes 1000 10000 [--work /tmp/bme-bench]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYNTH = ROOT.parent / "shared" / "eval" / "synth_graph.py"
sys.path.insert(0, str(ROOT))

from bme_cli.graph import codec, store  # noqa: E402
from bme_cli.graph.model import now_ms  # noqa: E402

CHAT = ['{"user_name":"u","character_name":"c","chat_metadata":{}}',
        '{"name":"c","is_user":false,"mes":"The road ahead is long."}',
        '{"name":"u","is_user":true,"mes":"Let us go on."}']


def ensure_graph(work: Path, n: int) -> tuple[Path, Path]:
    graph, queries = work / f"synth-n{n}.graph.json", work / f"synth-n{n}.queries.json"
    if not graph.exists():
        subprocess.run([sys.executable, str(SYNTH), "--nodes", str(n), "--dim", "384", "--out-dir", str(work)],
                       check=True)
    return graph, queries


def prepare(folder: Path, graph_file: Path, queries_file: Path) -> tuple[Path, Path, str]:
    chat = folder / "chat.jsonl"
    chat.write_text("\n".join(CHAT), encoding="utf-8")
    imported = codec.graph_from_any(graph_file.read_text(encoding="utf-8"), str(graph_file), now_ms())
    imported.graph.meta.embedding_model = "synthetic-384"
    imported.graph.meta.embedding_dim = 384
    store.save_graph(store.sidecar_path(chat), imported.graph)
    qs = json.loads(queries_file.read_text(encoding="utf-8"))["queries"]
    batch = folder / "queries.jsonl"
    batch.write_text("".join(json.dumps({"query": q["text"], "embedding": q["embedding"]}) + "\n" for q in qs),
                     encoding="utf-8")
    return chat, batch, qs[0]["text"]


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and the child's peak RSS in MB of one bme process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bme_cli", *args], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--work", type=Path, default=Path("/tmp/bme-bench"))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    print("| active nodes | sidecar | single recall (median wall) | batch of 50 (wall) | peak RSS | peak / sidecar |")
    print("|---|---|---|---|---|---|")
    for n in a.sizes:
        graph_file, queries_file = ensure_graph(a.work, n)
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp)
            env = {**os.environ, "BME_EMBEDDING_OFFLINE_MODEL": "hash", "XDG_CONFIG_HOME": str(home / "cfg"),
                   "XDG_CACHE_HOME": str(home / "cache")}
            chat, batch, first = prepare(home, graph_file, queries_file)
            size_mb = store.sidecar_path(chat).stat().st_size / 2**20
            singles = [run(["recall", str(chat), "--query", first, "--no-reinforce"], env) for _ in range(a.repeat)]
            batch_wall, batch_peak = run(["recall", str(chat), "--queries", str(batch)], env)
        wall = statistics.median(w for w, _ in singles)
        peak = max(max(p for _, p in singles), batch_peak)
        print(f"| {n:,} | {size_mb:.0f} MB | {wall:.2f} s | {batch_wall:.2f} s | {peak:.0f} MB | {peak / size_mb:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
