"""What story text costs: `read_chat` on role-play exports full of markup, and on hostile `mes`.

1. Realistic: the DeepSeek-style exports of tests/data (tags, tables, HTML panels, plans)
   repeated into one chat of --messages messages; CPU time of `read_chat`, and of the same
   read with every message's text taken as it is (the cleaning's share of the read).
2. Hostile: for each pattern, one `mes` of a megabyte of it; CPU time of cleaning it.

CPU time (time.process_time), best of --runs, because the machine is shared.

    python benchmarks/bench_story.py
    python benchmarks/bench_story.py --messages 20000 --runs 5
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from unittest import mock

from bme_cli import chat as chat_mod
from bme_cli.story import StoryReader

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
HOSTILE = ["<think>", "</think>", "<thinking>", "<content>", "<status>", "<div>", "<div><i>", "<x>",
           "<p>x</p>", "<", "{{", "(OOC", "a: b\n", "<content><think>"]


def best(runs: int, fn) -> float:  # noqa: ANN001 - a callable
    """The least CPU time of `runs` calls of fn."""
    times = []
    for _ in range(runs):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return min(times)


def realistic(messages: int, runs: int) -> None:
    """read_chat on a big export, with and without the cleaning."""
    header, *body = (DATA / "deepseek_zh.jsonl").read_text(encoding="utf-8").split("\n")
    body += (DATA / "deepseek_en.jsonl").read_text(encoding="utf-8").split("\n")[1:]
    lines = (body * (messages // len(body) + 1))[:messages]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "export.jsonl"
        path.write_text("\n".join([header, *lines]), encoding="utf-8")
        size = path.stat().st_size
        chat = chat_mod.read_chat(path)
        raw = sum(len(m.raw) for m in chat.messages)
        story = sum(len(m.text) for m in chat.messages)
        with_story = best(runs, lambda: chat_mod.read_chat(path))
        with mock.patch.object(chat_mod.StoryReader, "clean", lambda self, raw, **kw: raw):
            without = best(runs, lambda: chat_mod.read_chat(path))
    print(f"{messages} messages, {size / 1e6:.1f} MB, story text {story / raw:.0%} of mes")
    print(f"read_chat: {with_story:.2f} s CPU with story text, {without:.2f} s without "
          f"({(with_story - without) / messages * 1e6:.0f} us a message)")


def hostile(runs: int) -> None:
    """CPU time of cleaning one megabyte of each pattern."""
    reader = StoryReader(user_name="Kai", character_name="Mira")
    for pattern in HOSTILE:
        raw = "before " + pattern * (1_000_000 // len(pattern)) + " after"
        print(f"  {pattern!r:20} {best(runs, lambda: reader.clean(raw)):.2f} s CPU")


def main() -> None:
    """Run both parts and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    realistic(args.messages, args.runs)
    print("one 1 MB mes of:")
    hostile(args.runs)


if __name__ == "__main__":
    main()
