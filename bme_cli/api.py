"""bme as a library: the calls a script needs, without the command line.

    from bme_cli import ingest, recall, open_graph, load_settings

    report = ingest("chat.jsonl")              # offline unless the settings name an endpoint
    block = recall("chat.jsonl", "Where did Mira hide the map?")
    print(block.text)                          # the Markdown block to inject
    for item in block.as_json()["nodes"]:      # what was injected, with ids and scores
        print(item["type"], item["id"])
    graph = open_graph("chat.jsonl")           # the ST-BME v3 graph (read-only copy)

Settings come from the same places as the command line's (BME_* environment, the config
file), or pass `settings=load_settings(config=...)` / a `Settings(...)` of your own. Every
call takes the chat's lock while it writes, as the commands do, and raises BmeError (with
`.exit_code`, the command line's code) instead of printing. Each call builds its own
providers, so what a client learns of its server (a JSON mode the server refuses, retried in
the next) is learned again by the next call: one rejected request per call at most.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Union

from .errors import BmeError

if TYPE_CHECKING:
    from .graph.model import Graph
    from .memory.ingest import IngestReport
    from .memory.recall_result import RecallResult
    from .settings import Settings

PathLike = Union[str, Path]


def load_settings(config: PathLike | None = None) -> "Settings":
    """The settings the command line would use: flags aside, BME_* environment > config file > defaults."""
    from .settings import load_settings as load
    return load(config_path=Path(config) if config is not None else None)


class IngestFailed(BmeError):
    """An ingest that ended with an error; `.report` holds what was done before it."""

    def __init__(self, message: str, exit_code: int, report: "IngestReport | None"):
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[assignment]
        self.report = report


def ingest(chat: PathLike, *, settings: "Settings | None" = None, graph: PathLike | None = None,
           until: int | None = None, on_fail: str = "record") -> "IngestReport":
    """Extract a chat's pending messages into its graph (`<chat>.bme.json`, or `graph`)."""
    from . import ingest_runner
    from .providers.factory import build_providers
    from .workflow import load_schema
    settings = settings or load_settings()
    providers = build_providers(settings, use_cache=settings.cache)
    try:
        outcome = ingest_runner.ingest_one(
            Path(chat), settings, providers, load_schema(settings.memory.node_type_schema),
            ingest_runner.IngestOptions(graph_override=Path(graph) if graph else None, until=until,
                                        on_fail=on_fail),
            ingest_runner.IngestEvents(), threading.Event())
    finally:
        providers.close()
    if outcome.error:
        raise IngestFailed(outcome.error, outcome.exit_code, outcome.report)
    assert outcome.report is not None
    return outcome.report


def recall(chat: PathLike, query: str | None = None, *, settings: "Settings | None" = None,
           graph: PathLike | None = None, budget: int | None = None, reinforce: bool = False,
           seed: int | None = None) -> "RecallResult":
    """The block to inject for `query` (None: the chat's latest user message and recent context).
    With reinforce=True the recalled memories are strengthened and saved, as `bme recall` does;
    `seed` repeats the probabilistic extras (`enable_prob_recall`), as `bme recall --seed`."""
    from .providers.factory import build_providers
    from .recall_session import open_recall, save_session
    from .workflow import load_schema
    settings = settings or load_settings()
    if budget is not None:
        settings = settings.model_copy(update={"memory": settings.memory.model_copy(update={"budget": budget})})
    providers = build_providers(settings, use_cache=settings.cache)
    try:
        with open_recall(Path(chat), settings, providers, load_schema(settings.memory.node_type_schema),
                         graph_override=Path(graph) if graph else None, write=reinforce, seed=seed) as session:
            result = session.recall(query, reinforce=reinforce)
            if reinforce:
                save_session(session, providers)
    finally:
        providers.close()
    return result


def open_graph(chat: PathLike, *, graph: PathLike | None = None) -> "Graph":
    """A chat's graph as bme holds it (an empty Graph when none was made yet); changes to it are
    not saved."""
    from .graph import store
    from .graph.model import now_ms
    from .workflow import graph_path_for
    return store.load_graph(graph_path_for(Path(chat), Path(graph) if graph else None), now_ms()) or _empty()


def _empty() -> "Graph":
    from .graph.model import Graph
    return Graph()
