"""`bme show`: what bme reads of a chat's messages (the story text), next to the file's."""
from __future__ import annotations

import re
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from .common import ChatArg, SkipOpt, app, check_format, handled, runtime

_RANGE = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")


def message_range(text: str, count: int) -> range:
    """`--message 5` or `--message 3-7` as a range of seqs within a chat of `count` messages."""
    m = _RANGE.fullmatch(text)
    if m is None:
        raise UsageError(f"--message {text!r}: give a message number or a range such as 3-7")
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) is not None else first
    if last < first:
        raise UsageError(f"--message {text}: the range runs backwards")
    if first >= count:
        raise UsageError(f"--message {text}: the chat has {count} messages (#0-#{count - 1})"
                         if count else f"--message {text}: the chat has no messages")
    return range(first, min(last, count - 1) + 1)


@app.command()
@handled
def show(
    ctx: typer.Context,
    chat: ChatArg,
    message: Annotated[Optional[str], typer.Option("--message", "-m", help="a message number or range (3-7): print its story text")] = None,
    raw: Annotated[bool, typer.Option("--raw", help="also print the raw `mes` as the file holds it")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json")] = "text",
    skip_bad_lines: SkipOpt = False,
) -> None:
    """Show what bme reads of a chat: every message's story text, or one message in full."""
    check_format(fmt, ("text", "json"))
    settings = runtime(ctx).settings()
    from .. import render, workflow  # lazily: `bme --version` must not pay for them
    loaded = workflow.read_story_chat(chat, settings, skip_bad_lines=skip_bad_lines, warn=render.notice)
    seqs = None if message is None else message_range(message, len(loaded.messages))
    views = workflow.message_views(loaded, settings, seqs)
    if fmt == "json":
        render.write_json([v.as_json(raw=raw) for v in views])
    elif seqs is None:
        render.out().print(render.messages_table(f"{chat.name}: the story text bme reads", views))
    else:
        render.write_text("\n\n".join(render.message_text(v, raw=raw) for v in views))
