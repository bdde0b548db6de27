"""`bme show`: what bme reads of a chat's messages (the story text), next to the file's; with
`--timeline` (or `--tree`, `--type`, `--who`, `--since`) the memory's timeline, and with a
NODE_ID one node in full (cli/memory_views.py)."""
from __future__ import annotations

import re
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from .common import ChatArg, GraphOpt, SkipOpt, app, check_format, handled, runtime

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
    node_id: Annotated[Optional[str], typer.Argument(help="a node id (or unique prefix): show that memory in full")] = None,
    timeline: Annotated[bool, typer.Option("--timeline", "-t", help="the memory's events in story order instead of the messages")] = False,
    tree: Annotated[bool, typer.Option("--tree", help="timeline with the compression levels as a tree")] = False,
    type_id: Annotated[Optional[str], typer.Option("--type", help="timeline of this node type (default event; 'all' for every type)")] = None,
    who: Annotated[Optional[str], typer.Option("--who", metavar="NAME", help="timeline: only what NAME took part in")] = None,
    since: Annotated[Optional[int], typer.Option("--since", metavar="SEQ", min=0, help="timeline: only from message SEQ on")] = None,
    graph: GraphOpt = None,
    message: Annotated[Optional[str], typer.Option("--message", "-m", help="a message number or range (3-7): print its story text")] = None,
    raw: Annotated[bool, typer.Option("--raw", help="also print the raw `mes` as the file holds it")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json")] = "text",
    skip_bad_lines: SkipOpt = False,
) -> None:
    """Show what bme reads of a chat's messages; --timeline: its memory in story order; NODE_ID: one memory."""
    check_format(fmt, ("text", "json"))
    settings = runtime(ctx).load_settings()
    from .. import render, workflow  # lazily: `bme --version` must not pay for them
    loaded = workflow.read_story_chat(chat, settings, skip_bad_lines=skip_bad_lines, warn=render.notice)
    if node_id is not None or timeline or tree or type_id or who or since is not None:
        if message is not None or raw:
            raise UsageError("--message and --raw show messages; leave them out with a node id or --timeline")
        from .memory_views import show_memory
        show_memory(loaded, chat, graph, node_id=node_id, tree=tree, type_id=type_id, who=who, since=since, fmt=fmt)
        return
    seqs = None if message is None else message_range(message, len(loaded.messages))
    views = workflow.message_views(loaded, settings, seqs)
    if fmt == "json":
        render.write_json({"chat": chat.name, "messages": [v.as_json(raw=raw) for v in views]})
    elif seqs is None:
        render.out().print(render.messages_table(f"{chat.name}: the story text bme reads", views))
    else:
        render.write_text("\n\n".join(render.message_text(v, raw=raw) for v in views))
