"""`bme show`: what bme reads of a chat's messages (the story text), next to the file's; with
`--timeline` (or `--tree`, `--type`, `--who`, `--since`) the memory's timeline, and with a
NODE_ID one node in full (the views in render/views.py)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import UsageError
from .common import ChatArg, GraphOpt, SkipOpt, app, check_format, handled, runtime

if TYPE_CHECKING:
    from ..chat import Chat
    from ..graph.model import Graph

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
        _show_memory(loaded, chat, graph, node_id=node_id, tree=tree, type_id=type_id, who=who, since=since, fmt=fmt)
        return
    seqs = None if message is None else message_range(message, len(loaded.messages))
    views = workflow.message_views(loaded, settings, seqs)
    if fmt == "json":
        render.write_json({"chat": chat.name, "messages": [v.as_json(raw=raw) for v in views]})
    elif seqs is None:
        render.out().print(render.messages_table(f"{chat.name}: the story text bme reads", views))
    else:
        render.write_text("\n\n".join(render.message_text(v, raw=raw) for v in views))


def _show_memory(chat: Chat, chat_path: Path, graph_path: Path | None, *, node_id: str | None, tree: bool,
                 type_id: str | None, who: str | None, since: int | None, fmt: str) -> None:
    """`bme show CHAT --timeline|NODE_ID`: read the graph and print the timeline or one node."""
    from .. import render, workflow
    from ..graph import store
    from ..graph.model import now_ms
    from ..memory import timeline as tl
    from ..render.views import timeline_table, timeline_tree
    path = workflow.graph_path_for(chat_path, graph_path)
    g = store.load_graph(path, now_ms())
    if g is None:
        raise UsageError(f"{path}: no graph yet", "run `bme ingest` on the chat first")
    if node_id is not None:
        _show_node(chat, g, node_id, fmt)
        return
    msgs = chat.messages

    def date_of(seq: int) -> str | None:
        m = msgs[seq] if 0 <= seq < len(msgs) else None
        return m.send_date.strftime("%Y-%m-%d") if m is not None and m.send_date else None

    wanted = None if type_id == "all" else (type_id or "event")
    rows = tl.timeline(g, date_of, type_id=wanted, who=who, since=since)
    title = f"{chat_path.name}: {wanted or 'every'} memory in story order ({len(rows)})"
    if fmt == "json":
        render.write_json({"chat": chat_path.name, "type": wanted or "all", "nodes": [r.as_json() for r in rows]})
    else:
        render.out().print(timeline_tree(title, rows) if tree else timeline_table(title, rows))


def _show_node(chat: Chat, g: Graph, node_id: str, fmt: str) -> None:
    """`bme show CHAT NODE_ID`: one node in full, with the messages it came from."""
    from .. import render
    from ..memory import edits, timeline as tl
    from ..render.views import node_lines
    node = edits.find_node(g, node_id)
    lo, hi = node.seq_range[0], node.seq_end
    sources = [{"seq": m.seq, "speaker": m.name or m.role, "text": m.text} for m in chat.messages[max(0, lo):hi + 1]]
    detail = tl.node_detail(g, node, sources)
    if fmt == "json":
        render.write_json(detail)
    else:
        for piece in node_lines(detail):
            render.out().print(piece)
