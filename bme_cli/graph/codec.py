"""Graph documents in: which kind a document is, and the Graph in it (spec §1.5-1.6).

Accepted: ST-BME exports and bare v3 graphs (v1/v2 migrated), bme exports (with
`bmeEmbeddingModel` and vectors), bme sidecars, and SillyTavern chats whose header line
carries `chat_metadata.st_bme_graph` (an object, or the JSON string ST-BME also reads).
Everything is validated before a Graph is built; errors are one-line GraphFormatErrors
naming the source.

This module is also where the rest of bme finds the graph document API: the pieces live
in `jsonio` (JSON text), `checks`/`columns`/`v3` (validation and building), `export`
(ST-BME's export text) and `sidecar` (bme's own file format), and are re-exported here.
"""
from __future__ import annotations

import mmap
import re
from dataclasses import dataclass
from typing import Any

from ..errors import GraphFormatError
from .checks import migrate_v3
from .export import EXPORT_MODEL_KEY, export_document
from .inline import cut_vectors
from .jsonio import (JsonTextError, dumps_checked, finite_tree, no_gc, parse_json, quote, read_json, show,
                     to_utf8, try_read_json)
from .model import Graph
from .sidecar import SIDECAR_FORMAT, graph_from_sidecar, read_sidecar_bytes
from .v3 import edge_dict, graph_dict, graph_from_v3_document, node_dict

CHAT_GRAPH_KEY = "st_bme_graph"
ATTACH_KEY = "bmeAttached"  # `bme attach`'s digest of the graph it put in a chat header

KIND_SIDECAR = "bme-sidecar"
KIND_BME_EXPORT = "bme-export"
KIND_STBME = "st-bme-graph"
KIND_CHAT = "sillytavern-chat"
KIND_METADATA = "chat-metadata"
KIND_UNKNOWN = "unknown"
_NON_SPACE, _NON_SPACE_B = re.compile(r"\S"), re.compile(rb"\S")

__all__ = ["ATTACH_KEY", "CHAT_GRAPH_KEY", "EXPORT_MODEL_KEY", "KIND_BME_EXPORT", "KIND_CHAT", "KIND_METADATA",
           "KIND_SIDECAR", "KIND_STBME", "KIND_UNKNOWN", "SIDECAR_FORMAT", "ImportedGraph",
           "detect_document", "dumps_checked", "edge_dict", "export_document", "finite_tree",
           "graph_dict", "graph_from_any", "graph_from_header_line", "graph_from_v3_document",
           "migrate_v3", "no_gc", "node_dict", "parse_json", "quote", "show", "to_utf8"]


@dataclass
class ImportedGraph:
    """A graph read from some document, the kind of document, and its vectors' model tag."""

    graph: Graph
    kind: str
    embedding_model: str | None = None

    def drop_embeddings_unless(self, model_id: str | None) -> int:
        """Null every vector unless the document's tag equals model_id; returns how many."""
        if self.embedding_model is not None and self.embedding_model == model_id:
            return 0
        dropped = 0
        for n in self.graph.nodes:
            if n.embedding is not None:
                n.embedding, dropped = None, dropped + 1
        self.graph.meta.embedding_model = self.graph.meta.embedding_dim = None
        return dropped


def detect_document(obj: Any) -> str:
    """Which kind of graph document a parsed JSON value is (one of the KIND_* names)."""
    if not isinstance(obj, dict):
        return KIND_UNKNOWN
    if obj.get("format") == SIDECAR_FORMAT:
        return KIND_SIDECAR
    if "chat_metadata" in obj:
        return KIND_CHAT
    if CHAT_GRAPH_KEY in obj:
        return KIND_METADATA
    if "nodes" in obj or "version" in obj and "edges" in obj:
        return KIND_BME_EXPORT if EXPORT_MODEL_KEY in obj else KIND_STBME
    return KIND_UNKNOWN


def graph_from_any(text_or_obj: Any, source: str, now: int) -> ImportedGraph:
    """Read any supported document (text, bytes, a mapped file, or parsed JSON) into an ImportedGraph."""
    if isinstance(text_or_obj, (str, bytes, bytearray, mmap.mmap)):
        return _from_text(text_or_obj, source, now)
    return _from_object(text_or_obj, source, now)


def graph_from_header_line(line: str | bytes, source: str, now: int) -> ImportedGraph | None:
    """The graph in a SillyTavern chat's header line; None if the line is not a chat header.

    A chat header with no graph, or a bad one, raises GraphFormatError.
    """
    if isinstance(line, str):
        text, marker, lead, sidecar = line, '"chat_metadata"', "\ufeff \t", '{"format"'
    else:
        text, marker, lead, sidecar = bytes(line), b'"chat_metadata"', b"\xef\xbb\xbf \t", b'{"format"'
    if marker not in text or text.lstrip(lead).startswith(sidecar):
        return None  # no header; and a one-line sidecar is never read as one

    def build(obj: Any) -> ImportedGraph | None:
        if isinstance(obj, dict) and "chat_metadata" in obj:
            return _from_object(obj, source, now)
        return None

    try:
        return read_json(text, source, build)
    except JsonTextError:
        return None


def _from_text(data: str | bytes | bytearray | mmap.mmap, source: str, now: int) -> ImportedGraph:
    nl, pattern = (data.find("\n"), _NON_SPACE) if isinstance(data, str) else (data.find(b"\n"), _NON_SPACE_B)
    if nl < 0 or not pattern.search(data, nl + 1):
        return _whole(data, source, now)  # one line (and blank ones): never a chat header
    first = data[:nl]
    header = graph_from_header_line(first, source, now)
    if header is not None:
        return header
    try:
        return _whole(data, source, now)
    except GraphFormatError:
        if _is_chat_message(first, source):
            raise GraphFormatError(f"{source}: a SillyTavern chat without a header line (chat_metadata); "
                                   "it carries no ST-BME graph") from None
        raise


def _whole(data: str | bytes | bytearray | mmap.mmap, source: str, now: int) -> ImportedGraph:
    if not isinstance(data, str):
        graph = read_sidecar_bytes(data, source, now)  # the fast path for bme's own layout
        if graph is not None:
            return ImportedGraph(graph, KIND_SIDECAR, graph.meta.embedding_model)
        imported = _with_cut_vectors(data, source, now)
        if imported is not None:
            return imported
    return read_json(data, source, lambda obj: _from_object(obj, source, now))


def _with_cut_vectors(data: bytes | bytearray | mmap.mmap, source: str, now: int) -> ImportedGraph | None:
    """An ST-BME graph or bme export read with its embedding lists cut out (`graph.inline`).

    None whenever that shortcut does not apply or anything is amiss: the whole text is then
    read as before, which gives the same graph or reports the problem in its usual words.
    """
    cut = cut_vectors(data)
    if cut is None:
        return None

    def build(obj: Any) -> ImportedGraph:
        kind = detect_document(obj)
        if kind not in (KIND_STBME, KIND_BME_EXPORT):
            raise GraphFormatError(f"{source}: not a bare graph")  # caught: the ordinary path decides
        graph = graph_from_v3_document(obj, source, now, same_dim=kind == KIND_BME_EXPORT, cut=cut)
        return ImportedGraph(graph, kind, _model_tag(graph, source))

    return try_read_json(cut.head, build)


def _is_chat_message(first: str | bytes, source: str) -> bool:
    try:
        obj = parse_json(first, source)
    except GraphFormatError:
        return False
    return isinstance(obj, dict) and ("mes" in obj or "is_user" in obj)


def _from_object(obj: Any, source: str, now: int) -> ImportedGraph:
    kind = detect_document(obj)
    if kind == KIND_SIDECAR:
        graph = graph_from_sidecar(obj, source, now)
        return ImportedGraph(graph, kind, graph.meta.embedding_model)
    if kind in (KIND_CHAT, KIND_METADATA):  # `bme attach` tags its vectors as an export does
        graph = _graph_from_metadata(obj, kind, source, now)
        graph.extra.pop(ATTACH_KEY, None)
        return ImportedGraph(graph, kind, _model_tag(graph, source))
    if kind == KIND_UNKNOWN:
        found = f"keys {', '.join(show(k) for k in list(obj)[:5])}" if isinstance(obj, dict) \
            else f"a JSON {type(obj).__name__}"
        raise GraphFormatError(f"{source}: not an ST-BME graph, a bme sidecar or a SillyTavern chat ({found})")
    graph = graph_from_v3_document(obj, source, now, same_dim=kind == KIND_BME_EXPORT)
    return ImportedGraph(graph, kind, _model_tag(graph, source))


def _model_tag(graph: Graph, source: str) -> str | None:
    """Pop the vectors' model tag (bmeEmbeddingModel) off the graph into its meta; returns it."""
    tag = graph.extra.pop(EXPORT_MODEL_KEY, None)
    if tag is not None and type(tag) is not str:
        raise GraphFormatError(f"{source}: {EXPORT_MODEL_KEY} must be a string (found {show(tag)})")
    if tag is not None:
        graph.meta.embedding_model = tag
        graph.meta.embedding_dim = next((len(n.embedding) for n in graph.nodes
                                         if n.embedding is not None), None)
    return tag


def _graph_from_metadata(obj: dict, kind: str, source: str, now: int) -> Graph:
    meta = obj.get("chat_metadata") if kind == KIND_CHAT else obj
    if not isinstance(meta, dict) or meta.get(CHAT_GRAPH_KEY) is None:
        raise GraphFormatError(f"{source}: the chat header has no chat_metadata.{CHAT_GRAPH_KEY} "
                               "(no ST-BME graph in this chat)")
    value = meta[CHAT_GRAPH_KEY]
    where = f"{source} (chat_metadata.{CHAT_GRAPH_KEY})"
    if isinstance(value, str):  # ST-BME's deserializeGraph also accepts a JSON string
        try:
            return read_json(value, where, lambda v: graph_from_v3_document(v, where, now))
        except JsonTextError as exc:  # bad JSON in the header's string, not a bad header line
            raise GraphFormatError(exc.message, hint=exc.hint) from None
    return graph_from_v3_document(value, where, now)

