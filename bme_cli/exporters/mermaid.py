"""The active graph as a Mermaid flowchart (paste it into Markdown on GitHub, GitLab, Obsidian)."""
from __future__ import annotations

import json

from ..graph.model import Graph
from ..graph.schema import Schema
from .common import active_view, colour, short_label


def _text(s: str) -> str:
    # A control character from the chat (ESC, BEL) would reach the terminal as it is: a space.
    s = "".join(" " if ch < " " or "\x7f" <= ch <= "\x9f" else ch for ch in s)
    # Inside "..." Mermaid reads its own entity codes (#quot;, #35;): a quote would end the
    # label, angle brackets open markup, and a "#" start a code.
    for ch, code in (("#", "#35;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;"), ("|", "#124;")):
        s = s.replace(ch, code)
    return s


def render(graph: Graph, schema: Schema, title: str = "bme") -> str:
    """`flowchart LR`: one box per active node (class = its type), valid edges solid, invalidated dotted."""
    view = active_view(graph)
    key = {n.id: f"n{i}" for i, n in enumerate(view.nodes)}
    lines = ["---", f"title: {json.dumps(title, ensure_ascii=False)}", "---", "flowchart LR"]
    for n in view.nodes:
        lines.append(f'  {key[n.id]}["{_text(short_label(n))}"]:::{_cls(n.type)}')
    for e in view.edges:
        arrow = "-->" if e.is_active() else "-.->"
        lines.append(f"  {key[e.from_id]} {arrow}|{_text(e.relation)}| {key[e.to_id]}")
    for type_id in dict.fromkeys(n.type for n in view.nodes):
        lines.append(f"  classDef {_cls(type_id)} fill:{colour(type_id)},color:#000,stroke:#333")
    return "\n".join(lines) + "\n"


def _cls(type_id: str) -> str:
    return "t_" + "".join(c if c.isalnum() else "_" for c in type_id)
