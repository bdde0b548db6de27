"""`bme recall`: the memories that matter for the next reply, as a block to inject."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import UsageError
from .common import ChatArg, GraphOpt, SkipOpt, WaitOpt, app, check_format, handled, memory_flags, runtime

_UNDECODABLE = re.compile("[\ud800-\udfff]")  # how Python's argv keeps bytes that are not UTF-8


@app.command()
@handled
def recall(
    ctx: typer.Context,
    chat: ChatArg,
    query: Annotated[Optional[str], typer.Option("--query", help="recall for this text instead of the chat's latest user message")] = None,
    queries: Annotated[Optional[Path], typer.Option("--queries", help='batch mode: a JSON Lines file of {"query": ...}; prints one JSON line each')] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", "-b", min=50, help="token budget of the block (default: setting 'budget', 1500)")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="markdown, json or table")] = "markdown",
    explain: Annotated[bool, typer.Option("--explain", help="show every candidate's scores and why it was taken or dropped (stderr)")] = False,
    seed: Annotated[Optional[int], typer.Option("--seed", help="seed for probabilistic recall")] = None,
    no_reinforce: Annotated[bool, typer.Option("--no-reinforce", help="read-only: do not reinforce recalled memories or save")] = False,
    context_window: Annotated[Optional[int], typer.Option("--context-window", min=0, help="messages the model already sees; their memories are not injected again")] = None,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
    skip_bad_lines: SkipOpt = False,
) -> None:
    """Print the memory block to inject before the next reply."""
    from .. import render, workflow
    from ..recall_session import open_recall, save_session
    check_format(fmt, ("markdown", "json", "table"))
    if query is not None and queries is not None:
        raise UsageError("--query and --queries exclude each other")
    if query is not None and _UNDECODABLE.search(query):  # argv bytes that were not UTF-8
        render.notice("--query is not valid UTF-8: its undecodable bytes were replaced with U+FFFD")
        query = _UNDECODABLE.sub("\ufffd", query)
    rt = runtime(ctx)
    settings = rt.settings(memory_flags(budget=budget, context_window=context_window))
    schema = workflow.load_schema(settings.memory.node_type_schema)
    providers = rt.providers(settings, quiet=queries is not None)
    write = queries is None and not no_reinforce
    items = workflow.read_queries(queries) if queries is not None else None
    with open_recall(chat, settings, providers, schema, graph_override=graph, write=write, lock_wait=wait,
                     skip_bad_lines=skip_bad_lines, warn=render.notice, seed=seed) as session:
        if not session.existed:
            render.notice(f"{workflow.graph_path_for(chat, graph)}: no graph yet, so nothing to recall "
                          "(run `bme ingest` first)")
        if items is not None:
            for result in session.batch(items):
                render.write_json(result.as_json(), compact=True)
            return
        result = session.recall(query, reinforce=write, explain=explain)
        if write and session.existed:   # never create a sidecar just by recalling from an empty graph
            save_session(session, providers)
    for w in result.warnings:
        render.notice(w)
    if explain:
        render.err().print(render.explain_table(result))
        for line in render.explain_notes(result):
            render.notice(line)
    if fmt == "json":
        render.write_json(result.as_json())
    elif fmt == "table":
        render.out().print(render.recall_table(result))
    elif result.text:
        render.write_text(result.text)
