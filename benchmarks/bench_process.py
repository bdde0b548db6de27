#!/usr/bin/env python3
"""bme as a whole process: CPU seconds (user + sys) and peak memory of each run, medians.

Every figure is one fresh `python -m bme_cli ...` child, measured by the kernel
(os.wait4's rusage: user + sys CPU time and the child's peak RSS), `--repeat` runs each
after one warm-up run, so the files are in the page cache. CPU time is steadier than wall
time on a shared machine; the tables give the median and the range.

Rows, for each synthetic graph of ../shared/eval/synth_graph.py (384-d vectors):

* import:  `bme import CHAT synth-nN.graph.json --embedding-model synthetic-384 --force` (ST-BME's
  own JSON, vectors kept) into a fresh folder beside a three-message chat;
* node parse: the reference for the import, node's own `JSON.parse` of the same file
  (`node -e "JSON.parse(fs.readFileSync(FILE, 'utf8'))"`, what ST-BME's deserialize starts
  with), measured the same way when `node` is on the PATH;
* recall, index saved: `bme recall CHAT --queries q.jsonl`, one query carrying its own
  vector (read-only, default settings, budget 1500), with `<sidecar>.index` from an earlier run;
* recall, no index: the same with the index deleted before each run (the process loads the
  sidecar, builds the index and saves it);
* recall --query, reinforcing: `bme recall CHAT --query TEXT` (the hash embedder, so no
  model loads; the graph's vectors are of another model, so they are not compared): loads
  the sidecar under the lock, takes the index from the cache, saves sidecar and index.

Start-up: `bme --version`, `bme --help`. bme's modules are byte-compiled first, as an
installed package's are. The sidecar is dated back a minute after the import
(a cache is not written for a sidecar changed in the last two seconds, see index_cache.py).

    python benchmarks/bench_process.py [--sizes 1000 10000 100000] [--repeat 5] [--work /tmp/bme-bench]
        [--skip-import] [--skip-cold] [--skip-reinforcing] [--json out.json]

At 300k nodes (a 1.1 GB sidecar) the rows that load the sidecar take about 40 s each: measure
that size with `--repeat 3 --skip-import --skip-cold --skip-reinforcing`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYNTH = ROOT.parent / "shared" / "eval" / "synth_graph.py"
CHAT = ['{"user_name":"u","character_name":"c","chat_metadata":{}}',
        '{"name":"c","is_user":false,"mes":"The road ahead is long."}',
        '{"name":"u","is_user":true,"mes":"Let us go on."}']


# ST-BME's import starts with the browser's JSON.parse of the whole file: node's, timed as the reference
NODE_PARSE = ("const d = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));"
              "console.log(d.nodes.length)")
# The smallest Typer program shaped like `bme recall CHAT --queries FILE`, numpy imported: the floor.
TYPER_APP = ("import typer, numpy\nfrom pathlib import Path\nfrom typing import Optional\n"
             "app = typer.Typer(pretty_exceptions_enable=False)\n"
             "@app.callback()\ndef main(config: Optional[Path] = None) -> None: pass\n"
             "@app.command()\ndef recall(chat: Path, queries: Optional[Path] = None, budget: Optional[int] = None,"
             " fmt: str = 'markdown') -> None: pass\n"
             "app(['recall', 'chat.jsonl', '--queries', 'q.jsonl'])")


def run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of one bme process (or, args starting with "-c", one python
    process), from the kernel's accounting."""
    if args[:1] == ["-c"]:
        command = [sys.executable, *args]
    elif os.path.isabs(args[0]):  # another program (node), run as it is
        command = list(args)
    else:
        command = [sys.executable, "-m", "bme_cli", *args]
    proc = subprocess.Popen(command, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bme {' '.join(args)} failed:\n{err}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(args: list[str], env: dict[str, str], repeat: int, before=None) -> dict:  # noqa: ANN001
    """Median and range of CPU and peak RSS over `repeat` runs after one warm-up."""
    runs = []
    for i in range(repeat + 1):
        if before is not None:
            before()
        got = run(args, env)
        if i:
            runs.append(got)
    cpu, rss = [c for c, _ in runs], [r for _, r in runs]
    return {"cpu_s": round(statistics.median(cpu), 3), "cpu_min": round(min(cpu), 3), "cpu_max": round(max(cpu), 3),
            "rss_mib": round(statistics.median(rss), 1), "rss_max": round(max(rss), 1), "runs": repeat}


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BME_", "OPENAI_"))}
    env.update(BME_EMBEDDING_OFFLINE_MODEL="hash", XDG_CONFIG_HOME=str(home / "cfg"), XDG_CACHE_HOME=str(home / "cache"),
               PYTHONPATH=str(ROOT))
    return env


def ensure_graph(work: Path, n: int) -> tuple[Path, Path]:
    graph, queries = work / f"synth-n{n}.graph.json", work / f"synth-n{n}.queries.json"
    if not graph.exists() or not queries.exists():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, str(SYNTH), "--nodes", str(n), "--dim", "384", "--out-dir", str(work)],
                       check=True, stdout=subprocess.DEVNULL)
    return graph, queries


def one_size(work: Path, n: int, repeat: int, skip_import: bool, skip_cold: bool, skip_reinforcing: bool) -> dict:
    """Every row for one graph size."""
    graph_file, queries_file = ensure_graph(work, n)
    folder = work / f"process-n{n}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env, chat = _env(folder), folder / "chat.jsonl"
    chat.write_text("\n".join(CHAT), encoding="utf-8")
    side, index = folder / "chat.bme.json", folder / "chat.bme.json.index"
    out: dict = {"nodes": n, "sidecar_mb": None}
    imp = ["import", str(chat), str(graph_file), "--embedding-model", "synthetic-384", "--force"]
    out["import"] = measure(imp, env, 1 if skip_import else repeat)
    node = shutil.which("node")
    if node and not skip_import:
        out["node_parse"] = measure([node, "-e", NODE_PARSE, str(graph_file)], env, repeat)
    out["sidecar_mb"] = round(side.stat().st_size / 2**20, 1)
    t = time.time() - 60
    os.utime(side, (t, t))
    first = json.loads(queries_file.read_text(encoding="utf-8"))["queries"][0]
    q = folder / "q.jsonl"
    q.write_text(json.dumps({"query": first["text"], "embedding": first["embedding"]}) + "\n", encoding="utf-8")
    recall = ["recall", str(chat), "--queries", str(q)]
    if not skip_cold:
        out["recall_no_index"] = measure(recall, env, repeat, before=lambda: index.unlink(missing_ok=True))
    out["recall_index_saved"] = measure(recall, env, repeat)
    out["index_mb"] = round(index.stat().st_size / 2**20, 1)
    if not skip_reinforcing:
        out["recall_reinforcing"] = measure(["recall", str(chat), "--query", first["text"]], env, repeat)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def blas_kernel() -> str:
    """Which BLAS numpy runs here, and with which kernel (threadpoolctl)."""
    from threadpoolctl import threadpool_info
    import numpy  # noqa: F401
    info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return ", ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')}" for i in info) or "none"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--work", type=Path, default=Path("/tmp/bme-bench"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-import", action="store_true", help="import once per size, not --repeat times")
    ap.add_argument("--skip-cold", action="store_true", help="no 'recall, no index' row")
    ap.add_argument("--skip-reinforcing", action="store_true", help="no 'recall --query, reinforcing' row")
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args()
    env = _env(a.work)
    # bytecode as an installed package has it (pip compiles at install; with PYTHONDONTWRITEBYTECODE
    # set, a source checkout would compile bme's 60 modules in every run, ~0.1-0.3 s)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "bme_cli")], check=True)
    print(f"load {os.getloadavg()[0]:.1f}, BLAS {blas_kernel()}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}")
    startup = {"version": measure(["--version"], env, a.repeat), "help": measure(["--help"], env, a.repeat),
               # the floor under any recall: the interpreter and the three libraries it cannot do without
               "python_numpy_pydantic_typer": measure(["-c", "import numpy, pydantic, typer"], env, a.repeat),
               # ... and what typer itself does when it runs a command (typer 0.2x builds a pydantic
               # TypeAdapter per option, which loads pydantic's model machinery and plugin lookup)
               "typer_app_with_numpy": measure(["-c", TYPER_APP], env, a.repeat)}
    for name, row in startup.items():
        print(f"{name}: {row}")
    rows = []
    for n in a.sizes:
        rows.append(one_size(a.work, n, a.repeat, a.skip_import, a.skip_cold, a.skip_reinforcing))
        print(json.dumps(rows[-1]), flush=True)
    print("| nodes | sidecar | import | node JSON.parse | recall, index saved | recall, no index "
          "| recall --query, reinforcing | index file |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [f"{r[k]['cpu_s']:.2f} s / {r[k]['rss_mib']:.0f} MiB" if k in r else "-"
                 for k in ("import", "node_parse", "recall_index_saved", "recall_no_index", "recall_reinforcing")]
        print(f"| {r['nodes']:,} | {r['sidecar_mb']} MB | " + " | ".join(cells) + f" | {r['index_mb']} MB |")
    if a.json:
        a.json.write_text(json.dumps({"startup": startup, "sizes": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
