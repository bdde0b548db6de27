"""The active graph in Graphviz DOT (`dot -Tsvg graph.dot > graph.svg`)."""
from __future__ import annotations

import json

from ..graph.model import Graph
from ..graph.schema import Schema
from .common import active_view, colour, short_label


def _q(s: str) -> str:
    # a DOT quoted string takes the same escapes as JSON for quotes and backslashes
    return json.dumps(s, ensure_ascii=False)


def render(graph: Graph, schema: Schema, title: str = "bme") -> str:
    """`digraph bme`: nodes filled by type, invalidated edges dashed and grey."""
    view = active_view(graph)
    lines = ["digraph bme {", f"  label={_q(title)};", "  rankdir=LR;", '  node [shape=box, style="rounded,filled", fontname="sans-serif"];']
    for n in view.nodes:
        tip = f"{n.type} #{n.seq_range[0]}-{n.seq_end}"
        lines.append(f"  {_q(n.id)} [label={_q(short_label(n))}, fillcolor={_q(colour(n.type))}, tooltip={_q(tip)}];")
    for e in view.edges:
        style = "" if e.is_active() else ', style=dashed, color="#999999"'
        lines.append(f"  {_q(e.from_id)} -> {_q(e.to_id)} [label={_q(e.relation)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
