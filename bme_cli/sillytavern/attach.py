"""`bme attach` / `bme detach`: bme's graph in the chat's own header, where ST-BME keeps it.

ST-BME stores its graph object at `chat_metadata.st_bme_graph` (spec §1.1), so a chat that
carries bme's graph there opens in SillyTavern with that memory in place. What is written
is the graph as `bme export --with-embeddings` has it (bme's own keys ride along: ST-BME
keeps unknown keys), with two top-level keys ST-BME ignores: `bmeEmbeddingModel` when
vectors are written, and `bmeAttached`, a digest of the rest. The digest is how bme knows
later that the header still holds what it attached: a graph ST-BME made or changed since
(every recall changes `lastRecallResult`) no longer matches, and is replaced or removed
only with force.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..chat import Chat, read_chat
from ..chat_lines import MAX_INPUT_BYTES, open_for_read
from ..errors import ChatChangedError, UsageError
from ..graph import store
from ..graph.codec import ATTACH_KEY, CHAT_GRAPH_KEY, EXPORT_MODEL_KEY, export_document
from ..graph.model import Graph
from ..memory.gaps import failed_batches
from ..memory.ingest import check_edits
from ..story import StoryOptions
from .header import update_chat_metadata

# bme's built-in offline models have no endpoint ST-BME can call: their vectors would only
# mislead it (it never re-embeds a node that has a vector).
_OFFLINE_MODEL = "offline:"


@dataclass
class AttachResult:
    """What attach or detach did, for the one-line summary."""

    changed: bool
    nodes: int = 0
    edges: int = 0
    vectors: int = 0
    vectors_model: str | None = None
    backup: Path | None = None
    failed: list[str] = field(default_factory=list)   # spans of failed batches ST-BME will count as done


def backup_path(chat_path: Path) -> Path:
    """Where attach and detach keep the chat as it was: `<chat>.jsonl.bak` (SillyTavern lists only .jsonl)."""
    return chat_path.with_name(chat_path.name + ".bak")


def vectors_usable_by_st_bme(graph: Graph) -> bool:
    """Is the graph's vectors' model known, and one ST-BME can be set to use (not bme's offline one)?"""
    model = graph.meta.embedding_model or ""
    return bool(model) and not model.startswith(_OFFLINE_MODEL)


def header_graph(graph: Graph, *, with_vectors: bool) -> dict[str, Any]:
    """The graph object to store at chat_metadata.st_bme_graph, digest included."""
    doc = orjson.loads(export_document(graph, with_embeddings=True))
    doc.pop(ATTACH_KEY, None)
    if not with_vectors or not any(n.get("embedding") is not None for n in doc["nodes"]):
        doc.pop(EXPORT_MODEL_KEY, None)
        for node in doc["nodes"]:
            node["embedding"] = None
    doc[ATTACH_KEY] = _digest(doc)
    return doc


def _digest(value: Any) -> str:
    """A digest of a graph object without its own ATTACH_KEY: equal content, equal digest."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k != ATTACH_KEY}
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def attached_by_bme(value: Any) -> bool:
    """Is this header value a graph bme attached, unchanged since?"""
    return isinstance(value, dict) and value.get(ATTACH_KEY) == _digest(value)


def _refuse_theirs(chat_path: Path, old: Any, force: bool, doing: str) -> None:
    """Without force, refuse to replace or remove a header graph bme did not attach as it is now."""
    if old is None or force or attached_by_bme(old):
        return
    nodes = old.get("nodes") if isinstance(old, dict) else None
    what = f"{len(nodes)} nodes" if isinstance(nodes, list) else "a graph bme did not write"
    raise UsageError(f"{chat_path}: the header's ST-BME graph ({what}) was made or changed in SillyTavern; "
                     f"{doing} it would lose it; nothing was written",
                     f"`bme import {chat_path} {chat_path} --force` takes it into bme first, or pass "
                     "--force (the chat is kept as .bak)")


def attach(chat_path: Path, *, graph_override: Path | None = None, force: bool = False,
           vectors: bool | None = None, lock_wait: float = 0.0, now: int,
           story: StoryOptions | None = None, max_bytes: int = MAX_INPUT_BYTES) -> AttachResult:
    """Write the chat's bme graph into its header (chat_metadata.st_bme_graph), keeping a backup.

    `vectors` None: write them when their model is known and not bme's offline one. Refuses when the chat was
    edited since ingest (the graph would not line up) and, without `force`, when the header
    holds a graph that is not the one bme attached.
    """
    gpath = store.sidecar_path(chat_path) if graph_override is None else graph_override
    chat = read_chat(chat_path, story=story, max_bytes=max_bytes)   # a missing or broken chat is reported as such
    with store.GraphLock(gpath, wait=lock_wait):
        graph = store.load_graph(gpath, now)
        if graph is None:
            raise UsageError(f"{gpath}: no graph yet", "run `bme ingest` on the chat first")
        _check_lined_up(chat, graph)
        with_vectors = vectors_usable_by_st_bme(graph) if vectors is None else vectors
        value = header_graph(graph, with_vectors=with_vectors)
        result = AttachResult(changed=False, nodes=len(graph.nodes), edges=len(graph.edges),
                              failed=[r.span for r in failed_batches(graph)])
        if EXPORT_MODEL_KEY in value:
            result.vectors = sum(n["embedding"] is not None for n in value["nodes"])
            result.vectors_model = value[EXPORT_MODEL_KEY]

        def change(meta: dict) -> bool:
            old = meta.get(CHAT_GRAPH_KEY)
            if old is not None and _digest(old) == value[ATTACH_KEY]:
                return False  # already there, as it is now
            _refuse_theirs(chat_path, old, force, "replacing")
            meta[CHAT_GRAPH_KEY] = value
            return True

        backup = backup_path(chat_path)
        result.changed = update_chat_metadata(chat_path, change, backup=backup)
        result.backup = backup if result.changed else None
    return result


def _check_lined_up(chat: Chat, graph: Graph) -> None:
    """Refuse when processed messages were edited since: seqs in the graph would point elsewhere."""
    edits = check_edits(chat, graph)
    if edits:
        shown = ", ".join(f"#{e.seq} {e.kind}" for e in edits[:6])
        raise ChatChangedError(f"{chat.path}: messages turned into memories changed since the last "
                               f"ingest ({shown}); nothing was written",
                               "run `bme ingest` on the chat first (it says how to rebuild)")


def detach(chat_path: Path, *, graph_override: Path | None = None, force: bool = False,
           lock_wait: float = 0.0) -> AttachResult:
    """Remove chat_metadata.st_bme_graph from the header, keeping a backup.

    Without `force`, only a graph bme attached and nobody changed since is removed.
    """
    gpath = store.sidecar_path(chat_path) if graph_override is None else graph_override

    def change(meta: dict) -> bool:
        old = meta.get(CHAT_GRAPH_KEY, None)
        if CHAT_GRAPH_KEY not in meta:
            return False
        _refuse_theirs(chat_path, old, force, "removing")
        del meta[CHAT_GRAPH_KEY]
        return True

    open_for_read(chat_path).close()   # a missing chat is reported as such, before the lock
    with store.GraphLock(gpath, wait=lock_wait):
        backup = backup_path(chat_path)
        changed = update_chat_metadata(chat_path, change, backup=backup)
    return AttachResult(changed=changed, backup=backup if changed else None)
