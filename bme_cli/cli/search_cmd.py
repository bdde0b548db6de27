"""`bme search CHAT TEXT`: find the memories that match a text, with their ids, to fix them."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import ChatArg, GraphOpt, SkipOpt, app, check_format, handled, runtime


@app.command()
@handled
def search(
    ctx: typer.Context,
    chat: ChatArg,
    text: Annotated[str, typer.Argument(help="what to look for (words, a name, a sentence)")],
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="at most this many nodes")] = 10,
    type_id: Annotated[Optional[str], typer.Option("--type", help="only nodes of this type")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
    graph: GraphOpt = None,
    skip_bad_lines: SkipOpt = False,
) -> None:
    """Find nodes matching a text (recall's lexical and vector fusion, no budget), with their ids."""
    from .. import render, workflow
    from ..errors import UsageError
    from ..memory.scoring import Weights
    from ..memory.search import search as find
    from ..recall_session import open_recall
    check_format(fmt, ("table", "json"))
    if not text.strip():
        raise UsageError("give a text to search for")
    rt = runtime(ctx)
    settings = rt.load_settings()
    schema = workflow.load_schema(settings.memory.node_type_schema)
    providers = rt.providers(settings, quiet=True)
    with open_recall(chat, settings, providers, schema, graph_override=graph,
                     skip_bad_lines=skip_bad_lines, warn=render.notice) as session:
        if not session.existed:
            raise UsageError(f"{workflow.graph_path_for(chat, graph)}: no graph yet", "run `bme ingest` on the chat first")
        index = session.index
        qv = providers.embedder.embed([text])[0] if len(index.emb_rows) else None
        hits = find(index, text, qv, Weights.from_settings(settings.memory), limit=limit, type_id=type_id)
    if fmt == "json":
        render.write_json({"query": text, "hits": [h.as_json() for h in hits]})
        return
    if not hits:
        render.notice(f"no memory matches {text!r}")
        return
    from ..render.views import search_table
    render.out().print(search_table(f"{chat.name}: memories matching {text!r}", hits))
