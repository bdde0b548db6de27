"""bme: long-term graph memory for SillyTavern chats, on the command line and as a library.

    from bme_cli import ingest, recall
    ingest("chat.jsonl")
    print(recall("chat.jsonl", "Where did Mira hide the map?").text)

The library calls live in bme_cli.api (see its docstring); they are loaded on first use, so
`import bme_cli` and `bme --version` stay cheap.
"""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "ingest", "recall", "open_graph", "load_settings", "Settings", "BmeError",
           "IngestFailed"]

_FROM = {"ingest": "api", "recall": "api", "open_graph": "api", "load_settings": "api", "IngestFailed": "api",
         "Settings": "settings", "BmeError": "errors"}


def __getattr__(name: str) -> Any:
    if name in _FROM:
        import importlib
        return getattr(importlib.import_module(f".{_FROM[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
