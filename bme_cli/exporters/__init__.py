"""Views of a graph for other tools: an HTML page, GraphML (Gephi, yEd), Mermaid and DOT.

`bme export CHAT --format NAME` picks one from FORMATS; each takes the graph and the schema
and a title, and returns the whole text. The ST-BME export itself is graph/export.py.
"""
from __future__ import annotations

from typing import Callable

from ..graph.model import Graph
from ..graph.schema import Schema
from . import dot, graphml, html, mermaid

Exporter = Callable[[Graph, Schema, str], str]

FORMATS: dict[str, Exporter] = {
    "html": html.render,
    "graphml": graphml.render,
    "mermaid": mermaid.render,
    "dot": dot.render,
}


def render(fmt: str, graph: Graph, schema: Schema, title: str) -> str:
    """The graph in format `fmt` (one of FORMATS), titled (where the format has a title) `title`."""
    return FORMATS[fmt](graph, schema, title)
