#!/usr/bin/env python3
"""The upkeep guard (bme_cli/memory/guard.py) on good and bad replies: how its thresholds were chosen.

Good replies: every compression, synopsis, reflection and evolution task the offline heuristic
answers while ingesting a chat with all upkeep on (synopsis every 3 extractions, reflection
every 4, evolution, compression), then `compress --force` - over the three sample chats and
LoCoMo conversations. Each reply is reviewed as the step reviews it; any rejection is a false
one. Bad replies, written for each of those same tasks: only a date, a sentence of the input
repeated, a word loop, the instructions copied, the input table copied, and text about
something else (English and Chinese). Each should be rejected.

    python benchmarks/bench_guard.py [--locomo /work/shared/data/locomo-dev] [--chats conv-26 conv-44]
                                     [--show 5] [--json out.json]

Prints, per task kind: good replies, false rejections (with the reason), the smallest overlap
share and the largest loop share and prompt-copy count among good replies; then, per bad kind,
how many were rejected.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bme_cli.chat import read_chat  # noqa: E402
from bme_cli.graph.model import Graph  # noqa: E402
from bme_cli.memory import guard  # noqa: E402
from bme_cli.memory.compress import compress_all  # noqa: E402
from bme_cli.memory.context import MemoryContext  # noqa: E402
from bme_cli.memory.ingest import ingest_chat  # noqa: E402
from bme_cli.memory.upkeep import run_cadence  # noqa: E402
from bme_cli.task import JsonTask  # noqa: E402
from bme_cli.providers.offline import HashEmbedder, OfflineChatModel  # noqa: E402
from bme_cli.settings import MemorySettings  # noqa: E402

KINDS = ("compress", "synopsis", "reflect", "evolve")
UNRELATED = {
    "en": ("To bake sourdough bread, feed the starter twice a day, mix flour and water, rest the dough "
           "overnight in a cool kitchen and bake it in a preheated cast-iron pot for forty minutes."),
    "zh": "制作酸面包需要每天喂养酵头两次，把面粉和水混合后放在阴凉的厨房里静置一夜，再放进预热好的铸铁锅烘烤四十分钟。",
}
DATES = {"en": "16 Mar 2025", "zh": "2025年3月16日"}


class Recorder:
    """The offline heuristic, keeping every upkeep task and its reply."""

    name, offline = "recorder", True

    def __init__(self) -> None:
        self.inner = OfflineChatModel()
        self.usage = self.inner.usage
        self.seen: list[tuple[JsonTask[Any], Any]] = []

    def complete_json(self, task: JsonTask[Any]) -> Any:
        reply = self.inner.complete_json(task)
        if task.kind in KINDS:
            self.seen.append((task, reply))
        return reply


def reply_fields(task: JsonTask[Any], reply: Any) -> list[tuple[dict[str, str], list[str]]]:
    """The (fields, required) pairs a step reviews for one reply (as the steps call guard.review)."""
    if task.kind == "compress":
        required = [c.name for c in task.data.columns if c.required]
        return [(dict(reply.fields), [k for k in required if reply.fields.get(k, "").strip()] or required)]
    if task.kind == "synopsis":
        return [({"summary": reply.summary}, ["summary"])] if reply.summary.strip() else []
    if task.kind == "reflect":
        fields = {"insight": reply.insight, "trigger": reply.trigger, "suggestion": reply.suggestion}
        return [(fields, ["insight"])] if reply.insight.strip() else []
    return [({"newContext": u.new_context}, ["newContext"]) for u in reply.neighbor_updates if u.new_context]


def record(chat_path: Path) -> list[tuple[JsonTask[Any], Any]]:
    """Ingest one chat offline with all upkeep on, then force compression; the upkeep tasks seen."""
    chat = read_chat(chat_path)
    settings = MemorySettings(enable_synopsis=True, synopsis_every_n=3, enable_reflection=True,
                              reflect_every_n=4, enable_evolution=True)
    model = Recorder()
    ctx = MemoryContext(chat=model, embedder=HashEmbedder(), settings=settings, rng=random.Random(1))
    graph = Graph()
    ingest_chat(chat, graph, ctx, save=lambda g: None, upkeep=run_cadence)
    compress_all(graph, replace(ctx, language=_language(model)), force=True)
    return model.seen


def _language(model: Recorder) -> str:
    return next((t.data.language for t, _ in model.seen if hasattr(t.data, "language")), "en")


def bad_replies(task: JsonTask[Any]) -> dict[str, str]:
    """Written junk of each kind for one task."""
    lang = "zh" if getattr(task.data, "language", "en") == "zh" else "en"
    sources = [s for s in guard.task_sources(task) if s.strip()]
    sentence = max(sources, key=len) if sources else "the story goes on"
    words = sentence.split()[:6] if lang == "en" else [sentence[:6]]
    return {
        "date only": DATES[lang],
        "sentence repeated": " ".join([sentence.rstrip(".。") + ("。" if lang == "zh" else ".")] * 4),
        "word loop": " ".join(words * 8),
        "instructions copied": " ".join(task.system.splitlines()[:2]),
        "input table copied": "\n".join(task.user.splitlines()[:4]),
        "unrelated": UNRELATED[lang],
    }


def review_all(paths: list[Path]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[bool]]]:
    """Per task kind, the heuristic's replies with their verdicts; per bad kind, which were rejected."""
    good: dict[str, list[dict[str, Any]]] = defaultdict(list)
    bad: dict[str, list[bool]] = defaultdict(list)
    for path in paths:
        for task, reply in record(path):
            sources = guard.task_sources(task)
            pairs = reply_fields(task, reply)
            for fields, required in pairs:
                scaffold = guard.scaffold_of(task, sources)
                ms = [guard.measure(v, scaffold) for v in fields.values() if v.strip()]
                _, share = guard.overlap(" ".join(v for v in fields.values() if v), sources)
                good[task.kind].append({"chat": path.name, "why": guard.review(task, fields, required),
                                        "text": " | ".join(v for v in fields.values() if v)[:160],
                                        "overlap": share, "loop": max(m.loop_share for m in ms),
                                        "copied": max(m.copied for m in ms)})
            if pairs:
                key = pairs[0][1][0]
                for name, text in bad_replies(task).items():
                    bad[f"{task.kind}: {name}"].append(guard.review(task, {key: text}, [key]) is not None)
    return good, bad


def _fmt(v: Any) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locomo", type=Path, default=Path("/work/shared/data/locomo-dev"))
    ap.add_argument("--chats", nargs="*", default=["conv-26", "conv-44"])
    ap.add_argument("--show", type=int, default=5, help="false rejections shown per kind")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    paths = sorted((ROOT / "sample_chats").glob("*.jsonl")) + [args.locomo / f"{c}.jsonl" for c in args.chats
                                                               if (args.locomo / f"{c}.jsonl").is_file()]
    good, bad = review_all(paths)
    out: dict[str, Any] = {"chats": [p.name for p in paths], "good": {}, "bad": {}}
    print(f"chats: {', '.join(out['chats'])}\n")
    print(f"{'kind':10} {'good':>5} {'false rej':>9} {'min overlap':>11} {'max loop':>8} {'max copied':>10}")
    for kind in KINDS:
        rows = good.get(kind, [])
        false = [r for r in rows if r["why"]]
        stats = {"replies": len(rows), "false_rejections": len(false),
                 "min_overlap": min((r["overlap"] for r in rows), default=None),
                 "max_loop": max((r["loop"] for r in rows), default=None),
                 "max_copied": max((r["copied"] for r in rows), default=None)}
        out["good"][kind] = stats
        print(f"{kind:10} {len(rows):5} {len(false):9} {_fmt(stats['min_overlap']):>11} "
              f"{_fmt(stats['max_loop']):>8} {_fmt(stats['max_copied']):>10}")
        for r in false[:args.show]:
            print(f"    {r['chat']}: {r['why']}: {r['text']!r}")
    print(f"\n{'bad reply':40} {'rejected':>12}")
    for name, hits in sorted(bad.items()):
        out["bad"][name] = {"replies": len(hits), "rejected": sum(hits)}
        print(f"{name:40} {sum(hits):5}/{len(hits):<6}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
