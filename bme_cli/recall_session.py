"""`bme recall` as library calls: open a chat with its graph indexed, answer queries, save.

`open_recall` gives a RecallSession. Read-only (batch mode, --no-reinforce), a saved index
that still holds (index_cache) is all it loads: the sidecar is not parsed, and nodes are
materialised only as the block needs them. Otherwise the graph is loaded and indexed, and
the index saved for the next process. With reinforcement the graph is loaded under the lock
as always, the index taken from the cache when it holds, and after the save the cache is
written again for the new sidecar, so the next recall finds it too.
"""
from __future__ import annotations

import dataclasses
import errno
import random
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from . import index_cache
from .blas import one_blas_thread
from .chat import Chat, read_chat
from .errors import StoreError
from .graph.model import Graph, now_ms
from .graph.schema import Schema
from .memory.excerpt_vectors import stored_vectors
from .memory.excerpts import ExcerptIndex
from .memory.index import RecallIndex
from .memory.packed import (indexed_graph, pack_excerpts, pack_recall_index, time_window, unpack_excerpts,
                            unpack_recall_index)
from .memory.query import Query, build_query
from .memory.recall import recall
from .memory.recall_result import RecallResult
from .workflow import graph_path_for, make_context, processed_units, reading

if TYPE_CHECKING:
    from .providers.factory import Providers
    from .settings import Settings

Warn = Callable[[str], None]


class RecallSession:
    """One chat's graph indexed once, answering one query or a whole batch."""

    def __init__(self, chat: Chat, graph: Any, settings: Settings, providers: Providers, schema: Schema, *,
                 index: RecallIndex | None = None, excerpts: ExcerptIndex | None = None,
                 seed: int | None = None, existed: bool = True):
        self.chat, self.graph, self.existed = chat, graph, existed
        self.settings, self.schema = settings, schema
        self.ctx = make_context(settings, providers, schema, chat, seed=seed)
        # Seeded, every query starts from the same point of the stream, so an answer does not
        # depend on the queries asked before it (a batch, one block per viewer).
        self.seed = seed
        self.full_index = index if index is not None else RecallIndex.build(graph, schema, now=self.ctx.now())
        self.excerpts = excerpts
        self.notes = _vector_notes(graph, self.full_index, providers, str(chat.path))
        # Vectors of another model than the embedder's are compared only with the queries'
        # own vectors (batch mode): a query the embedder made would match them by chance.
        self.index = _without_vectors(self.full_index) if self.notes and len(self.full_index.emb_rows) \
            else self.full_index
        self.save_to: Path | None = None  # the sidecar, when opened for writing

    def recall(self, text: str | None, *, reinforce: bool, explain: bool = False,
               embedding: list[float] | None = None, viewer: str | None = None) -> RecallResult:
        """Recall for `text`, or for the chat's latest user message and recent context; with
        `viewer`, only what that character witnessed (visibility on, no quotes of the chat)."""
        query = Query.from_text(text) if text is not None else build_query(self.chat.messages)
        m = self.settings.memory
        ctx, excerpts = self.ctx, self.excerpts
        if self.seed is not None:
            ctx = dataclasses.replace(ctx, rng=random.Random(self.seed))
        if viewer is not None:  # quotes carry no witnesses: left out, as with enable_visibility
            ctx = dataclasses.replace(ctx, viewer=viewer, settings=m.model_copy(update={"enable_visibility": True}))
            excerpts = None
        with one_blas_thread():
            result = recall(self.graph, self._index_for(embedding), query, ctx, query_embedding=embedding,
                            budget=m.budget, context_window=m.context_window,
                            chat_length=len(self.chat.messages), reinforce=reinforce, explain=explain,
                            excerpts=excerpts)
        if self.notes and embedding is None:
            result.warnings[:0] = self.notes
        return result

    def _index_for(self, embedding: Any) -> RecallIndex:
        """The index, with every vector when the query brings its own (recall checks its size)."""
        return self.full_index if embedding is not None else self.index

    def batch(self, items: list[dict]) -> Iterator[RecallResult]:
        """Recall for every query of a batch, read-only, models and index loaded once."""
        texts = [item["query"] for item in items]
        given = [item.get("embedding") for item in items]
        vectors = self._embed_batch([t for t, g in zip(texts, given) if g is None])
        for item, text, emb in zip(items, texts, given):
            if emb is None and vectors is not None:
                emb, vectors = vectors[0], vectors[1:]
            result = self.recall(text, reinforce=False, embedding=emb, viewer=item.get("viewer"))
            # echo the query exactly as given: batch callers match their lines on it
            yield dataclasses.replace(result, query=dataclasses.replace(result.query, text=text))

    def _embed_batch(self, texts: list[str]):  # noqa: ANN202 - numpy array or None
        """Embed every batch query in one call when the graph has vectors to compare with."""
        quoted = self.excerpts is not None and len(self.excerpts.emb_rows)
        if not texts or self.ctx.embedder is None or not (len(self.index.emb_rows) or quoted):
            return None
        return self.ctx.embedder.embed(texts)


def _vector_notes(graph: Any, index: RecallIndex, providers: Providers, chat: str) -> list[str]:
    """Why recall runs without the graph's vectors, if it does (empty when it has usable ones)."""
    recallable = int(index.recallable.sum())
    if not recallable:
        return []
    if not len(index.emb_rows):
        return [f"the graph's {recallable} memories have no vectors: recall uses names, words and links "
                f"only (run `bme reembed {chat}` to embed them)"]
    tag, embedder = graph.meta.embedding_model, providers.embedder
    if tag and embedder is not None and tag != embedder.model_id:
        return [f"the graph's vectors were made by {tag!r} but the embedder is {embedder.model_id!r}: they "
                f"are compared only with query vectors of their size (configure {tag!r}, pass an "
                f"\"embedding\" with each query, or run `bme reembed {chat}`)"]
    return []


def _without_vectors(index: RecallIndex) -> RecallIndex:
    """The index with no node vectors (its own arrays shared)."""
    return dataclasses.replace(index, emb=np.zeros((0, 0), np.float32), emb_norm=np.zeros(0, np.float32),
                               emb_rows=np.zeros(0, np.int64))


def _excerpt_model(settings: Settings, providers: Providers) -> str | None:
    """The model whose excerpt vectors an index holds ("" none), or None when excerpts are off:
    and while visibility filtering is on (who witnessed which message is not recorded yet)."""
    m = settings.memory
    if not m.excerpts or m.enable_visibility:
        return None
    return providers.embedder.model_id if providers.embedder is not None else ""


def _excerpt_index(chat: Chat, graph: Graph, model: str | None) -> ExcerptIndex | None:
    """The quotable units of the messages the graph has processed, with their stored vectors."""
    if model is None:
        return None
    vectors = stored_vectors(graph, model) if model else {}
    return ExcerptIndex.build(processed_units(chat, graph), vectors)


@contextmanager
def open_recall(chat_path: Path, settings: Settings, providers: Providers, schema: Schema, *,
                graph_override: Path | None = None, write: bool = False, lock_wait: float = 0.0,
                skip_bad_lines: bool = False, warn: Warn | None = None,
                seed: int | None = None) -> Iterator[RecallSession]:
    """A RecallSession for a chat; with write=True the lock is held for the whole block and
    `save_session` may be called on it."""
    from .graph import store  # only when the graph itself is read or written
    from .providers.calllog import chat_scope
    chat = read_chat(chat_path, skip_bad_lines=skip_bad_lines, on_warning=warn, **reading(settings))
    gpath = graph_path_for(chat_path, graph_override)
    model = _excerpt_model(settings, providers)
    now = now_ms()
    with chat_scope(chat_path), ExitStack() as held:  # model calls are logged under this chat
        if not (write and _locked(held, gpath, lock_wait, warn)):
            session = _read_only(chat, gpath, settings, providers, schema, model, now, seed,
                                 need_graph=graph_override is not None)
        else:
            graph = store.load_graph(gpath, now)
            existed = graph is not None
            graph = graph or Graph()
            key = index_cache.base_key(gpath, schema, model)
            cached = index_cache.load(gpath, key, chat.messages, now) if existed else None
            session = _session(chat, graph, settings, providers, schema, model, cached, seed, existed, now)
            session.save_to = gpath
        if graph_override is not None and warn is not None:
            _warn_if_foreign(session, gpath, warn)
        yield session


def _locked(held: ExitStack, gpath: Path, wait: float, warn: Warn | None) -> bool:
    """Take the graph's lock into `held`; False, with a notice, when its folder cannot be
    written (read-only, not ours): recall then reads without reinforcing, and saves nothing."""
    from .graph import store
    try:
        held.enter_context(store.GraphLock(gpath, wait=wait))
    except StoreError as e:
        if e.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        if warn is not None:
            warn(f"{e.message}: recalling without reinforcement, nothing is saved")
        return False
    return True


def _warn_if_foreign(session: RecallSession, gpath: Path, warn: Warn) -> None:
    """`--graph` naming a graph whose processed messages are not this chat's: one warning line
    (ingest refuses such a graph; recall still reads it, as asked)."""
    if not session.graph.meta.fingerprints:
        return  # an empty graph, or one made by ST-BME (which keeps none): nothing to compare
    from .memory.ingest import check_edits
    changed = check_edits(session.chat, session.graph)
    if changed:
        warn(f"warning: {gpath} was made from other messages than {session.chat.path}'s ({len(changed)} differ: "
             "another chat's graph, or this one was edited since); `bme ingest` would refuse it")


def _read_only(chat: Chat, gpath: Path, settings: Settings, providers: Providers, schema: Schema,
               model: str | None, now: int, seed: int | None, need_graph: bool = False) -> RecallSession:
    """The session of a read-only recall: from the saved index when it holds, else from the graph
    (need_graph: the graph too, for what the index does not keep, such as its fingerprints)."""
    key = index_cache.base_key(gpath, schema, model)
    cached = index_cache.load(gpath, key, chat.messages, now)
    if cached is not None and not need_graph:
        return _session(chat, None, settings, providers, schema, model, cached, seed, True, now)
    from .graph import store  # only when the graph itself is read
    read_at = time.time_ns()
    graph = store.load_graph(gpath, now)
    if graph is None:
        return RecallSession(chat, Graph(), settings, providers, schema, seed=seed, existed=False,
                             excerpts=_excerpt_index(chat, Graph(), model))
    if cached is not None:
        return _session(chat, graph, settings, providers, schema, model, cached, seed, True, now)
    session = _session(chat, graph, settings, providers, schema, model, None, seed, True, now)
    _persist(session, gpath, key, model, read_at)
    return session


def _session(chat: Chat, graph: Graph | None, settings: Settings, providers: Providers, schema: Schema,
             model: str | None, cached: tuple[dict, dict] | None, seed: int | None, existed: bool,
             now: int) -> RecallSession:
    """A session from the loaded graph (built, or from the cache with the graph's nodes), or from
    the cache alone (graph None: an IndexedGraph with nodes materialised on demand)."""
    if cached is None:
        assert graph is not None
        return RecallSession(chat, graph, settings, providers, schema, seed=seed, existed=existed,
                             excerpts=_excerpt_index(chat, graph, model))
    meta, arrays = cached
    index = unpack_recall_index(meta["recall"], arrays, schema, now, nodes=graph.nodes if graph else None,
                                graph=graph)
    if graph is None:
        graph = indexed_graph(meta["recall"], arrays, index)
        index.graph = graph
    excerpts = unpack_excerpts(meta["excerpts"], arrays) if model is not None else None
    return RecallSession(chat, graph, settings, providers, schema, index=index, excerpts=excerpts, seed=seed,
                         existed=existed)


def _persist(session: RecallSession, gpath: Path, key: dict, model: str | None, read_at: int | None) -> None:
    """Save the session's index for the next process (no error if it cannot be written)."""
    parts = {"recall": pack_recall_index(session.full_index, session.graph)}
    if session.excerpts is not None:
        parts["excerpts"] = pack_excerpts(session.excerpts)
    digest = index_cache.processed_digest(session.chat.messages, session.graph.last_processed_seq) \
        if model is not None else None
    index_cache.save(gpath, {**key, "sidecar": index_cache.file_key(gpath) if read_at is None else key["sidecar"]},
                     digest, time_window(session.graph, session.full_index.now), parts, read_at=read_at)


def save_session(session: RecallSession, providers: Providers) -> None:
    """Save the (reinforced) graph of a session opened for writing, then its index for the new sidecar."""
    from .graph import store  # only when the graph itself is read or written
    gpath = session.save_to
    if gpath is None:
        raise ValueError("the session was not opened for writing")
    store.save_graph(gpath, session.graph)
    model = _excerpt_model(session.settings, providers)
    _persist(session, gpath, index_cache.base_key(gpath, session.schema, model), model, None)
