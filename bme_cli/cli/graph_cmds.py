"""Commands that look at or move a graph: stats, export, import."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from ..errors import BadInputError, UsageError
from .common import (ChatArg, FormatOpt, GraphOpt, SkipOpt, WaitOpt, app, check_format, handled,
                     one_graph, runtime)

if TYPE_CHECKING:
    from ..graph.model import Graph


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
    paths = workflow.find_chats(chats, warn=render.notice)
    one_graph(paths, graph)
    settings = runtime(ctx).load_settings()
    schema = workflow.load_schema(settings.memory.node_type_schema)
    all_stats = [workflow.chat_stats(p, graph, schema, settings, skip_bad_lines=skip_bad_lines,
                                     warn=render.notice) for p in paths]
    if fmt == "json":
        render.write_json({"chats": [s.as_dict() for s in all_stats]})
        return
    console = render.out()
    for s in all_stats:
        for table in render.stats_tables(s, tree=tree):
            console.print(table)
    if len(all_stats) > 1:
        console.print(render.stats_summary(all_stats))


# `--format`: ST-BME's JSON, or one of the views in bme_cli/exporters (see docs/inspect.md)
EXPORT_FORMATS = ("st-bme", "html", "graphml", "mermaid", "dot", "lorebook")


@app.command("export")
@handled
def export_cmd(
    ctx: typer.Context,
    chat: ChatArg,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="write here instead of stdout")] = None,
    with_embeddings: Annotated[bool, typer.Option("--with-embeddings", help="keep vectors (for moves between bme installs)")] = False,
    fmt: Annotated[str, typer.Option("--format", "-f", help="st-bme (ST-BME's JSON), lorebook (SillyTavern World Info), html (a graph page), graphml, mermaid or dot")] = "st-bme",
    graph: GraphOpt = None,
) -> None:
    """Export the graph in ST-BME's format (pretty JSON, embeddings null) for the extension's import,
    a SillyTavern lorebook (--format lorebook), or a page or diagram (--format html|graphml|mermaid|dot)."""
    from .. import render, workflow
    from ..graph import codec, store
    from ..graph.model import now_ms
    from ..memory.gaps import failed_batches
    check_format(fmt, EXPORT_FORMATS)
    gpath = workflow.graph_path_for(chat, graph)
    g = store.load_graph(gpath, now_ms())
    if g is None and graph is None and not chat.exists():
        raise BadInputError(f"{chat}: no such file", "check the path and the file name")
    if g is None:
        raise UsageError(f"{gpath}: no graph yet", "run `bme ingest` on the chat first")
    if fmt == "lorebook":
        from .interop_cmds import export_lorebook
        export_lorebook(runtime(ctx).load_settings(), g, output)
        return
    if fmt != "st-bme":
        _export_view(ctx, fmt, g, chat, output, with_embeddings)
        return
    text = codec.export_document(g, with_embeddings=with_embeddings)
    failed = failed_batches(g)
    if failed:  # the export cannot carry them: ST-BME will read lastProcessedSeq as "all processed"
        spans = ", ".join(r.span for r in failed[:6]) + (" …" if len(failed) > 6 else "")
        render.notice(f"{len(failed)} failed batch(es) ({spans}) are not in the export: ST-BME will count "
                      "their messages as processed (bme ingest --retry-failed first to extract them)")
    _write_export(text, output, f"exported {len(g.nodes)} nodes and {len(g.edges)} edges to {output}")


def _write_export(text: str, output: Path | None, done: str) -> None:
    """An export to stdout, or atomically to `output` with the `done` notice."""
    from .. import render
    from ..graph import store
    if output is None:
        render.write_document(text)
        return
    store.atomic_write(output, [text.encode("utf-8")])
    render.notice(done)


def _export_view(ctx: typer.Context, fmt: str, g: "Graph", chat: Path, output: Path | None,
                 with_embeddings: bool) -> None:
    """`bme export --format html|graphml|mermaid|dot`: a view of the graph for a browser or a tool."""
    from .. import workflow
    from ..exporters import render as render_view
    if with_embeddings:
        raise UsageError("--with-embeddings goes with the ST-BME format only")
    schema = workflow.load_schema(runtime(ctx).load_settings().memory.node_type_schema)
    text = render_view(fmt, g, schema, f"{chat.name}: memory graph")
    _write_export(text, output, f"wrote {fmt} of {len(g.nodes)} nodes and {len(g.edges)} edges to {output}")


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
    from ..graph.model import now_ms
    if graph is None and not chat.exists():   # else a typo would leave a sidecar for no chat
        raise BadInputError(f"{chat}: no such file", "check the path, or name the graph file with --graph")
    rt = runtime(ctx)
    settings = rt.load_settings()
    embedder = rt.providers(settings, quiet=True).embedder
    summary = workflow.import_graph(chat, source, now=now_ms(), graph_override=graph, force=force,
                                    lock_wait=wait, embedding_model=embedder.model_id,
                                    vectors_model=embedding_model, max_bytes=settings.max_input_bytes)
    render.notice(summary)
