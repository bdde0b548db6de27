"""The whole graph as GraphML, for Gephi and yEd: every node (archived ones marked) and edge."""
from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from ..graph.model import Graph
from ..graph.schema import Schema
from ..memory.timeline import node_status
from .common import colour, short_label

# (key id, for, attr.name, attr.type)
_KEYS = (("label", "node", "label", "string"), ("type", "node", "type", "string"),
         ("level", "node", "level", "int"), ("seqStart", "node", "seqStart", "int"),
         ("seqEnd", "node", "seqEnd", "int"), ("importance", "node", "importance", "double"),
         ("status", "node", "status", "string"), ("colour", "node", "color", "string"),
         ("fields", "node", "fields", "string"),
         ("relation", "edge", "relation", "string"), ("strength", "edge", "strength", "double"),
         ("valid", "edge", "valid", "boolean"), ("invalidAt", "edge", "invalidAt", "long"))


def _cell(value: object) -> str:
    # XML 1.0 cannot carry most control characters, even escaped: drop them
    text = escape(str(value))
    return "".join(c for c in text if c in "\t\n\r" or ord(c) >= 0x20)


def _data(key: str, value: object) -> str:
    return f'<data key="{key}">{_cell(value)}</data>'


def render(graph: Graph, schema: Schema, title: str = "bme") -> str:
    """GraphML 1.0 with typed attributes (label, type, level, story span, status, colour, fields)."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">']
    out += [f'  <key id="{k}" for="{f}" attr.name="{n}" attr.type="{t}"/>' for k, f, n, t in _KEYS]
    out.append('  <graph id="bme" edgedefault="directed">')
    out.append(f"    <desc>{_cell(title)}</desc>")
    for n in graph.nodes:
        fields = "; ".join(f"{k}: {v}" for k, v in n.fields.items())
        cells = [_data("label", short_label(n, 120)), _data("type", n.type), _data("level", n.level),
                 _data("seqStart", n.seq_range[0]), _data("seqEnd", n.seq_end), _data("importance", n.importance),
                 _data("status", node_status(n)), _data("colour", colour(n.type)), _data("fields", fields)]
        out.append(f"    <node id={quoteattr(n.id)}>{''.join(cells)}</node>")
    known = {n.id for n in graph.nodes}
    for e in graph.edges:
        if e.from_id not in known or e.to_id not in known:
            continue  # GraphML readers refuse an edge to a node that is not there
        cells = [_data("relation", e.relation), _data("strength", e.strength),
                 _data("valid", "true" if e.is_active() else "false")]
        if e.invalid_at or e.expired_at:
            cells.append(_data("invalidAt", int(e.invalid_at or e.expired_at)))
        out.append(f"    <edge id={quoteattr(e.id)} source={quoteattr(e.from_id)} "
                   f"target={quoteattr(e.to_id)}>{''.join(cells)}</edge>")
    out += ["  </graph>", "</graphml>"]
    return "\n".join(out) + "\n"
