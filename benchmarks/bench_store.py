#!/usr/bin/env python3
"""Time the sidecar store on a large synthetic graph (issue 2: load and save < 2 s each).

Generates `synth-n<N>.graph.json` (an ST-BME v3 graph with float embeddings) with
`/work/shared/eval/synth_graph.py` once and caches it under `--work` (default
/tmp/bme-bench), imports it with the codec, then times saving and loading the sidecar
and writing ST-BME's export (best of `--repeat`; `--with-embeddings` also times the
export with vectors) and prints a table with wall and CPU seconds and the file sizes.
CPU time is the fairer number on a shared machine. Results: docs/perf/store.md.

    python benchmarks/bench_store.py [--nodes 100000] [--dim 384] [--work DIR] [--with-embeddings]
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bme_cli.graph.codec import export_document
from bme_cli.graph.model import Graph
from bme_cli.graph.store import GraphLock, load_graph, read_document, save_graph, sidecar_path

DEFAULT_SYNTH = Path("/work/shared/eval/synth_graph.py")
NOW_MS = 1_772_323_200_000


def synth_graph(work: Path, nodes: int, dim: int, synth: Path) -> Path:
    """The cached synthetic ST-BME graph, generated on first use."""
    out = work / f"synth-n{nodes}-d{dim}"
    path = out / f"synth-n{nodes}.graph.json"
    if not path.exists():
        out.mkdir(parents=True, exist_ok=True)
        print(f"generating {path} (once; this takes a while)...", file=sys.stderr)
        subprocess.run([sys.executable, str(synth), "--nodes", str(nodes), "--dim", str(dim),
                        "--out-dir", str(out)], check=True, stdout=subprocess.DEVNULL)
    return path


def best_of(repeat: int, fn) -> tuple[float, float, object]:
    """The fastest wall-clock and CPU times of `repeat` runs of fn(), and the last result.

    CPU time is reported too because a shared machine's wall clock measures its neighbours.
    """
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu, result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000, help="active nodes in the synthetic graph")
    ap.add_argument("--dim", type=int, default=384, help="embedding dimension")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bme-bench"), help="cache and scratch folder")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing (best is reported)")
    ap.add_argument("--synth", type=Path, default=DEFAULT_SYNTH, help="path of synth_graph.py")
    ap.add_argument("--with-embeddings", action="store_true", help="also time `bme export --with-embeddings`")
    return ap.parse_args(argv)


def time_store(args: argparse.Namespace, graph: Graph) -> list[tuple[str, tuple[float, float], float]]:
    """(step, (wall, cpu), MB) for saving, loading and exporting `graph`."""
    sidecar = sidecar_path(args.work / f"bench-n{args.nodes}.jsonl")
    sidecar.unlink(missing_ok=True)

    def save() -> None:
        with GraphLock(sidecar):
            save_graph(sidecar, graph)

    *t_save, _ = best_of(args.repeat, save)
    *t_load, loaded = best_of(args.repeat, lambda: load_graph(sidecar, NOW_MS))
    assert len(loaded.nodes) == len(graph.nodes) and len(loaded.edges) == len(graph.edges)
    assert all(np.array_equal(n.embedding, loaded.get(n.id).embedding) for n in graph.nodes[:1000]
               if n.embedding is not None)
    *t_export, text = best_of(args.repeat, lambda: export_document(loaded))
    mb, size = 1024 * 1024, sidecar.stat().st_size
    rows = [(f"save sidecar (best of {args.repeat})", t_save, size / mb),
            (f"load sidecar (best of {args.repeat})", t_load, size / mb),
            (f"export, ST-BME format (best of {args.repeat})", t_export, len(text.encode()) / mb)]
    del text
    if args.with_embeddings:
        *t_vectors, text = best_of(1, lambda: export_document(loaded, with_embeddings=True))
        rows.append(("export --with-embeddings", t_vectors, len(text) / mb))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    args = parse_args(argv)
    source = synth_graph(args.work, args.nodes, args.dim, args.synth)
    *t_import, imported = best_of(1, lambda: read_document(source, NOW_MS))
    graph = imported.graph
    graph.meta.embedding_model = "synthetic"  # ST-BME vectors are untagged; keep them here
    rows = [("import ST-BME JSON (read_document)", t_import, source.stat().st_size / (1024 * 1024))]
    rows += time_store(args, graph)
    with_vec = sum(n.embedding is not None for n in graph.nodes)
    print(f"graph: {len(graph.nodes)} nodes ({with_vec} with {args.dim}-d vectors), {len(graph.edges)} edges")
    print(f"{'step':<42} {'wall s':>7} {'CPU s':>7} {'MB':>8}")
    for name, (wall, cpu), size in rows:
        print(f"{name:<42} {wall:>7.2f} {cpu:>7.2f} {size:>8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
