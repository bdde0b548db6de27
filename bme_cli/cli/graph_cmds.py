"""Commands that look at or move a graph: stats, export, import."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import BadInputError, UsageError
from .common import (ChatArg, FormatOpt, GraphOpt, SkipOpt, WaitOpt, app, check_format, handled,
                     one_graph, runtime)


@app.command()
@handled
def stats(
    ctx: typer.Context,
    chats: Annotated[list[str], typer.Argument(help="chat files, folders or globs")],
    graph: GraphOpt = None,
    fmt: FormatOpt = "table",
    tree: Annotated[bool, typer.Option("--tree", help="also show compression levels")] = False,
    skip_bad_lines: SkipOpt = False,
) -> None:
    """Show each chat's memory graph: messages, pending turns, nodes, edges, embeddings, Core size."""
    from .. import render, workflow
    check_format(fmt, ("table", "json"))
    paths = workflow.find_chats(chats)
    one_graph(paths, graph)
    settings = runtime(ctx).settings()
    schema = workflow.load_schema(settings.memory.node_type_schema)
    all_stats = [workflow.chat_stats(p, graph, schema, settings, skip_bad_lines=skip_bad_lines,
                                     warn=render.notice) for p in paths]
    if fmt == "json":
        data = [s.as_dict() for s in all_stats]
        render.write_json(data[0] if len(data) == 1 else data)
        return
    console = render.out()
    for s in all_stats:
        for table in render.stats_tables(s, tree=tree):
            console.print(table)
    if len(all_stats) > 1:
        console.print(render.stats_summary(all_stats))


@app.command("export")
@handled
def export_cmd(
    ctx: typer.Context,
    chat: ChatArg,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write here instead of stdout")] = None,
    with_embeddings: Annotated[bool, typer.Option("--with-embeddings", help="keep vectors (for moves between bme installs)")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="st-bme (the extension's import) or lorebook (SillyTavern World Info)")] = "st-bme",
    graph: GraphOpt = None,
) -> None:
    """Export the graph in ST-BME's format (pretty JSON, embeddings null), or as a SillyTavern lorebook."""
    from .. import render, workflow
    from ..graph import codec, store
    from ..memory.gaps import failed_batches
    gpath = workflow.graph_path_for(chat, graph)
    g = store.load_graph(gpath)
    if g is None and graph is None and not chat.exists():
        raise BadInputError(f"{chat}: no such file", "check the path and the file name")
    if g is None:
        raise UsageError(f"{gpath}: no graph yet", "run `bme ingest` on the chat first")
    check_format(fmt, ("st-bme", "lorebook"))
    if fmt == "lorebook":
        from .interop_cmds import export_lorebook
        export_lorebook(runtime(ctx).settings(), g, output)
        return
    text = codec.export_document(g, with_embeddings=with_embeddings)
    failed = failed_batches(g)
    if failed:  # the export cannot carry them: ST-BME will read lastProcessedSeq as "all processed"
        spans = ", ".join(r.span for r in failed[:6]) + (" …" if len(failed) > 6 else "")
        render.notice(f"{len(failed)} failed batch(es) ({spans}) are not in the export: ST-BME will count "
                      "their messages as processed (bme ingest --retry-failed first to extract them)")
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    store.atomic_write(output, [text.encode("utf-8")])
    render.notice(f"exported {len(g.nodes)} nodes and {len(g.edges)} edges to {output}")


@app.command("import")
@handled
def import_cmd(
    ctx: typer.Context,
    chat: ChatArg,
    source: Annotated[Path, typer.Argument(help="ST-BME export, v3 graph, bme sidecar, or a chat whose header holds st_bme_graph")],
    force: Annotated[bool, typer.Option("--force", help="replace a non-empty graph (the old one is kept as .bak)")] = False,
    embedding_model: Annotated[Optional[str], typer.Option("--embedding-model", metavar="NAME", help="the model that made the file's vectors (ST-BME files do not say): keeps them, tagged NAME")] = None,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Import a graph for a chat; everything is validated before anything is touched."""
    from .. import render, workflow
    if graph is None and not chat.exists():   # else a typo would leave a sidecar for no chat
        raise BadInputError(f"{chat}: no such file", "check the path, or name the graph file with --graph")
    rt = runtime(ctx)
    embedder = rt.providers(rt.settings(), quiet=True).embedder
    summary = workflow.import_graph(chat, source, graph_override=graph, force=force, lock_wait=wait,
                                    embedding_model=embedder.model_id, vectors_model=embedding_model)
    render.notice(summary)
