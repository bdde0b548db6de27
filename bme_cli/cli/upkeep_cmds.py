"""Graph upkeep on demand: compress, sleep (and restore), synopsis, reflect."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Callable, Iterator, Optional

import typer

from ..errors import UsageError
from .common import (ChatArg, DryRunOpt, FormatOpt, GraphOpt, WaitOpt, app, check_format, handled,
                     runtime)

if TYPE_CHECKING:
    from .. import workflow
    from ..graph.model import Graph, Node
    from ..memory.context import MemoryContext


@contextmanager
def _session(ctx: typer.Context, chat: Path, graph: Path | None, wait: float,
             dry_run: bool) -> Iterator[tuple[workflow.ChatGraph, MemoryContext]]:
    """The chat, its existing graph (an error if none) and a pipeline context; saves on success
    unless dry_run."""
    from .. import render, workflow
    rt = runtime(ctx)
    settings = rt.load_settings()
    schema = workflow.load_schema(settings.memory.node_type_schema)
    with workflow.open_chat_graph(chat, graph_override=graph, write=not dry_run, lock_wait=wait,
                                  warn=render.notice, settings=settings) as cg:
        if not cg.existed:
            raise UsageError(f"{cg.graph_path}: no graph yet", "run `bme ingest` on the chat first")
        mctx = workflow.make_context(settings, rt.providers(settings), schema, cg.chat)
        yield cg, mctx
        if not dry_run and cg.changed:
            cg.save(cg.graph)


def _last_seq(cg: workflow.ChatGraph) -> int:
    return max(cg.graph.last_processed_seq, len(cg.chat.messages) - 1)


def _generate(ctx: typer.Context, chat: Path, graph: Path | None, wait: float,
              step: Callable[..., Node | None], why_not: Callable[..., str]) -> Node | None:
    """Run a node-making upkeep step (synopsis, reflection) and save; None (said on stderr, exit 0)
    when it stored nothing, with `why_not(graph, ctx)`'s reason."""
    from .. import render
    with _session(ctx, chat, graph, wait, False) as (cg, mctx):
        node = step(cg.graph, mctx, current_seq=_last_seq(cg))
        cg.changed = node is not None
        if node is None:
            render.notice(f"{chat}: nothing stored: {why_not(cg.graph, mctx, _last_seq(cg))}")
    return node


def _synopsis_skipped(graph: Graph, mctx, current_seq: int) -> str:  # noqa: ANN001 - MemoryContext
    from ..memory.synopsis import build_synopsis_input, current_synopsis, is_protected
    current = current_synopsis(graph)
    if current is not None and is_protected(current):
        return "the synopsis was written or pinned by you, and bme never rewrites it"
    if build_synopsis_input(graph, mctx, current_seq) is None:
        return "not enough events for a synopsis yet (it needs at least 3)"
    return "the model's synopsis was empty"


def _reflection_skipped(graph: Graph, mctx, current_seq: int) -> str:  # noqa: ANN001 - MemoryContext
    from ..memory.reflect import build_reflect_input
    if "reflection" not in mctx.schema:
        return "the node type schema has no reflection type"
    if build_reflect_input(graph, mctx) is None:
        return "not enough recent events for a reflection yet (it needs at least 2)"
    return "the model had no insight to add (its reply was empty)"


@app.command()
@handled
def compress(
    ctx: typer.Context,
    chat: ChatArg,
    type_id: Annotated[Optional[str], typer.Option("--type", "-t", help="only this node type (default: every hierarchical type)")] = None,
    force: Annotated[bool, typer.Option("--force", help="compress down to fanIn, keeping no recent leaves")] = False,
    dry_run: DryRunOpt = False,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
    fmt: FormatOpt = "table",
) -> None:
    """Merge old nodes into higher-level summaries (ST-BME's hierarchical compression)."""
    from .. import render
    from ..memory.compress import compress_all
    check_format(fmt, ("table", "json"))
    with _session(ctx, chat, graph, wait, dry_run) as (cg, mctx):
        report = compress_all(cg.graph, mctx, force=force, type_id=type_id, dry_run=dry_run)
        cg.changed = report.changed
    if fmt == "json":
        render.write_json(report.as_dict())
        return
    if report.chunks:
        render.out().print(render.compress_table(report, dry_run=dry_run))
    for line in render.compress_notes(report, dry_run=dry_run):
        render.notice(line)


@app.command()
@handled
def sleep(
    ctx: typer.Context,
    chat: ChatArg,
    threshold: Annotated[Optional[float], typer.Option("--threshold", min=0.0, max=1.0, help="forget below this retention (default: forget_threshold)")] = None,
    age: Annotated[Optional[str], typer.Option("--age", help="measure age in 'story' time (messages) or 'wall' clock")] = None,
    dry_run: DryRunOpt = False,
    restore_ids: Annotated[Optional[list[str]], typer.Option("--restore-id", help="bring back this forgotten node (repeatable)")] = None,
    restore_all: Annotated[bool, typer.Option("--restore", help="bring back every forgotten node")] = False,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
    fmt: FormatOpt = "table",
) -> None:
    """Forget (archive) memories whose retention fell below the threshold; --restore brings them back."""
    from .. import render
    from ..memory.sleep import sleep_cycle
    check_format(fmt, ("table", "json"))
    if age is not None and age not in ("story", "wall"):
        raise UsageError("--age must be story or wall")
    if restore_all or restore_ids:
        _restore(ctx, chat, graph, wait, dry_run, None if restore_all else list(restore_ids or []))
        return
    with _session(ctx, chat, graph, wait, dry_run) as (cg, mctx):
        report = sleep_cycle(cg.graph, mctx, threshold=threshold, age=age, current_seq=_last_seq(cg),
                             dry_run=dry_run)
        cg.changed = report.changed
    if fmt == "json":
        render.write_json(report.as_dict())
        return
    if report.items:
        render.out().print(render.sleep_table(report, dry_run=dry_run))
    render.notice(render.sleep_note(report, dry_run=dry_run))


def _restore(ctx: typer.Context, chat: Path, graph: Path | None, wait: float, dry_run: bool,
             ids: list[str] | None) -> None:
    """`bme sleep --restore[-id]`: bring back forgotten nodes (every one when ids is None), or
    with dry_run list those that would come back."""
    from .. import render
    from ..memory.sleep import forgotten_nodes, restore
    with _session(ctx, chat, graph, wait, dry_run) as (cg, mctx):
        if dry_run:
            forgotten = forgotten_nodes(cg.graph)
            if forgotten:
                render.write_text(render.forgotten_list(forgotten))
            render.notice(f"{len(forgotten)} forgotten node(s) would be restored; nothing was written")
            return
        count = restore(cg.graph, ids, new_id=mctx.new_id)
        cg.changed = count > 0
        render.notice(f"restored {count} forgotten node(s)")


@app.command()
@handled
def synopsis(
    ctx: typer.Context,
    chat: ChatArg,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Write or refresh the global synopsis ("previously on...") and print it."""
    from .. import render
    from ..memory.synopsis import generate_synopsis
    node = _generate(ctx, chat, graph, wait, generate_synopsis, _synopsis_skipped)
    if node is not None:
        render.write_text(str(node.fields.get("summary", "")))


@app.command()
@handled
def reflect(
    ctx: typer.Context,
    chat: ChatArg,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Distil a higher-level reflection from recent events and print it."""
    from .. import render
    from ..memory.reflect import generate_reflection
    node = _generate(ctx, chat, graph, wait, generate_reflection, _reflection_skipped)
    for key in ("insight", "trigger", "suggestion"):
        if node is not None and node.fields.get(key):
            render.write_text(f"{key}: {node.fields[key]}")
