#!/usr/bin/env python3
"""Build the labelled chats (`NAME.jsonl`) from their readable sources (`src/NAME.chat`).

The sources hold only what a person writes: who speaks, what `mes` says, swipes, reasoning,
time jumps. This script adds what SillyTavern itself would have written around them
(send_date in ST's forms, gen_started/gen_finished, extra.api/model, swipes/swipe_info,
force_avatar, original_avatar and gen_id in groups), with a seeded RNG so the bytes never
change, and writes the file as ST does: compact JSON with non-ASCII as is, one object a
line, joined with `\\n`, no trailing newline.

    python tests/data/labelled/build_chats.py           # rebuild every chat
    python tests/data/labelled/build_chats.py --check   # exit 1 if a .jsonl is stale

Source format: `%key value` directives before the first message (`%header <json>` or
`%noheader`, `%start YYYY-MM-DD HH:MM`, `%user NAME`, `%avatar PATH`, `%model API MODEL`,
`%seed N`, `%group`, `%card NAME = FILE`), then messages, each opened by a line
`== NAME flag flag ...` and followed by its text. Flags: `user`, `narrator` (a /sys
message), `hidden` (is_system true), `greeting`, `first` (old group greeting: is_group,
is_name, humanized date), `epoch` (send_date as epoch ms), `sysfalse` (explicit
`is_system: false`), `+30m` / `+2h` / `+1d` (time jump), `at=YYYY-MM-DD_HH:MM`,
`model=API/MODEL` (from here on), `swipe=N` (the swipe shown), `noswipes`. Inside a message,
a line `-- swipe` starts another swipe and `-- reasoning` the reasoning ST parsed out
(`extra.reasoning`). Text lines are joined with `\\n`; blank lines at a block's ends go.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
SRC = HERE / "src"
MONTHS = ("January February March April May June July August September October "
          "November December").split()


@dataclass
class Block:
    """One message as written in the source."""

    name: str
    flags: list[str]
    swipes: list[list[str]] = field(default_factory=lambda: [[]])
    reasoning: list[str] | None = None


@dataclass
class Source:
    """A parsed source file."""

    directives: dict[str, str]
    cards: dict[str, str]
    blocks: list[Block]


def parse_source(text: str) -> Source:
    """Split a source into directives and message blocks."""
    directives: dict[str, str] = {}
    cards: dict[str, str] = {}
    blocks: list[Block] = []
    target: list[str] | None = None
    for line in text.split("\n"):
        if line.startswith("== "):
            head = line[3:].split(" ")
            flags = [f for f in head if _is_flag(f)]
            name = " ".join(f for f in head if not _is_flag(f))
            blocks.append(Block(name, flags))
            target = blocks[-1].swipes[0]
        elif blocks and line == "-- swipe":
            blocks[-1].swipes.append([])
            target = blocks[-1].swipes[-1]
        elif blocks and line == "-- reasoning":
            blocks[-1].reasoning = []
            target = blocks[-1].reasoning
        elif not blocks and line.startswith("%"):
            key, _, value = line[1:].partition(" ")
            if key == "card":
                who, _, file = value.partition(" = ")
                cards[who] = file
            else:
                directives[key] = value
        elif target is not None:
            target.append(line)
    return Source(directives, cards, blocks)


_FLAG = re.compile(r"^(user|narrator|hidden|greeting|first|epoch|sysfalse|noswipes|[+]\d+[mhd]"
                   r"|at=\S+|model=\S+|swipe=\d+)$")


def _is_flag(word: str) -> bool:
    return bool(_FLAG.match(word))


def _text(lines: list[str]) -> str:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return "\n".join(lines)


def month_form(t: datetime) -> str:
    """ST's getMessageTimeStamp form: `March 25, 2025 9:19pm`."""
    hour = t.hour % 12 or 12
    return f"{MONTHS[t.month - 1]} {t.day}, {t.year} {hour}:{t.minute:02d}{'am' if t.hour < 12 else 'pm'}"


def humanized(t: datetime) -> str:
    """The old client humanizedDateTime form: `2025-3-16@01h36m52s`."""
    return f"{t.year}-{t.month}-{t.day}@{t.hour:02d}h{t.minute:02d}m{t.second:02d}s"


def iso_ms(t: datetime) -> str:
    """gen_started / gen_finished: ISO 8601 UTC with milliseconds."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class Builder:
    """Turns parsed blocks into SillyTavern message objects."""

    def __init__(self, src: Source):
        d = src.directives
        self.src = src
        self.rng = random.Random(int(d.get("seed", "1")))
        self.now = datetime.strptime(d.get("start", "2025-05-01 20:00"), "%Y-%m-%d %H:%M").replace(
            second=self.rng.randrange(60), tzinfo=timezone.utc)
        self.api, _, self.model = d.get("model", "custom deepseek-ai/DeepSeek-V3").partition(" ")
        self.user = d.get("user", "User")
        self.avatar = d.get("avatar", "User Avatars/user-default.png")
        self.group = "group" in d
        self.gen_id = int(self.now.timestamp() * 1000)

    def _advance(self, flags: list[str]) -> None:
        for f in flags:
            if f[0] == "+":
                unit = {"m": "minutes", "h": "hours", "d": "days"}[f[-1]]
                self.now += timedelta(**{unit: int(f[1:-1])})
            elif f.startswith("at="):
                self.now = datetime.strptime(f[3:], "%Y-%m-%d_%H:%M").replace(tzinfo=timezone.utc)
            elif f.startswith("model="):
                self.api, _, self.model = f[6:].partition("/")
        self.now += timedelta(seconds=self.rng.randrange(50, 330))

    def _date(self, flags: list[str]) -> str | int:
        if "epoch" in flags:
            return int(self.now.timestamp() * 1000) + self.rng.randrange(1000)
        if "first" in flags:
            return humanized(self.now)
        return month_form(self.now)

    def message(self, block: Block) -> dict:
        """One message line, with the keys in the order SillyTavern writes them."""
        flags = block.flags
        self._advance(flags)
        mes_swipes = [_text(s) for s in block.swipes]
        if "user" in flags:
            return {"name": block.name, "is_user": True, "is_system": "hidden" in flags,
                    "send_date": self._date(flags), "mes": mes_swipes[0],
                    "extra": {"isSmallSys": False}, "force_avatar": self.avatar}
        if "narrator" in flags:
            return {"name": block.name, "is_user": False, "is_system": False,
                    "send_date": self._date(flags), "mes": mes_swipes[0],
                    "force_avatar": "img/five.png", "extra": {"type": "narrator", "bias": None}}
        return self._reply(block, mes_swipes)

    def _reply(self, block: Block, swipes: list[str]) -> dict:
        flags = block.flags
        pick = next((int(f[6:]) for f in flags if f.startswith("swipe=")), 0)
        msg: dict = {"name": block.name, "is_user": False}
        if "hidden" in flags or "sysfalse" in flags or self.rng.random() < 0.1:
            msg["is_system"] = "hidden" in flags
        if "first" in flags:
            msg["is_name"] = True
        msg["send_date"] = self._date(flags)
        msg["mes"] = swipes[pick]
        if "greeting" in flags or "first" in flags:
            msg["extra"] = {}
            if len(swipes) > 1:
                msg.update(swipe_id=pick, swipes=swipes, swipe_info=[])
            return self._group_keys(msg, block.name, first="first" in flags)
        extra: dict = {"api": self.api, "model": self.model}
        if block.reasoning is not None:
            extra["reasoning"] = _text(block.reasoning)
            extra["reasoning_duration"] = self.rng.randrange(4000, 40000)
        if self.group:
            self.gen_id += self.rng.randrange(60_000, 400_000)
            extra["gen_id"] = self.gen_id
        msg["extra"] = extra
        self._group_keys(msg, block.name)
        if "noswipes" not in flags:
            finished = self.now
            started = finished - timedelta(milliseconds=self.rng.randrange(3000, 45000))
            msg.update(title="", gen_started=iso_ms(started), gen_finished=iso_ms(finished))
            info = {"send_date": msg["send_date"], "gen_started": msg["gen_started"],
                    "gen_finished": msg["gen_finished"], "extra": dict(extra)}
            msg.update(swipe_id=pick, swipes=swipes, swipe_info=[info for _ in swipes])
        return msg

    def _group_keys(self, msg: dict, name: str, first: bool = False) -> dict:
        if self.group:
            card = self.src.cards.get(name, f"{name}.png")
            if first:
                msg["is_group"] = True
            msg["force_avatar"] = f"/thumbnail?type=avatar&file={quote(card)}"
            msg["original_avatar"] = card
        return msg


def build(path: Path) -> str:
    """The .jsonl text of one source file."""
    src = parse_source(path.read_text(encoding="utf-8"))
    builder = Builder(src)
    lines = []
    if "noheader" not in src.directives:
        lines.append(json.loads(src.directives["header"]))
    lines.extend(builder.message(b) for b in src.blocks)
    return "\n".join(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) for obj in lines)


def main(argv: list[str] | None = None) -> int:
    """Rebuild (or with --check, verify) every chat from src/."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report chats whose .jsonl is stale")
    args = ap.parse_args(argv)
    stale = 0
    for path in sorted(SRC.glob("*.chat")):
        out = HERE / f"{path.stem}.jsonl"
        text = build(path)
        if args.check:
            if not out.exists() or out.read_text(encoding="utf-8") != text:
                print(f"stale: {out.name}", file=sys.stderr)
                stale += 1
        else:
            out.write_text(text, encoding="utf-8")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
