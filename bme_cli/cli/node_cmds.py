"""`bme node ...`: a user's own fixes to the memory (pin, archive, edit, add, delete) that stick.

Each command opens the graph under the lock, makes one change through memory/edits.py,
saves atomically and says what it did in one stderr line; see docs/inspect.md.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Iterator, Optional

import typer

from ..errors import ProviderError, UsageError
from .common import ChatArg, GraphOpt, WaitOpt, app, handled, runtime

if TYPE_CHECKING:
    from .. import workflow
    from ..graph.model import Graph, Node
    from ..graph.schema import Schema

node_app = typer.Typer(name="node", no_args_is_help=True, rich_markup_mode=None,
                       help="Fix the memory by hand: pin, unpin, archive, restore, edit, add, delete nodes.")
app.add_typer(node_app, name="node")

IdsArg = Annotated[list[str], typer.Argument(help="node ids (or unique prefixes of 4+ characters)")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", "-s", metavar="FIELD=VALUE", help="set a field (repeatable; an empty value removes it)")]


@contextmanager
def _editing(ctx: typer.Context, chat: Path, graph: Path | None, wait: float, *,
             need_graph: bool = True) -> Iterator[tuple[workflow.ChatGraph, Schema]]:
    """The chat's graph under the lock and the schema; saved when the block ends cleanly."""
    from .. import render, workflow
    settings = runtime(ctx).load_settings()
    schema = workflow.load_schema(settings.memory.node_type_schema)
    with workflow.open_chat_graph(chat, graph_override=graph, write=True, lock_wait=wait,
                                  warn=render.notice, settings=settings) as cg:
        if need_graph and not cg.existed:
            raise UsageError(f"{cg.graph_path}: no graph yet", "run `bme ingest` on the chat first")
        yield cg, schema
        if cg.changed:
            cg.save(cg.graph)


def _describe(node: Node) -> str:
    label = " ".join(node.label().split())
    return f"{node.type} {node.id} ({label[:50] + '…' if len(label) > 51 else label})"


def _each(ctx: typer.Context, chat: Path, ids: list[str], graph: Path | None, wait: float,
          verb: str, step: Callable[[Graph, str, int], Node]) -> None:
    from .. import render
    from ..graph.model import now_ms
    now = now_ms()
    with _editing(ctx, chat, graph, wait) as (cg, _):
        done = [step(cg.graph, node_id, now) for node_id in ids]
    for node in done:
        render.notice(f"{verb} {_describe(node)}")


# (command, past tense, memory.edits function, help): four commands of the same shape
_SIMPLE = (("pin", "pinned", "pin", "Pin nodes: always in Core, never changed, merged, compressed or forgotten by bme."),
           ("unpin", "unpinned", "unpin", "Take the pin off nodes (a node you edited or added stays protected)."),
           ("archive", "archived", "archive", "Archive nodes for good: out of recall, and re-ingest never brings them back."),
           ("restore", "restored", "restore", "Bring archived or forgotten nodes back, with the edges archiving took away."))


def _simple_command(name: str, verb: str, step: str, help_text: str) -> None:
    @node_app.command(name, help=help_text)
    @handled
    def command(ctx: typer.Context, chat: ChatArg, ids: IdsArg, graph: GraphOpt = None, wait: WaitOpt = 0.0) -> None:
        from ..memory import edits
        _each(ctx, chat, ids, graph, wait, verb, getattr(edits, step))


for _spec in _SIMPLE:
    _simple_command(*_spec)


def parse_sets(values: list[str] | None) -> dict[str, str | None]:
    """`--set k=v` options as fields; `k=` removes the field."""
    out: dict[str, str | None] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: write FIELD=VALUE, e.g. --set state=wounded")
        out[key.strip()] = value if value.strip() else None
    return out


@node_app.command("edit")
@handled
def edit_cmd(
    ctx: typer.Context,
    chat: ChatArg,
    node_id: Annotated[str, typer.Argument(help="the node's id (or a unique prefix)")],
    sets: SetOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="with $EDITOR: edit JSON instead of TOML")] = False,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Change a node's fields (--set FIELD=VALUE, or $EDITOR on them); bme never overwrites them."""
    from .. import render
    from ..graph.model import now_ms
    from ..memory import edits
    from . import editor
    if sets is None:  # read the node first, edit outside the lock (an editor may stay open for long)
        with _reading(chat, graph, now_ms()) as g:
            node = edits.find_node(g, node_id)
            changes = editor.edit_fields(node.fields, as_json=as_json, title=_describe(node))
    else:
        changes = parse_sets(sets)
    now = now_ms()   # the edit is made when the editor closes, not when it opened
    with _editing(ctx, chat, graph, wait) as (cg, schema):
        node, diff = edits.edit(cg.graph, node_id, changes, schema, now)
        cg.changed = bool(diff)
        if diff:
            _embed(ctx, cg.graph, schema, [node])
    if not diff:
        render.notice(f"no change to {_describe(node)}")
        return
    render.notice(f"edited {_describe(node)}: {', '.join(diff)}")


@contextmanager
def _reading(chat: Path, graph: Path | None, now: int) -> Iterator[Graph]:
    from .. import workflow
    from ..graph import store
    path = workflow.graph_path_for(chat, graph)
    g = store.load_graph(path, now)
    if g is None:
        raise UsageError(f"{path}: no graph yet", "run `bme ingest` on the chat first")
    yield g


@node_app.command("add")
@handled
def add_cmd(
    ctx: typer.Context,
    chat: ChatArg,
    type_id: Annotated[str, typer.Argument(metavar="TYPE", help="node type: event, character, location, rule, thread, synopsis, reflection")],
    sets: SetOpt = None,
    seq: Annotated[Optional[int], typer.Option("--seq", min=0, help="the message it belongs to (default: the last)")] = None,
    importance: Annotated[float, typer.Option("--importance", min=0, max=10, help="0-10")] = 5.0,
    pin: Annotated[bool, typer.Option("--pin", help="also pin it (always in Core)")] = False,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Add a memory you write yourself (prints its id); bme keeps it as you wrote it."""
    from .. import render
    from ..graph.model import now_ms
    from ..memory import edits
    fields = {k: v for k, v in parse_sets(sets).items() if v is not None}
    now = now_ms()
    with _editing(ctx, chat, graph, wait, need_graph=False) as (cg, schema):
        at = seq if seq is not None else max(0, len(cg.chat.messages) - 1)
        node = edits.add(cg.graph, type_id, fields, schema, now, seq=at, importance=importance)
        if pin:
            edits.pin(cg.graph, node.id, now)
        _embed(ctx, cg.graph, schema, [node])
    render.write_text(node.id)
    render.notice(f"added {_describe(node)}{' (pinned)' if pin else ''}")


@node_app.command("delete")
@handled
def delete_cmd(
    ctx: typer.Context,
    chat: ChatArg,
    ids: IdsArg,
    force: Annotated[bool, typer.Option("--force", help="really delete (the graph is kept as <sidecar>.bak first)")] = False,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Delete nodes and their edges for good (archive is the undoable way); needs --force."""
    from .. import render
    from ..graph import store
    from ..graph.model import now_ms
    from ..memory import edits
    if not force:
        raise UsageError("delete removes nodes for good; add --force (a backup is kept), "
                         "or use `bme node archive` to hide them undoably")
    now = now_ms()
    with _editing(ctx, chat, graph, wait) as (cg, _):
        done = [edits.delete(cg.graph, node_id, now) for node_id in ids]
        backup = store.replace_with_backup(cg.graph_path, cg.graph)
        cg.changed = False  # saved just now, beside its backup
    for node in done:
        render.notice(f"deleted {_describe(node)}")
    render.notice(f"the graph before the delete is kept in {backup}")


def _embed(ctx: typer.Context, graph: Graph, schema: Schema, nodes: list[Node]) -> None:
    """Embed changed nodes with the graph's model, when that is the configured one (else later)."""
    from .. import render
    from ..memory.embed import embed_nodes
    if graph.meta.embedding_model is None:
        return  # nothing embedded yet: ingest embeds every node at once
    rt = runtime(ctx)
    embedder = rt.providers(rt.load_settings(), quiet=True).embedder
    if embedder.model_id != graph.meta.embedding_model:
        render.notice(f"not embedded: the graph's vectors are {graph.meta.embedding_model}'s; "
                      "`bme reembed` or the next ingest embeds it")
        return
    try:
        embed_nodes(nodes, graph, schema, embedder)
    except ProviderError as e:  # the edit is worth more than its vector: save it unembedded
        render.notice(f"not embedded ({e}); the next ingest or `bme reembed` embeds it")
