"""Rich views of the memory itself: search hits, the timeline (flat or as a tree), one node."""
from __future__ import annotations

import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..render.fit import Fitted

if TYPE_CHECKING:
    from ..chat import Chat
    from ..memory.search import SearchHit
    from ..memory.timeline import TimelineRow


def _one_line(text: Any, limit: int = 300) -> str:
    return " ".join(str(text or "").split())[:limit]


def _clip(text: Any, limit: int) -> str:
    """One line of at most `limit` terminal cells (a Chinese character takes two)."""
    line, width = _one_line(text, 4 * limit), 0
    for i, ch in enumerate(line):
        width += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if width > limit - 1 and i < len(line) - 1:
            return line[:i] + "…"
    return line


def _span(rng: list[int]) -> str:
    return f"#{rng[0]}" if rng[0] == rng[-1] else f"#{rng[0]}-{rng[-1]}"


def search_table(title: str, hits: list[SearchHit]) -> Fitted:
    """`bme search`: score, id prefix, type, status and the node's text, best first."""
    t = Table(title=title, title_justify="left", expand=True)
    for col in ("score", "id", "type", "msgs", "status"):
        t.add_column(col, no_wrap=True, justify="right" if col == "score" else "left")
    t.add_column("memory", overflow="fold", ratio=1, min_width=16)
    for h in hits:
        t.add_row(f"{h.score:.3f}", h.node.id[:8], h.node.type, _span(h.node.seq_range), h.status,
                  Text(_clip(h.node.label(), 100)))
    return Fitted(t, drop=("status", "msgs"))


def timeline_table(title: str, rows: list[TimelineRow]) -> Fitted:
    """`bme show --timeline`: one row a node in story order."""
    t = Table(title=title, title_justify="left", expand=True)
    for col in ("msgs", "date", "id"):
        t.add_column(col, no_wrap=True)
    t.add_column("what happened", overflow="fold", ratio=3, min_width=16)
    t.add_column("who", overflow="ellipsis", ratio=1)
    t.add_column("where", overflow="ellipsis", ratio=1)
    for r in rows:
        mark = {"pinned": "[pinned] ", "kept": "[kept] "}.get(_status(r), "") + (f"[L{r.node.level}] " if r.node.level else "")
        t.add_row(_span(r.node.seq_range), r.date or "-", r.node.id[:8], Text(mark + _clip(r.node.label(), 110)),
                  Text(_clip(r.who, 40)), Text(_clip(r.where, 30)))
    return Fitted(t, drop=("id", "where", "date"))


def _status(row: TimelineRow) -> str:
    from ..memory.timeline import node_status
    return node_status(row.node)


def timeline_tree(title: str, rows: list[TimelineRow]) -> Tree:
    """`bme show --tree`: summaries with the nodes they were compressed from beneath them."""
    tree = Tree(Text(title))
    for r in rows:
        _branch(tree, r)
    return tree


def _branch(parent: Tree, row: TimelineRow) -> None:
    n = row.node
    level = f"L{n.level} " if n.level else ""
    label = Text(f"{_span(n.seq_range)} {level}{n.id[:8]} {_status(row)}: {_clip(n.label(), 150)}")
    branch = parent.add(label)
    for child in row.children:
        _branch(branch, child)


def _when(ms: Any) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def node_lines(d: dict[str, Any]) -> list[Any]:
    """`bme show CHAT NODE_ID`: fields, edges, history and source messages, as printable pieces."""
    head = (f"{d['type']} {d['id']} · {d['status']} · level {d['level']} · messages {_span(d['seqRange'])}"
            f" · importance {d['importance']:g} · recalled {d['accessCount']}x")
    out: list[Any] = [Text(head)]
    fields = Table(title="fields", title_justify="left", show_header=False, expand=True)
    fields.add_column("field", no_wrap=True)
    fields.add_column("value", overflow="fold", ratio=1)
    for k, v in d["fields"].items():
        fields.add_row(k, Text(str(v)))
    out.append(Fitted(fields))
    if d["edges"]:
        edges = Table(title="edges", title_justify="left", expand=True)
        for col in ("relation", "dir", "other", "msg", "state"):
            edges.add_column(col, no_wrap=col != "other", overflow="fold", ratio=1 if col == "other" else None)
        for e in d["edges"]:
            state = "valid" if e["valid"] else "ended " + _when(e["invalidAt"] or e["expiredAt"])
            made = f"#{e['seq']}" if e.get("seq") is not None else "-"
            edges.add_row(e["relation"], e["direction"], Text(f"{e['other'][:8]} {_clip(e['otherLabel'], 60)}"),
                          made, state)
        out.append(Fitted(edges, drop=("msg", "dir")))
    history = _history(d)
    if history:
        out.append(Text("history:\n" + "\n".join(history)))
    if d["messages"]:
        out.append(Text("source messages:\n" + "\n".join(
            f"  #{m['seq']} {m['speaker']}: {_clip(m['text'], 150)}" for m in d["messages"])))
    return out


def _fields_text(fields: Any) -> str:
    return "; ".join(f"{k}: {v}" for k, v in fields.items()) if isinstance(fields, dict) else str(fields or "")


def _history(d: dict[str, Any]) -> list[str]:
    lines = [f"  update at #{u.get('seq')}: was {_clip(_fields_text(u.get('fields')), 120)}" for u in d["updates"]]
    lines += [f"  {_when(h.get('timestamp'))} evolved by {str(h.get('triggeredBy'))[:8]}: "
              f"{h.get('field', '')} {_one_line(h.get('reason'), 100)}" for h in d["evolution"]]
    lines += [f"  {_when(u.get('at'))} {u.get('by')} {u.get('action')}"
              + (f": {', '.join(u['changes'])}" if u.get("changes") else "") for u in d["user"]]
    return lines


def show_memory(chat: Chat, chat_path: Path, graph_path: Path | None, *, node_id: str | None, tree: bool,
                type_id: str | None, who: str | None, since: int | None, fmt: str) -> None:
    """`bme show CHAT --timeline|NODE_ID`: read the graph and print the timeline or one node."""
    from .. import render, workflow
    from ..errors import UsageError
    from ..graph import store
    from ..graph.model import now_ms
    from ..memory import edits, timeline as tl
    path = workflow.graph_path_for(chat_path, graph_path)
    g = store.load_graph(path, now_ms())
    if g is None:
        raise UsageError(f"{path}: no graph yet", "run `bme ingest` on the chat first")
    msgs = chat.messages

    def date_of(seq: int) -> str | None:
        m = msgs[seq] if 0 <= seq < len(msgs) else None
        return m.send_date.strftime("%Y-%m-%d") if m is not None and m.send_date else None

    if node_id is not None:
        node = edits.find_node(g, node_id)
        lo, hi = node.seq_range[0], node.seq_end
        sources = [{"seq": m.seq, "speaker": m.name or m.role, "text": m.text} for m in msgs[max(0, lo):hi + 1]]
        detail = tl.node_detail(g, node, sources)
        if fmt == "json":
            render.write_json(detail)
        else:
            for piece in node_lines(detail):
                render.out().print(piece)
        return
    wanted = None if type_id == "all" else (type_id or "event")
    rows = tl.timeline(g, date_of, type_id=wanted, who=who, since=since)
    title = f"{chat_path.name}: {wanted or 'every'} memory in story order ({len(rows)})"
    if fmt == "json":
        render.write_json({"chat": chat_path.name, "type": wanted or "all", "nodes": [r.as_json() for r in rows]})
    else:
        render.out().print(timeline_tree(title, rows) if tree else timeline_table(title, rows))
