"""Branches: a chat whose first messages are another processed chat's starts from that graph.

SillyTavern's "branch" writes a new chat file (`Branch #N - <date>.jsonl`) in the same
folder holding the parent's messages up to N, its header's `chat_metadata.main_chat` naming
the parent. Extracting those messages again would cost as much as the parent did and give
different memories of the same story. So when a chat without a graph shares its first
messages with a processed chat beside it (by the fingerprints bme keeps of every processed
message), or `--from PARENT` names one, its graph starts as the parent's rolled back to the
first message where the two differ (memory/rebuild.py, as `--rebuild-from`), and ingest
goes on from there.

Swipes need nothing here: the chosen swipe is what is read, and choosing another later
changes the message's fingerprint, which ingest reports as an edit.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..chat import Chat, _message
from ..chat_lines import MAX_HEADER_BYTES, decode_line, is_header
from ..errors import BmeError, UsageError
from ..graph import store
from ..graph.model import Graph
from ..memory.ingest import fingerprint
from ..memory.rebuild import rebuild_from

MAX_CANDIDATES = 200   # processed chats beside this one whose sidecars are read, newest first


@dataclass
class Branch:
    """The parent a chat branched from, where they part, and the parent's graph."""

    parent: Path
    point: int          # the first message the two chats do not share
    graph: Graph


def shared_prefix(chat: Chat, graph: Graph) -> int:
    """How many leading messages of `chat` the graph processed exactly as they are (its fingerprints)."""
    stored = graph.meta.fingerprints
    point = 0
    for m in chat.messages:
        if m.seq > graph.last_processed_seq or stored.get(m.seq) != fingerprint(m):
            break
        point += 1
    return point


def _useful(chat: Chat, graph: Graph, point: int) -> bool:
    """Does the shared part hold a reply to the user the parent processed? A shared greeting
    alone is no branch: every chat with a character starts with it."""
    first_user = next((m.seq for m in chat.messages if m.is_user), None)
    return first_user is not None and any(first_user < s < point and s <= graph.last_processed_seq
                                          for s in chat.assistant_turns)


def find_branch(chat: Chat, parent: Path | None, now: int) -> Branch | None:
    """The chat's parent: `parent` when given (an error if it shares nothing), else the processed
    chat beside it sharing the most leading messages (the header's main_chat first on a tie)."""
    if parent is not None:
        graph = store.load_graph(store.sidecar_path(parent), now)
        if graph is None:
            raise UsageError(f"{parent}: no graph yet", f"run `bme ingest {parent}` first")
        point = shared_prefix(chat, graph)
        if not _useful(chat, graph, point):
            raise UsageError(f"{chat.path} shares no processed reply with {parent}; nothing to start from",
                             "leave out --from to extract the chat on its own")
        return Branch(parent, point, graph)
    best: Branch | None = None
    for candidate in _candidates(chat):
        try:
            graph = store.load_graph(store.sidecar_path(candidate), now)
        except BmeError:
            continue   # a sidecar bme cannot read is no parent; its own ingest reports it
        point = shared_prefix(chat, graph) if graph is not None else 0
        if graph is not None and _useful(chat, graph, point) and (best is None or point > best.point):
            best = Branch(candidate, point, graph)
    return best


def _candidates(chat: Chat) -> list[Path]:
    """Processed chats in the same folder whose first message is this chat's, main_chat first."""
    if not chat.messages:
        return []
    first = fingerprint(chat.messages[0])
    folder, name = chat.path.parent, chat.path.name
    sidecars = sorted(folder.glob(f"*{store.SIDECAR_SUFFIX}"), key=_mtime, reverse=True)
    chats = [p for s in sidecars if (p := _chat_of(s)) is not None and p.name != name]
    meta = chat.header.get("chat_metadata") if chat.header else None
    main = meta.get("main_chat") if isinstance(meta, dict) else None
    if isinstance(main, str) and main:
        chats.sort(key=lambda p: p.stem != main)   # stable: the named parent first, then newest
    return [p for p in chats[:MAX_CANDIDATES] if _first_fingerprint(p) == first]


def names_parent(path: Path) -> bool:
    """Does the chat file's header name a parent (chat_metadata.main_chat), as SillyTavern's branches do?"""
    try:
        with open(path, "rb") as fh:
            line = fh.readline(MAX_HEADER_BYTES)
    except OSError:
        return False
    # Unparsed: inside a JSON string a quote is escaped, so this finds only the key itself.
    return b'"main_chat":"' in line


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _chat_of(sidecar: Path) -> Path | None:
    chat = sidecar.with_name(sidecar.name[:-len(store.SIDECAR_SUFFIX)] + ".jsonl")
    return chat if chat.is_file() else None


def _first_fingerprint(path: Path) -> str | None:
    """The fingerprint of a chat file's first message, reading no more of it than that."""
    try:
        with open(path, "rb") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                obj, _ = decode_line(line.removeprefix(b"\xef\xbb\xbf"))
                if obj is None:
                    return None
                if is_header(obj) and line_no == 1:
                    continue
                return fingerprint(_message(obj, 0, line_no))
    except OSError:
        return None
    return None


def adopt(branch: Branch, chat: Chat, now: int) -> Graph:
    """The parent's graph rolled back to the branch point, without the parent's later story."""
    graph = branch.graph
    rebuild_from(graph, branch.point, now, assistant_turns=chat.assistant_turns)
    _drop_future(graph, branch.point)
    graph.last_recall_result = None
    return graph


def _drop_future(graph: Graph, point: int) -> None:
    """Remove what the parent made from its messages >= point (rebuild archived it): in this
    branch it never happened, so it is not kept even as archived history."""
    gone = {n.id: n for n in graph.nodes if n.archived and n.seq_range[0] >= point}
    if not gone:
        return
    def outside(node_id: str | None, step: str) -> str | None:
        while node_id in gone:   # walk the same-type list past removed neighbours
            node_id = getattr(gone[node_id], step)
        return node_id
    graph.nodes = [n for n in graph.nodes if n.id not in gone]
    for n in graph.nodes:
        n.prev_id, n.next_id = outside(n.prev_id, "prev_id"), outside(n.next_id, "next_id")
        n.child_ids = [c for c in n.child_ids if c not in gone]
        if n.parent_id in gone:
            n.parent_id = None
    graph.edges = [e for e in graph.edges if e.from_id not in gone and e.to_id not in gone]
    graph.reindex()
