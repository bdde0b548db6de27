#!/usr/bin/env python3
"""Extraction quality on the labelled chats (issue 10, item 3): what `bme ingest` stores.

Runs the real pipeline through its public command line (the `bme` Typer app, in-process,
so the interpreter starts once; offline providers, default settings) on fresh copies of the
labelled chats in a temporary folder, with BME_*/OPENAI_* cleared and XDG_CONFIG_HOME /
XDG_CACHE_HOME pointed into that folder (so no user config, key or response cache changes
the result), then reads the sidecar each chat got and scores it with labelled_scoring.py:

* precision and recall of character and location nodes against the labels (recall also
  without the labels marked minor);
* junk: nodes of every type whose text carries markup, macros, status-panel lines,
  planning notes, policy lists or one of the chat's leak phrases, and entities named like
  something in the chat's `not_entities`;
* fact coverage: the share of labelled facts whose keywords all sit in one active node, and
  the share found in the `bme recall` block (batch mode, default budget) for the fact's query.

    python benchmarks/labelled_quality.py [--split dev heldout samples] [--chat NAME ...]
        [--format table|json] [--embedder use-m3|hash] [--keep DIR] [--no-failures] [--heldout-failures]

The chats, labels and the dev / heldout / samples manifest are in tests/data/labelled/; how
they were made and today's numbers are in docs/quality.md. tests/test_labelled_quality.py
imports `measure` and holds a floor under the totals.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from typer.testing import CliRunner

from bme_cli.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from labelled_scoring import (ENTITY_TYPES, ChatLabels, ChatScore, load_manifest,  # noqa: E402
                              score_chat)

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "tests" / "data" / "labelled" / "manifest.json"


# ------------------------------------------------------------------ running bme

def _env(root: Path, embedder: str) -> dict[str, str | None]:
    """Variables for the run; None unsets one (CliRunner restores them all afterwards)."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith(("BME_", "OPENAI_"))}
    env.update(XDG_CONFIG_HOME=str(root / "config"), XDG_CACHE_HOME=str(root / "cache"),
               BME_EMBEDDING_OFFLINE_MODEL=embedder, NO_COLOR="1", COLUMNS="80")
    return env


def _bme(args: list[str], env: dict[str, str | None], what: str) -> str:
    result = CliRunner().invoke(app, ["--no-cache", *args], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise RuntimeError(f"bme {what} crashed: {result.exception!r}") from result.exception
    if result.exit_code != 0:
        raise RuntimeError(f"bme {what} failed (exit {result.exit_code}): {result.stderr.strip()}")
    return result.stdout


@dataclass
class Run:
    """The graph and recall blocks bme produced for each chat, and how long it took."""

    graphs: dict[str, dict] = field(default_factory=dict)
    blocks: dict[str, list[str]] = field(default_factory=dict)
    ingest_seconds: float = 0.0
    recall_seconds: float = 0.0


def run_bme(chats: list[ChatLabels], root: Path, embedder: str = "use-m3") -> Run:
    """Ingest every chat (one command), then one batch recall per chat for its facts' queries."""
    env, run = _env(root, embedder), Run()
    copies = {}
    for cl in chats:
        folder = root / "chats" / cl.name
        folder.mkdir(parents=True)
        copies[cl.name] = folder / cl.chat_path.name
        shutil.copyfile(cl.chat_path, copies[cl.name])
    start = time.perf_counter()
    _bme(["ingest", "-q", *map(str, copies.values())], env, "ingest")
    run.ingest_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for cl in chats:
        chat = copies[cl.name]
        sidecar = json.loads(chat.with_suffix(".bme.json").read_text(encoding="utf-8"))
        run.graphs[cl.name] = sidecar["graph"]
        queries = chat.parent / "queries.jsonl"
        queries.write_text("".join(json.dumps({"query": f.query}, ensure_ascii=False) + "\n"
                                   for f in cl.facts), encoding="utf-8")
        out = _bme(["recall", str(chat), "--queries", str(queries), "--no-reinforce"], env, "recall")
        run.blocks[cl.name] = [json.loads(line)["text"] for line in out.splitlines() if line.strip()]
    run.recall_seconds = time.perf_counter() - start
    return run


# ------------------------------------------------------------------ totals

def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 3) if den else None


def totals(scores: list[ChatScore]) -> dict:
    """Pooled (micro-averaged) numbers over a group of chats."""
    out: dict = {"chats": len(scores)}
    for kind in ENTITY_TYPES:
        es = [s.entities[kind] for s in scores]
        found = sum(len(e.found) for e in es)
        main = sum(e.labels_main for e in es)
        out[kind] = {
            "precision": _ratio(found, sum(e.nodes for e in es)),
            "recall": _ratio(found, sum(e.labels for e in es)),
            "recall_main": _ratio(main - sum(e.missed_main for e in es), main),
            "labels": sum(e.labels for e in es), "nodes": sum(e.nodes for e in es), "found": found}
    facts = sum(len(s.facts_graph) for s in scores)
    out["facts"] = facts
    out["fact_coverage_graph"] = _ratio(sum(sum(s.facts_graph) for s in scores), facts)
    out["fact_coverage_recall"] = _ratio(sum(sum(s.facts_recall) for s in scores), facts)
    out["junk_nodes"] = sum(s.junk_count for s in scores)
    out["junk_entities"] = sum(len([f for e in s.entities.values() for f in e.false_positives
                                    if f.endswith("[junk]")]) for s in scores)
    out["leaks"] = sum(len(s.leaks) for s in scores)
    out["active_nodes"] = sum(s.active_nodes for s in scores)
    return out


@dataclass
class Report:
    """Per-chat scores, totals per split and over everything, and timings."""

    scores: list[ChatScore]
    totals: dict[str, dict]
    seconds: dict[str, float]
    embedder: str

    def as_json(self) -> dict:
        """Plain data, including each chat's failures and the derived ratios."""
        chats = []
        for s in self.scores:
            d = asdict(s)
            d["junk_count"] = s.junk_count
            for kind, e in s.entities.items():
                d["entities"][kind].update(precision=e.precision, recall=e.recall,
                                           recall_main=e.recall_main)
            chats.append(d)
        return {"embedder": self.embedder, "seconds": self.seconds, "totals": self.totals,
                "chats": chats}


def measure(splits: list[str] | None = None, names: list[str] | None = None,
            embedder: str = "use-m3", keep: Path | None = None) -> Report:
    """Run bme on the chosen labelled chats and score them."""
    chats = [c for c in load_manifest(MANIFEST, splits) if not names or c.name in names]
    if not chats:
        raise SystemExit("no labelled chat matches the chosen splits and names")
    with tempfile.TemporaryDirectory(prefix="bme-labelled-") as tmp:
        root = keep or Path(tmp)
        run = run_bme(chats, root, embedder)
    scores = [score_chat(c, run.graphs[c.name], run.blocks[c.name]) for c in chats]
    groups = {split: [s for s in scores if s.split == split] for split in dict.fromkeys(s.split for s in scores)}
    all_totals = {split: totals(group) for split, group in groups.items()}
    labelled = [s for s in scores if s.split != "samples"]
    if labelled and len(groups) > 1:
        all_totals["dev+heldout"] = totals(labelled)
    seconds = {"ingest": round(run.ingest_seconds, 1), "recall": round(run.recall_seconds, 1)}
    return Report(scores, all_totals, seconds, embedder)


# ------------------------------------------------------------------ printing

def _f(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def _row(name: str, lang: str, t: dict) -> str:
    c, p = t["characters"], t["places"]
    return (f"{name:<22} {lang:<3} {_f(c['precision'])} {_f(c['recall'])} {_f(c['recall_main'])}  "
            f"{_f(p['precision'])} {_f(p['recall'])} {_f(p['recall_main'])}  {t['junk_nodes']:>4} "
            f"{t['leaks']:>5}  {_f(t['fact_coverage_graph'])} {_f(t['fact_coverage_recall'])}")


def format_table(report: Report, failures: bool = True, heldout_failures: bool = False) -> str:
    """Per-chat rows, totals per split, then (optionally) what each chat got wrong; never what
    a held-out chat got wrong unless asked, so that no one working on the extractor reads it
    by accident (a failing test prints this table)."""
    head = (f"{'chat':<22} {'la':<3} {'charP':>5} {'charR':>5} {'R-maj':>5}  {'plcP':>5} {'plcR':>5} "
            f"{'R-maj':>5}  {'junk':>4} {'leaks':>5}  {'factG':>5} {'factR':>5}")
    lines = [head, "-" * len(head)]
    for split, group_total in report.totals.items():
        for s in (s for s in report.scores if s.split == split):
            lines.append(_row(s.name, s.language, totals([s])))
        lines.append(_row(f"= {split} ({group_total['chats']})", "", group_total))
        lines.append("")
    lines.append(f"embedder {report.embedder}; ingest {report.seconds['ingest']} s, "
                 f"recall {report.seconds['recall']} s")
    if failures:
        lines += ["", *(_failures(s) if s.split != "heldout" or heldout_failures else
                        f"## {s.name} ({s.split}): not listed (--heldout-failures lists them)"
                        for s in report.scores)]
    return "\n".join(lines)


def _failures(s: ChatScore) -> str:
    out = [f"## {s.name} ({s.split})"]
    for kind, e in s.entities.items():
        if e.missed:
            out.append(f"  {kind} missed: {', '.join(e.missed)}")
        if e.false_positives or e.duplicates:
            out.append(f"  {kind} wrong: {', '.join(e.false_positives + e.duplicates)}")
    for node_type, items in s.junk_nodes.items():
        out += [f"  junk {node_type}: {item}" for item in items]
    if s.leaks:
        out.append(f"  leaked: {' | '.join(s.leaks)}")
    out += [f"  fact not in graph: {f}" for f in s.missed_facts_graph]
    out += [f"  fact not recalled: {f}" for f in s.missed_facts_recall]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command line: measure and print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", nargs="+", choices=("dev", "heldout", "samples"), help="default: all")
    ap.add_argument("--chat", nargs="+", metavar="NAME", help="only these chats")
    ap.add_argument("--format", choices=("table", "json"), default="table")
    ap.add_argument("--embedder", choices=("use-m3", "hash"), default="use-m3",
                    help="offline embedder (default: bme's default, use-m3)")
    ap.add_argument("--keep", type=Path, help="run in this (new) folder and keep the graphs")
    ap.add_argument("--no-failures", action="store_true", help="table only, no per-chat failures")
    ap.add_argument("--heldout-failures", action="store_true",
                    help="also list what each held-out chat got wrong (not for the extractor's authors)")
    args = ap.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=False)
    report = measure(args.split, args.chat, args.embedder, args.keep)
    if args.format == "json":
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=1))
    else:
        print(format_table(report, failures=not args.no_failures, heldout_failures=args.heldout_failures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
