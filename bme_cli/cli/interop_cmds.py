"""Commands that give memory back to SillyTavern: attach, detach (and lorebooks, cards)."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import ChatArg, GraphOpt, WaitOpt, app, handled, runtime

ForceOpt = Annotated[bool, typer.Option("--force", help="replace or remove a graph SillyTavern made or changed (the chat is kept as .bak)")]


@app.command()
@handled
def attach(
    ctx: typer.Context,
    chat: ChatArg,
    force: ForceOpt = False,
    vectors: Annotated[Optional[bool], typer.Option("--vectors/--no-vectors", help="write the vectors (default: when their model is known and not bme's offline one)")] = None,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Put the chat's graph into its header (chat_metadata.st_bme_graph), where ST-BME reads it."""
    from .. import render, workflow
    from ..graph.model import now_ms
    from ..sillytavern import attach as st_attach
    settings = runtime(ctx).load_settings()
    result = st_attach.attach(chat, graph_override=graph, force=force, vectors=vectors, lock_wait=wait,
                              now=now_ms(), **workflow.reading(settings))
    if not result.changed:
        render.notice(f"{chat}: its header already holds this graph; nothing was written")
        return
    if result.vectors_model:
        kept = (f"{result.vectors} vectors of {result.vectors_model.removeprefix('openai:')} kept "
                "(set ST-BME's embedding model to the same one)")
    else:
        kept = "no vectors (ST-BME embeds the nodes at its next extraction)"
    render.notice(f"attached {result.nodes} nodes and {result.edges} edges to {chat}; {kept}; "
                  f"the chat as it was is kept as {result.backup}. Reopen the chat in SillyTavern.")
    if result.failed:  # ST-BME reads lastProcessedSeq as "all processed"
        spans = ", ".join(result.failed[:6]) + (" …" if len(result.failed) > 6 else "")
        render.notice(f"{len(result.failed)} failed batch(es) ({spans}) are not extracted: ST-BME will count their "
                      "messages as processed (bme ingest --retry-failed, then attach again)")


@app.command()
@handled
def detach(
    chat: ChatArg,
    force: ForceOpt = False,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
) -> None:
    """Remove the ST-BME graph from the chat's header (bme's own graph file is left as it is)."""
    from .. import render
    from ..sillytavern import attach as st_attach
    result = st_attach.detach(chat, graph_override=graph, force=force, lock_wait=wait)
    if not result.changed:
        render.notice(f"{chat}: its header holds no ST-BME graph; nothing was written")
        return
    render.notice(f"removed the ST-BME graph from {chat}; the chat as it was is kept as {result.backup}")


def export_lorebook(settings, graph, output) -> None:  # noqa: ANN001 - Settings, Graph, Path | None
    """`bme export --format lorebook`: the graph's characters, places, rules and threads as World Info."""
    from .. import render, workflow
    from ..graph import store
    from ..sillytavern.worldinfo import lorebook_text
    text = lorebook_text(graph, workflow.load_schema(settings.memory.node_type_schema))
    count = text.count('"uid": ')
    if output is None:
        render.write_document(text)
    else:
        store.write_text_atomic(output, text)
        render.notice(f"wrote {count} lorebook entries to {output} (import it in SillyTavern's World Info panel)")
    if count == 0:
        render.notice("the graph has no characters, places, rules or threads yet: the lorebook is empty")
