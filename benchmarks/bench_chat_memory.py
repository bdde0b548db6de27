"""Peak memory of `read_chat` on a ~100 MB SillyTavern chat: is the reader streaming?

Writes chats shaped like SillyTavern's own (header, alternating user/assistant lines with
swipes, swipe_info and extra) into a temp folder, then reads each one in a fresh subprocess
and reports:

* peak  - growth of the child's peak RSS (ru_maxrss) across `read_chat`, i.e. what reading
          costs on top of the interpreter and bme's imports;
* kept  - RSS still held right after the read (the returned Chat);
* text  - bytes of `mes` text in the file (UTF-8), the floor of what a Chat must keep.

Three kinds of text, because CPython stores a str at 1, 2 or 4 bytes per character
depending on its widest character: `ascii` (English), `cjk` (Chinese: 3 UTF-8 bytes, 2 in
memory) and `emoji` (English with one emoji per message: 1 UTF-8 byte, 4 in memory - the
worst case) - plus `short`: one-line replies with no swipes, where the per-message overhead
(the Message object, its date, its name) outweighs the text, and `tiny`: the adversarial
floor, lines like {"name":"Mira","mes":"Ok."} with no date, where that overhead is all.

    python benchmarks/bench_chat_memory.py                    # 100 MB, all three kinds
    python benchmarks/bench_chat_memory.py --size-mb 20 --kind ascii --keep
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

KINDS = ("ascii", "cjk", "emoji", "short", "tiny")
_WORDS = ("the caravan rolls on through dunes while Mira checks the map and Rowan "
          "counts coins beside a fire that smells of cedar and old rope under stars").split()
_HANZI = "商队穿过沙丘米拉查看地图罗文在篝火旁数着硬币夜空中星星闪烁远处传来驼铃声"
_EMOJI = ("🙂", "🔥", "🗺️", "⚔️", "🌙")
_STAMP = b"@STAMP@"

# Runs in the child: import first so their cost is in the baseline, then read and measure.
_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from bme_cli.chat import read_chat

def rss_kib():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() // 1024

base_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
base_rss = rss_kib()
started = time.perf_counter()
chat = read_chat(Path(sys.argv[1]))
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
shared = sum(m.raw is m.text for m in chat.messages)
print(json.dumps({"messages": len(chat.messages), "seconds": seconds,
                  "peak_kib": peak - base_peak, "kept_kib": rss_kib() - base_rss,
                  "raw_is_text": shared}))
"""


def _prose(rng: random.Random, kind: str, chars: int) -> str:
    """About `chars` characters of filler text in one of the three kinds."""
    if kind == "cjk":
        return "".join(rng.choice(_HANZI) for _ in range(chars // 2)) + "。"
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(_WORDS))
    text = " ".join(words).capitalize() + "."
    return text + " " + rng.choice(_EMOJI) if kind == "emoji" else text


def _line(rng: random.Random, kind: str, seq: int) -> dict:
    """One message line as SillyTavern writes it; assistant turns carry three swipes."""
    is_user = seq % 2 == 1
    stamp = _STAMP.decode()  # each written line gets its own date, as in a real chat
    if kind == "tiny":
        return {"name": "Rowan" if is_user else "Mira", "mes": rng.choice(("Ok.", "No.", "Hm."))}
    if kind == "short":
        return {"name": "Rowan" if is_user else "Mira", "is_user": is_user, "is_system": False,
                "send_date": stamp, "mes": _prose(rng, kind, rng.randint(5, 60)), "extra": {}}
    mes = _prose(rng, kind, rng.randint(300, 1800) if not is_user else rng.randint(60, 400))
    obj: dict = {"name": "Rowan" if is_user else "Mira", "is_user": is_user,
                 "is_system": False, "send_date": stamp, "mes": mes,
                 "extra": {"isSmallSys": False} if is_user else
                          {"api": "openai", "model": "gpt-4o", "token_count": len(mes) // 4}}
    if not is_user:
        swipes = [mes] + [_prose(rng, kind, len(mes)) for _ in range(2)]
        obj.update(swipe_id=0, swipes=swipes,
                   gen_started="2025-03-25T21:19:28.000Z", gen_finished="2025-03-25T21:19:41.000Z",
                   swipe_info=[{"send_date": stamp, "gen_started": None, "gen_finished": None,
                                "extra": dict(obj["extra"])} for _ in swipes])
    return obj


def write_chat(path: Path, kind: str, size_mb: float, seed: int = 7) -> tuple[int, int]:
    """Write a chat of at least `size_mb` MB; returns (file bytes, UTF-8 bytes of all `mes`)."""
    rng = random.Random(seed)
    # A pool of distinct lines, repeated: the reader parses every line afresh either way.
    pool = [_line(rng, kind, seq) for seq in range(400)]
    header = {"user_name": "Rowan", "character_name": "Mira", "create_date": "2025-03-25@21h19m28s",
              "chat_metadata": {"integrity": "0b7c6a3e-1111-4222-8333-944455556666"}}
    encoded = [json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode() for o in pool]
    mes_bytes = [len(o["mes"].encode()) for o in pool]
    target, written, text = int(size_mb * 1_000_000), 0, 0
    when, minute = datetime(2025, 3, 25, 21, 19), timedelta(minutes=1)
    with open(path, "wb") as fh:
        written += fh.write(json.dumps(header, separators=(",", ":")).encode())
        i = 0
        while written < target:
            when += minute  # ST's minute-precision stamp, e.g. "March 25, 2025 9:19pm"
            stamp = f"{when:%B} {when.day}, {when.year} {when.hour % 12 or 12}:{when:%M}"
            stamp += "pm" if when.hour >= 12 else "am"
            line = encoded[i % len(pool)].replace(_STAMP, stamp.encode())
            written += fh.write(b"\n" + line)
            text += mes_bytes[i % len(pool)]
            i += 1
    return written, text


def measure(path: Path) -> dict:
    """Read `path` in a fresh interpreter and return its measurements."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> None:
    """Generate, measure and print one table row per kind."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/bme-bench"))
    parser.add_argument("--kind", choices=(*KINDS, "all"), default="all")
    parser.add_argument("--keep", action="store_true", help="keep the generated chats")
    args = parser.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    mb = 1_000_000
    print(f"{'kind':6} {'file MB':>8} {'text MB':>8} {'messages':>9} {'peak MB':>8} "
          f"{'kept MB':>8} {'peak/file':>9} {'peak/text':>9} {'raw is text':>11} {'s':>5}")
    for kind in KINDS if args.kind == "all" else (args.kind,):
        path = args.dir / f"bench-{kind}.jsonl"
        size, text = write_chat(path, kind, args.size_mb)
        try:
            r = measure(path)
        finally:
            if not args.keep:
                path.unlink()
        peak, kept = r["peak_kib"] * 1024, r["kept_kib"] * 1024
        print(f"{kind:6} {size / mb:8.1f} {text / mb:8.1f} {r['messages']:9d} {peak / mb:8.1f} "
              f"{kept / mb:8.1f} {peak / size:9.2f} {peak / text:9.2f} "
              f"{r['raw_is_text']:>11d} {r['seconds']:5.1f}")


if __name__ == "__main__":
    main()
