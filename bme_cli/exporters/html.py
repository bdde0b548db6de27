"""The graph as one self-contained HTML page: a force layout on a canvas, node types coloured,
invalidated edges dashed, a slider over story time, a side panel with a node's fields, search.

No network: the script, the styles and the data are inlined (a Content-Security-Policy
forbids anything else), and chat text reaches the page only as JSON data shown through
`textContent`, so a message holding markup cannot run in it.
"""
from __future__ import annotations

import json
from collections import Counter
from html import escape
from importlib.resources import files
from typing import Any

from ..graph.model import Graph
from ..graph.schema import Schema
from ..memory.timeline import node_status
from .common import colour, short_label


def _asset(name: str) -> str:
    return files(__package__).joinpath(name).read_text(encoding="utf-8")


def page_data(graph: Graph, schema: Schema, title: str) -> dict[str, Any]:
    """What the page's script reads: every node and edge, the types and the last message."""
    nodes = [{"id": n.id, "type": n.type, "label": short_label(n, 200), "fields": {k: str(v) for k, v in n.fields.items()},
              "level": n.level, "seq": [n.seq_range[0], n.seq_end], "importance": round(n.importance, 2),
              "status": node_status(n), "archived": n.archived, "colour": colour(n.type)} for n in graph.nodes]
    edges = [{"from": e.from_id, "to": e.to_id, "relation": e.relation, "valid": e.is_active(),
              "strength": e.strength} for e in graph.edges]
    counts = Counter(n.type for n in graph.nodes)
    order = [t["id"] for t in schema.types if t["id"] in counts] + sorted(set(counts) - set(schema.by_id))
    return {"title": title, "maxSeq": max([n.seq_end for n in graph.nodes] or [0]),
            "types": [{"id": t, "colour": colour(t), "count": counts[t]} for t in order],
            "nodes": nodes, "edges": edges}


def render(graph: Graph, schema: Schema, title: str = "bme memory graph") -> str:
    """The whole page as text."""
    # "<" as \u003c: the JSON can never close its <script> element, whatever the chat says
    data = json.dumps(page_data(graph, schema, title), ensure_ascii=False).replace("<", "\\u003c")
    page = _asset("page.html")
    for key, value in (("__TITLE__", escape(title)), ("__CSS__", _asset("page.css")),
                       ("__JS__", _asset("page.js")), ("__DATA__", data)):  # the chat's text last
        page = page.replace(key, value)
    return page
