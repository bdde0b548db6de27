"""`bme recall`: the memories that matter for the next reply, as a block to inject."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import BadInputError, UsageError
from .common import (ChatArg, GraphOpt, SkipOpt, WaitOpt, app, check_format, handled, loading, memory_flags,
                     runtime)

_UNDECODABLE = re.compile("[\ud800-\udfff]")  # how Python's argv keeps bytes that are not UTF-8


@app.command()
@handled
def recall(
    ctx: typer.Context,
    chat: ChatArg,
    query: Annotated[Optional[str], typer.Option("--query", help="recall for this text instead of the chat's latest user message")] = None,
    queries: Annotated[Optional[Path], typer.Option("--queries", help='batch mode: a JSON Lines file of {"query": ...}; prints one JSON line each')] = None,
    budget: Annotated[Optional[int], typer.Option("--budget", "-b", min=50, max=200_000, help="token budget of the block, 50 to 200000 (default: setting 'budget', 1500)")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="markdown, json or table")] = "markdown",
    explain: Annotated[bool, typer.Option("--explain", help="show every candidate's scores and why it was taken or dropped (stderr)")] = False,
    seed: Annotated[Optional[int], typer.Option("--seed", help="seed for probabilistic recall")] = None,
    no_reinforce: Annotated[bool, typer.Option("--no-reinforce", help="read-only: do not reinforce recalled memories or save")] = False,
    context_window: Annotated[Optional[int], typer.Option("--context-window", min=0, help="messages the model already sees; their memories are not injected again")] = None,
    graph: GraphOpt = None,
    wait: WaitOpt = 0.0,
    skip_bad_lines: SkipOpt = False,
    viewer: Annotated[Optional[list[str]], typer.Option("--viewer", metavar="NAME", help="only what this character witnessed (group chats; repeatable: one block each)")] = None,
    each_member: Annotated[bool, typer.Option("--each-member", help="one block per group member, each with only what they witnessed")] = False,
) -> None:
    """Print the memory block to inject before the next reply."""
    with loading():
        from .. import render, workflow
        from ..recall_session import open_recall, save_session
    check_format(fmt, ("markdown", "json", "table"))
    query = _checked_query(query, queries)
    rt = runtime(ctx)
    settings = rt.load_settings(memory_flags(budget=budget, context_window=context_window))
    schema = workflow.load_schema(settings.memory.node_type_schema)
    providers = rt.providers(settings, quiet=queries is not None)
    write = queries is None and not no_reinforce
    items = workflow.read_queries(queries) if queries is not None else None
    with open_recall(chat, settings, providers, schema, graph_override=graph, write=write, lock_wait=wait,
                     skip_bad_lines=skip_bad_lines, warn=render.notice, seed=seed) as session:
        write = write and session.save_to is not None  # not when the folder is read-only
        if not session.existed:
            render.notice(f"{workflow.graph_path_for(chat, graph)}: no graph yet, so nothing to recall "
                          "(run `bme ingest` first)")
        viewers = _viewers(session.chat, viewer, each_member)
        if items is not None:
            _batch(session, items, viewers, queries)
            return
        if len(viewers) > 1:
            _print_each(session, query, viewers, fmt)
            return
        result = session.recall(query, reinforce=write, explain=explain, viewer=viewers[0] if viewers else None)
        if write and session.existed:   # never create a sidecar just by recalling from an empty graph
            save_session(session, providers)
    _print_result(result, fmt, explain)


def _checked_query(query: str | None, queries: Path | None) -> str | None:
    """--query, refused beside --queries, with bytes that were not UTF-8 replaced (and said so)."""
    from .. import render
    if query is not None and queries is not None:
        raise UsageError("--query and --queries exclude each other")
    if query is not None and _UNDECODABLE.search(query):  # argv bytes that were not UTF-8
        render.notice("--query is not valid UTF-8: its undecodable bytes were replaced with U+FFFD")
        query = _UNDECODABLE.sub("\ufffd", query)
    return query


def _print_result(result, fmt: str, explain: bool) -> None:  # noqa: ANN001 - RecallResult
    """One recall: its warnings and --explain on stderr, the block (or JSON, or table) on stdout."""
    from .. import render
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


def _viewers(chat, names: list[str] | None, each_member: bool) -> list[str]:  # noqa: ANN001 - Chat
    """The viewers asked for: --viewer names, then every group member with --each-member."""
    out = list(names or [])
    if each_member:
        from ..memory.witness import members  # not at the top: it loads the extraction rules
        found = members(chat)
        if not found:
            raise UsageError(f"{chat.path}: no character speaks in this chat, so it has no members",
                             "name the viewer with --viewer NAME")
        out += found
    return list(dict.fromkeys(n.strip() for n in out if n.strip()))


def _print_each(session, query: str | None, viewers: list[str], fmt: str) -> None:  # noqa: ANN001
    """One read-only recall per viewer: markdown blocks under a `# viewer: NAME` line, or a JSON list."""
    from .. import render
    results = [(v, session.recall(query, reinforce=False, viewer=v)) for v in viewers]
    if fmt == "json":
        render.write_json({"viewers": [{"viewer": v, **r.as_json()} for v, r in results]})
        return
    for v, r in results:
        if fmt == "table":
            render.out().print(render.recall_table(r))
        else:
            render.write_text(f"# viewer: {v}\n{r.text}\n")


def _batch(session, items: list[dict], viewers: list[str], source: Path) -> None:  # noqa: ANN001 - RecallSession
    """Batch mode: one compact JSON line per query (per query and viewer, with --viewer); a bad
    line gets an {"line", "error"} line in its place, and the run ends with exit 3."""
    from .. import render
    lines, bad = len(items), sum("error" in it for it in items)
    if viewers:  # lines naming their own viewer keep it; the others are asked once per viewer
        items = [x for it in items for x in ([it] if it.get("viewer") or "error" in it
                                             else [{**it, "viewer": v} for v in viewers])]
    good = [it for it in items if "error" not in it]
    answers = iter(session.batch(good))
    for item in items:
        if "error" in item:
            render.notice(f"{source} line {item['line']}: {item['error']}; each line must be {{\"query\": \"...\"}}")
            render.write_json(item, compact=True)
            continue
        result = next(answers)
        render.write_json({**result.as_json(), **({"viewer": item["viewer"]} if item.get("viewer") else {})},
                          compact=True)
    if bad:
        raise BadInputError(f"{source}: {bad} of {lines} line(s) were not queries (answered the rest)")
