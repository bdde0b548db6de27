"""What each command does, as plain library calls: find chats, open a chat with its graph
under the lock, build the pipeline context, save. No typer, no rich: the CLI parses and
renders, this module does the work in between.

Of ingesting, this module only opens a chat with its graph (`open_chat_graph`) and builds the
context; `ingest_runner` runs chats through the pipeline under the lock, in threads, and
`memory/ingest.py` is the pipeline step itself (pure: batches in, graph changes out).
"""
from __future__ import annotations

import glob
import os
import random
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .chat import Chat, Message, read_chat
from .errors import BadInputError, UsageError
from .graph.model import Graph, now_ms
from .graph.schema import Schema, validate_schema
from .memory.context import MemoryContext
from .memory.excerpt_vectors import clear_vectors, embed_units
from .memory.excerpts import chat_units
from .story import StoryOptions, StoryReader
from .text import detect_language

if TYPE_CHECKING:  # the read path (recall) imports no more than it uses: see docs/performance.md
    from .chat_stream import StreamedChat
    from .memory.stats import GraphStats
    from .providers.factory import Providers
    from .settings import Settings

CHAT_SUFFIX = ".jsonl"
LANGUAGE_SAMPLE = 200  # the first messages whose text tells a chat's language
Warn = Callable[[str], None]


def find_chats(paths: list[str], warn: Warn | None = None) -> list[Path]:
    """Chat files named by files, folders (searched recursively) and globs, in a stable order.

    A .jsonl a folder or glob turns up that is not a chat (a queries file, say) is left out,
    with a warning; a file named outright is always read, so that its problem is reported."""
    found: list[Path] = []
    for raw in paths:
        matches = [Path(p) for p in sorted(glob.glob(raw, recursive=True))] if glob.has_magic(raw) else [Path(raw)]
        if not matches:
            raise UsageError(f"{raw}: no file matches this pattern")
        for p in matches:
            if p.is_dir():
                found.extend(_chats_among(sorted(q for q in p.rglob(f"*{CHAT_SUFFIX}") if q.is_file()), warn))
            elif not glob.has_magic(raw):
                found.append(p)   # named outright: read it, so that its problem is reported
            elif p.exists():
                found.extend(_chats_among([p], warn))
    unique = list(dict.fromkeys(found))
    if not unique:
        raise UsageError("no chat files found", "name .jsonl files, folders that hold them, or globs")
    return unique


def _chats_among(files: list[Path], warn: Warn | None) -> list[Path]:
    from .chat import looks_like_chat
    chats = [f for f in files if looks_like_chat(f)]
    for f in files:
        if f not in chats and warn is not None:
            warn(f"{f}: left out, not a SillyTavern chat (its first line is neither a header nor a message)")
    return chats


def load_schema(path: str | None) -> Schema:
    """The default schema, or a custom one read from a JSON file and validated (spec §2)."""
    if not path:
        return Schema.default()
    import json
    p = Path(path)
    try:
        types = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadInputError(f"{p}: schema file not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadInputError(f"{p}: not a readable JSON schema ({e})") from None
    if isinstance(types, dict) and "nodeTypeSchema" in types:
        types = types["nodeTypeSchema"]
    try:
        validate_schema(types)
    except BadInputError as e:
        raise BadInputError(f"{p}: {e.message}") from None
    return Schema(types)


@dataclass
class ChatGraph:
    """One chat opened for a command: the messages, its graph and where the graph lives."""

    chat: Chat
    graph: Graph
    graph_path: Path
    existed: bool
    changed: bool = True  # commands that can tell clear it when they left the graph as it was
    save: Callable[[Graph], None] = field(repr=False, default=lambda g: None)


def graph_path_for(chat_path: Path, override: Path | None) -> Path:
    """The sidecar of a chat: `--graph PATH` when given, else `<chat>.bme.json` beside it (beside
    the file a symlinked chat points to, so a chat reached both ways has one graph)."""
    from .graph import store
    if override is not None:
        return override
    return store.sidecar_path(Path(os.path.realpath(chat_path)) if os.path.islink(chat_path) else chat_path)


@contextmanager
def open_chat_graph(chat_path: Path, *, graph_override: Path | None = None, write: bool = False,
                    lock_wait: float = 0.0, skip_bad_lines: bool = False,
                    warn: Warn | None = None, settings: Settings | None = None,
                    keep_text: int | None = None, start_over: bool = False,
                    streamed: bool = False) -> Iterator[ChatGraph]:
    """Read a chat as `settings` say (story text, size cap; of the first `keep_text` messages
    only when given) and its graph (an empty one if none yet); with write=True, hold the lock
    for the whole block and hand out an atomic `save`. streamed (read-only): the chat is a
    chat_stream.StreamedChat, its messages read again as the block streams them.

    start_over (with write, for `ingest --rebuild`): a sidecar bme cannot read is moved aside
    (store.set_aside) and an empty graph is handed out instead of failing."""
    if streamed:
        from .chat_stream import open_streamed
        with open_streamed(chat_path, skip_bad_lines=skip_bad_lines, on_warning=warn, head=LANGUAGE_SAMPLE,
                           **reading(settings)) as chat:
            yield from _with_graph(chat, chat_path, graph_override, False, lock_wait, warn, start_over)
        return
    chat = read_chat(chat_path, skip_bad_lines=skip_bad_lines, on_warning=warn, keep_text=keep_text,
                     **reading(settings))
    yield from _with_graph(chat, chat_path, graph_override, write, lock_wait, warn, start_over)


def _with_graph(chat, chat_path: Path, graph_override: Path | None, write: bool, lock_wait: float,  # noqa: ANN001
                warn: Warn | None, start_over: bool) -> Iterator[ChatGraph]:
    """open_chat_graph's block once the chat is read: its graph, locked and saved with write."""
    from .graph import store
    from .providers.calllog import chat_scope
    gpath, now = graph_path_for(chat_path, graph_override), now_ms()
    with chat_scope(chat_path):  # model calls in the block are logged under this chat
        if not write:
            graph = store.load_graph(gpath, now)
            yield ChatGraph(chat, graph or Graph(), gpath, graph is not None)
            return
        with store.GraphLock(gpath, wait=lock_wait):
            graph = _load_or_set_aside(gpath, warn, now) if start_over else store.load_graph(gpath, now)
            yield ChatGraph(chat, graph or Graph(), gpath, graph is not None,
                            save=lambda g: store.save_graph(gpath, g))


def _load_or_set_aside(gpath: Path, warn: Warn | None, now: int) -> Graph | None:
    from .errors import GraphFormatError
    from .graph import store
    try:
        return store.load_graph(gpath, now)
    except GraphFormatError as exc:
        aside = store.set_aside(gpath)
        if warn is not None:
            warn(f"{exc.message}; moved it to {aside.name} and started a new graph")
        return None


def story_options(settings: Settings) -> StoryOptions:
    """The `[story]` settings as the options the chat reader takes."""
    return StoryOptions(**settings.story.model_dump())


def reading(settings: Settings | None) -> dict[str, Any]:
    """read_chat's options from the settings (story text, size cap); its defaults for None."""
    return {} if settings is None else {"story": story_options(settings), "max_bytes": settings.max_input_bytes}


@dataclass
class MessageView:
    """One message as bme reads it: the file's `mes` and speaker, the story text, and what went."""

    message: Message
    dropped: list[str]

    def as_json(self, *, raw: bool = False) -> dict:
        """Plain data for `bme show --format json`; the raw `mes` only when asked for."""
        m = self.message
        data = {"seq": m.seq, "line": m.line_no, "role": m.role, "name": m.name,
                "file_name": m.raw_name, "hidden": m.is_system, "raw_chars": len(m.raw),
                "story_chars": len(m.text), "dropped": self.dropped, "text": m.text}
        return {**data, "raw": m.raw} if raw else data


def read_story_chat(chat_path: Path, settings: Settings, *, skip_bad_lines: bool = False,
                    warn: Warn | None = None) -> Chat:
    """A chat read as memory reads it (its story text chosen by the `[story]` settings)."""
    return read_chat(chat_path, skip_bad_lines=skip_bad_lines, on_warning=warn, **reading(settings))


def message_views(chat: Chat, settings: Settings, seqs: range | None = None) -> list[MessageView]:
    """The messages `seqs` of a chat (all when None), each with what its cleaning dropped."""
    reader = StoryReader(story_options(settings), user_name=chat.user_name,
                         character_name=chat.character_name)
    views = []
    for m in chat.messages if seqs is None else [chat.messages[s] for s in seqs]:
        notes: list[str] = []  # a second cleaning, now listening: same text, plus the notes
        reader.clean(m.raw, is_user=m.is_user, speaker=m.name, notes=notes)
        views.append(MessageView(m, _counted(notes)))
    return views


def _counted(notes: list[str]) -> list[str]:
    """["<think>", "<think>", "OOC note"] -> ["<think> x2", "OOC note"], first-seen order."""
    counts: dict[str, int] = {}
    for n in notes:
        counts[n] = counts.get(n, 0) + 1
    return [n if c == 1 else f"{n} x{c}" for n, c in counts.items()]


def chat_language(chat: "Chat | StreamedChat", setting: str) -> str:
    """The memory language: the setting when fixed, else detected from the chat's text."""
    if setting in ("zh", "en"):
        return setting
    head = chat.messages[:LANGUAGE_SAMPLE] if isinstance(chat, Chat) else chat.head  # a StreamedChat
    sample = "\n".join(m.text for m in head if not m.is_system)
    return detect_language(sample)


def make_context(settings: Settings, providers: Providers, schema: Schema, chat: Chat | None,
                 *, seed: int | None = None) -> MemoryContext:
    """The pipeline context for one chat run."""
    lang = chat_language(chat, settings.memory.memory_lang) if chat else (
        settings.memory.memory_lang if settings.memory.memory_lang != "auto" else "en")
    return MemoryContext(chat=providers.chat, embedder=providers.embedder, schema=schema,
                         settings=settings.memory, rng=random.Random(seed), language=lang,
                         viewer=chat.character_name if chat else None,
                         reranker=getattr(providers, "reranker", None))


def chat_stats(chat_path: Path, graph_override: Path | None, schema: Schema, settings: Settings, *,
               skip_bad_lines: bool = False, warn: Warn | None = None) -> GraphStats:
    """Everything `bme stats` shows for one chat, file sizes included."""
    from .memory.stats import collect_stats
    with open_chat_graph(chat_path, graph_override=graph_override, skip_bad_lines=skip_bad_lines,
                         warn=warn, settings=settings, keep_text=LANGUAGE_SAMPLE) as cg:
        s = collect_stats(cg.chat, cg.graph, schema, graph_path=str(cg.graph_path),
                          graph_exists=cg.existed, language=chat_language(cg.chat, settings.memory.memory_lang),
                          include_greeting=settings.memory.include_greeting)
    s.chat_bytes = chat_path.stat().st_size
    s.graph_bytes = cg.graph_path.stat().st_size if cg.existed else 0
    return s


def import_graph(chat_path: Path, source: Path, *, now: int, graph_override: Path | None, force: bool,
                 lock_wait: float, embedding_model: str | None, vectors_model: str | None = None,
                 max_bytes: int | None = None) -> str:
    """Validate `source` completely, then replace the chat's graph with it; returns a summary line.

    A non-empty graph is replaced only with force, and then kept as `<sidecar>.bak`.
    Vectors are kept when the document's model tag is the configured embedder's
    (`embedding_model`), or when the caller names the model that made them (`vectors_model`,
    `bme import --embedding-model`: ST-BME files carry no tag); otherwise they are dropped and
    the summary says how to keep or fill them. A source over `max_bytes` is refused unread.
    `now` (epoch ms) stands in for times the document leaves out.
    """
    from .graph import store
    imported = store.read_document(source, now, max_bytes)  # of a chat file, only the header line
    graph = imported.graph
    vectors = _imported_vectors(imported, embedding_model, vectors_model, source, chat_path)
    gpath = graph_path_for(chat_path, graph_override)
    with store.GraphLock(gpath, wait=lock_wait):
        if force:  # never read what is there: corrupt, newer or foreign, it is kept as .bak
            store.replace_with_backup(gpath, graph)
        else:
            current = store.load_graph(gpath, now)  # an unreadable file raises: it is not overwritten
            if current is not None and current.nodes:
                raise UsageError(f"{gpath} already holds {len(current.nodes)} nodes",
                                 "pass --force to replace it (the old graph is kept as .bak)")
            store.save_graph(gpath, graph)
    return f"imported {len(graph.nodes)} nodes and {len(graph.edges)} edges into {gpath}; {vectors}"


def _imported_vectors(imported, configured: str | None, declared: str | None,  # noqa: ANN001 - ImportedGraph
                      source: Path, chat: Path) -> str:
    """Keep or drop an imported graph's vectors (see import_graph); what happened, for the summary."""
    from .memory.embed import clear_embeddings
    graph, tag = imported.graph, imported.embedding_model
    dims = sorted({len(n.embedding) for n in graph.nodes if n.embedding is not None})
    if not dims:
        return f"the file holds no vectors (`bme reembed {chat}` embeds the nodes)"
    if declared is not None:
        if tag is not None and tag != declared:
            raise UsageError(f"{source} says its vectors were made by {tag!r}, not {declared!r}",
                             f"pass --embedding-model {tag}, or leave it out")
        if len(dims) > 1:
            raise UsageError(f"{source} holds vectors of {len(dims)} sizes ({', '.join(map(str, dims))}); "
                             "one model makes one size", "import without --embedding-model to drop them")
        graph.meta.embedding_model, graph.meta.embedding_dim = declared, dims[0]
        return f"{_count(graph)} vectors kept ({declared}, {dims[0]}-d)"
    if tag is not None and tag == configured:
        return f"{_count(graph)} vectors kept ({tag})"
    count = clear_embeddings(graph)
    why = (f"they were made by {tag!r}, the embedder is {configured!r}" if tag is not None
           else "an ST-BME file does not say which model made them")
    model = tag or "MODEL"
    return (f"{count} vectors dropped: {why}; to keep them, import again with --embedding-model {model} "
            f"(and --force), or run `bme reembed {chat}` to embed every node with the configured model")


def _count(graph: Graph) -> int:
    return sum(n.embedding is not None for n in graph.nodes)


def read_queries(path: Path) -> list[dict]:
    """Batch-mode queries: JSON Lines of {"query": str, optional "embedding": [float], "viewer"}.

    A line that is not such an object becomes {"line": N, "error": why}, in its place, so
    one bad line costs only its own answer."""
    import stat
    try:
        mode = path.stat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # /dev/zero would never end
            raise BadInputError(f"{path} is not a regular file", "pass a .jsonl file of queries")
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise BadInputError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInputError(f"{path}: cannot read ({e})") from None
    out: list[dict] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        out.append(_query_line(line, no))
    return out


def _query_line(line: str, no: int) -> dict:
    import json
    try:
        item = json.loads(line)
    except json.JSONDecodeError as e:
        return {"line": no, "error": f"not valid JSON ({e.msg} at column {e.colno})"}
    if not isinstance(item, dict) or not isinstance(item.get("query"), str):
        return {"line": no, "error": 'needs a string "query"'}
    if item.get("viewer") is not None and not isinstance(item["viewer"], str):
        return {"line": no, "error": '"viewer" must be a name (a string)'}
    return item


def processed_units(chat: Chat, graph: Graph) -> list:
    """The excerpt units of every message the graph has processed (what ingest embeds)."""
    return chat_units(m for m in chat.messages if m.seq <= graph.last_processed_seq)


def reembed(chat_path: Path, graph_override: Path | None, schema: Schema, providers: Providers, *,
            lock_wait: float = 0.0, settings: Settings | None = None) -> int:
    """Drop every vector and embed all active nodes with the configured model; returns how many."""
    from .memory.embed import clear_embeddings, embed_missing
    with open_chat_graph(chat_path, graph_override=graph_override, write=True, lock_wait=lock_wait,
                         settings=settings) as cg:
        if not cg.existed:
            raise UsageError(f"{cg.graph_path}: no graph yet", "run `bme ingest` on the chat first")
        clear_embeddings(cg.graph)
        clear_vectors(cg.graph)
        count = embed_missing(cg.graph, schema, providers.embedder)
        embed_units(cg.graph, processed_units(cg.chat, cg.graph), providers.embedder, keep_others=False)
        cg.save(cg.graph)
    return count
