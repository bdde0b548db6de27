"""The sidecar store: layout, round trip, atomic writes under faults, refusal to overwrite, locking."""
from __future__ import annotations

import base64
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from bme_cli.errors import GraphFormatError, LockedError, StoreError
from bme_cli.graph.codec import KIND_CHAT, KIND_STBME, export_document, graph_from_any
from bme_cli.graph.model import Graph
from bme_cli.graph.ops import add_edge, add_node, make_node
from bme_cli import workflow
from bme_cli.graph.store import (GraphLock, backup_path, load_graph, lock_path, read_document,
                                 replace_with_backup, save_graph, sidecar_path, write_text_atomic)

NOW = 1_700_000_000_000


def sample_graph(nodes: int = 5, dim: int | None = 6) -> Graph:
    counter = iter(range(1, 10_000))
    new_id = lambda: f"id-{next(counter)}"  # noqa: E731
    g = Graph(last_processed_seq=nodes)
    made = [add_node(g, make_node("event", {"summary": f"事件 {i}"}, i, NOW + i, new_id=new_id))
            for i in range(nodes)]
    for a, b in zip(made, made[1:]):
        add_edge(g, a.id, b.id, "related", 0.5, NOW, new_id=new_id)
    if dim:
        rng = np.random.default_rng(7)
        for n in made[:-1]:  # the last node has no vector yet
            n.embedding = rng.standard_normal(dim).astype(np.float32)
        g.meta.embedding_model, g.meta.embedding_dim = "bge-small", dim
    g.meta.extraction_count, g.meta.fingerprints = 3, {0: "f0", 12: "f12"}
    g.meta.extra = {"lastSynopsisAt": 2}
    return g


def temp_litter(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.fixture
def sidecar(tmp_path: Path) -> Path:
    path = tmp_path / "chat.bme.json"
    save_graph(path, sample_graph())
    return path


# -- paths and layout -----------------------------------------------------------------------
def test_sidecar_sits_beside_the_chat_with_bme_json_suffix(tmp_path):
    assert sidecar_path(tmp_path / "a.jsonl") == tmp_path / "a.bme.json"
    assert sidecar_path(tmp_path / "Story.JSONL") == tmp_path / "Story.bme.json"
    assert sidecar_path(tmp_path / "notes") == tmp_path / "notes.bme.json"
    assert backup_path(tmp_path / "a.bme.json") == tmp_path / "a.bme.json.bak"
    assert lock_path(tmp_path / "a.bme.json") == tmp_path / "a.bme.json.lock"


def test_sidecar_layout_keeps_an_st_bme_graph_under_graph(sidecar):
    doc = json.loads(sidecar.read_bytes())
    assert list(doc) == ["format", "formatVersion", "graph", "bme"]
    assert (doc["format"], doc["formatVersion"]) == ("bme-sidecar", 1)
    assert all(n["embedding"] is None for n in doc["graph"]["nodes"])
    imported = graph_from_any(doc["graph"], "jq .graph", NOW)
    assert imported.kind == KIND_STBME
    assert export_document(imported.graph) == export_document(sample_graph())
    emb = doc["bme"]["embedding"]
    assert (emb["model"], emb["dimension"], emb["count"], len(emb["ids"])) == ("bge-small", 6, 4, 4)
    raw = np.frombuffer(base64.b64decode(emb["vectors"]), dtype="<f4")
    assert raw.shape == (24,)
    assert doc["bme"]["fingerprints"] == {"0": "f0", "12": "f12"} and doc["bme"]["lastSynopsisAt"] == 2
    assert sidecar.read_bytes().endswith(b'"}}}\n') and sidecar.read_bytes().count(b"\n") == 1


def test_save_then_load_round_trips_graph_meta_and_exact_vectors(sidecar):
    original = sample_graph()
    loaded = load_graph(sidecar, NOW)
    assert export_document(loaded, with_embeddings=True) == export_document(original, with_embeddings=True)
    assert loaded.meta == original.meta
    vectors = [n.embedding for n in loaded.nodes if n.embedding is not None]
    assert len(vectors) == 4 and loaded.nodes[-1].embedding is None
    assert all(v.dtype == np.float32 and v.shape == (6,) for v in vectors)
    assert all(v.base is vectors[0].base for v in vectors)  # rows of one matrix
    assert not vectors[0].flags.writeable  # replace vectors, never edit them in place


def test_lone_surrogates_from_st_bme_survive_save_and_load(tmp_path):
    g = sample_graph()
    g.nodes[0].fields["summary"] = "half an emoji \ud83d here"
    path = tmp_path / "s.bme.json"
    save_graph(path, g)
    assert b"\\ud83d" in path.read_bytes()
    assert load_graph(path, NOW).nodes[0].fields["summary"] == "half an emoji \ud83d here"


def test_graph_without_vectors_round_trips(tmp_path):
    path = tmp_path / "x.bme.json"
    save_graph(path, sample_graph(dim=None))
    loaded = load_graph(path, NOW)
    assert all(n.embedding is None for n in loaded.nodes) and loaded.meta.embedding_model is None


def test_new_sidecar_is_private_and_existing_mode_is_kept(tmp_path, sidecar):
    assert sidecar.stat().st_mode & 0o777 == 0o600
    sidecar.chmod(0o640)
    save_graph(sidecar, sample_graph())
    assert sidecar.stat().st_mode & 0o777 == 0o640


def test_missing_sidecar_loads_as_none(tmp_path):
    assert load_graph(tmp_path / "none.bme.json", NOW) is None


def test_pretty_printed_sidecar_still_loads(sidecar):
    sidecar.write_text(json.dumps(json.loads(sidecar.read_bytes()), indent=2))
    loaded = load_graph(sidecar, NOW)
    assert export_document(loaded, True) == export_document(sample_graph(), True)


def test_times_a_sidecar_leaves_out_come_from_the_callers_clock(sidecar):
    doc = json.loads(sidecar.read_bytes())
    del doc["graph"]["nodes"][0]["createdTime"], doc["graph"]["nodes"][0]["lastAccessTime"]
    sidecar.write_text(json.dumps(doc, indent=2))
    first = load_graph(sidecar, now=42).nodes[0]
    assert (first.created_time, first.last_access_time) == (42, 42)


# -- refusing bad files ---------------------------------------------------------------------
def test_truncated_sidecar_is_reported_and_never_overwritten(sidecar):
    broken = sidecar.read_bytes()[:-40]
    sidecar.write_bytes(broken)
    with pytest.raises(GraphFormatError) as info:
        load_graph(sidecar, NOW)
    assert info.value.message.startswith(f"{sidecar}: not valid JSON") and "\n" not in str(info.value)
    assert "will not overwrite" in info.value.hint
    with pytest.raises(StoreError, match="refusing to overwrite"):
        save_graph(sidecar, sample_graph())
    assert sidecar.read_bytes() == broken


def test_foreign_file_at_the_sidecar_path_is_not_overwritten_without_force(tmp_path):
    path = tmp_path / "chat.bme.json"
    path.write_text(export_document(sample_graph()))  # an ST-BME export, not a sidecar
    with pytest.raises(GraphFormatError, match="not a bme sidecar") as info:
        load_graph(path, NOW)
    assert "bme import" in info.value.hint
    with pytest.raises(StoreError, match="is not a bme sidecar; refusing to overwrite"):
        save_graph(path, sample_graph())
    save_graph(path, sample_graph(), force=True)
    assert load_graph(path, NOW).meta.extraction_count == 3


def test_sidecar_from_a_newer_bme_is_refused_and_kept(sidecar):
    text = sidecar.read_bytes().replace(b'"formatVersion":1', b'"formatVersion":2', 1)
    sidecar.write_bytes(text)
    with pytest.raises(StoreError, match=r"written by a newer bme \(sidecar format 2"):
        load_graph(sidecar, NOW)
    with pytest.raises(StoreError, match="newer bme"):
        save_graph(sidecar, sample_graph())
    assert sidecar.read_bytes() == text


def _rewrite_block(path: Path, **changes) -> None:
    doc = json.loads(path.read_bytes())
    doc["bme"]["embedding"].update(changes)
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


@pytest.mark.parametrize("changes,expected", [
    ({"vectors": "not base64!"}, "bme.embedding.vectors is not valid base64"),
    ({"vectors": "AAAA"}, "bme.embedding.vectors holds 3 bytes, expected 4 rows x 6 float32"),
    ({"ids": ["id-1", "id-2", "id-3", "ghost"]}, "bme.embedding.ids names missing node 'ghost'"),
    ({"ids": ["id-1", "id-1", "id-2", "id-3"]}, "bme.embedding.ids must be a list of distinct node ids"),
    ({"count": 9}, "bme.embedding.count is 9 but ids lists 4"),
    ({"dimension": "six"}, "bme.embedding.dimension must be a positive integer"),
])
def test_broken_vector_block_is_reported(sidecar, changes, expected):
    _rewrite_block(sidecar, **changes)
    with pytest.raises(GraphFormatError, match=expected.replace("(", r"\(")):
        load_graph(sidecar, NOW)


def test_nan_vector_block_is_refused(sidecar):
    bad = np.full((4, 6), np.nan, dtype="<f4").tobytes()
    _rewrite_block(sidecar, vectors=base64.b64encode(bad).decode())
    with pytest.raises(GraphFormatError, match="NaN or Infinity"):
        load_graph(sidecar, NOW)


def test_overflowing_number_in_bme_block_is_refused(sidecar):
    sidecar.write_bytes(sidecar.read_bytes().replace(b'"lastSynopsisAt":2', b'"lastSynopsisAt":1e999'))
    with pytest.raises(GraphFormatError, match="a bme key holds NaN or an infinite number"):
        load_graph(sidecar, NOW)


def test_empty_sidecar_is_reported(tmp_path):
    path = tmp_path / "e.bme.json"
    path.write_bytes(b"\n")
    with pytest.raises(GraphFormatError, match="the file is empty"):
        load_graph(path, NOW)


# -- nothing is written when the graph cannot be stored ---------------------------------------
def test_non_finite_values_are_refused_before_anything_is_written(tmp_path, sidecar):
    before = sidecar.read_bytes()
    g = sample_graph()
    g.nodes[0].importance = float("inf")
    with pytest.raises(GraphFormatError, match="JSON cannot store"):
        save_graph(sidecar, g)
    g = sample_graph()
    g.nodes[1].embedding[2] = np.nan
    with pytest.raises(StoreError, match="node 'id-2' has a NaN/Infinity embedding"):
        save_graph(sidecar, g)
    g = sample_graph()
    g.nodes[1].embedding = np.ones(3, dtype=np.float32)
    with pytest.raises(StoreError, match="embeddings of different shapes"):
        save_graph(sidecar, g)
    assert sidecar.read_bytes() == before and temp_litter(tmp_path) == []


# -- atomic writes under faults ---------------------------------------------------------------
def test_failed_replace_leaves_old_sidecar_and_no_temp_file(tmp_path, sidecar, monkeypatch):
    before = sidecar.read_bytes()

    def broken_replace(src, dst):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "replace", broken_replace)
    g = sample_graph()
    g.last_processed_seq = 99
    with pytest.raises(StoreError, match="Input/output error"):
        save_graph(sidecar, g)
    assert sidecar.read_bytes() == before and temp_litter(tmp_path) == []


def test_interrupt_during_save_leaves_old_sidecar_and_no_temp_file(tmp_path, sidecar, monkeypatch):
    before = sidecar.read_bytes()

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_graph(sidecar, sample_graph(nodes=9))
    assert sidecar.read_bytes() == before and temp_litter(tmp_path) == []


CRASH_BEFORE_REPLACE = """
import os, signal, sys
from pathlib import Path
from bme_cli.graph import store
path = Path(sys.argv[1])
graph = store.load_graph(path, 1_700_000_000_000)
graph.last_processed_seq = 999
os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)  # die after fsync, before rename
store.save_graph(path, graph)
"""


def test_process_killed_between_fsync_and_replace_keeps_old_sidecar(tmp_path, sidecar):
    before = sidecar.read_bytes()
    proc = subprocess.run([sys.executable, "-c", CRASH_BEFORE_REPLACE, str(sidecar)], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert sidecar.read_bytes() == before and load_graph(sidecar, NOW).last_processed_seq == 5
    assert len(temp_litter(tmp_path)) == 1  # SIGKILL leaves the temp file; the next holder cleans it
    with GraphLock(sidecar):
        pass
    assert temp_litter(tmp_path) == []


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to tell our temp file's fd")
def test_disk_full_while_writing_keeps_old_sidecar(tmp_path, sidecar, monkeypatch):
    before = sidecar.read_bytes()
    real_write, calls = os.write, []

    def full_disk(fd, data):
        if ".chat.bme.json." not in os.readlink(f"/proc/self/fd/{fd}"):
            return real_write(fd, data)
        calls.append(fd)
        if len(calls) > 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, bytes(data[:10]))  # a short write first, as a filling disk does

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(StoreError) as info:
        save_graph(sidecar, sample_graph(nodes=9))
    assert "no space left on the device" in info.value.message and "free some disk space" in info.value.hint
    assert sidecar.read_bytes() == before and temp_litter(tmp_path) == [] and len(calls) == 2


def test_read_only_folder_gives_a_clear_error_and_keeps_old_sidecar(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "chat.bme.json"
    save_graph(path, sample_graph())
    before = path.read_bytes()
    folder.chmod(0o500)
    try:
        probe = folder / "probe"
        try:
            probe.touch()
            probe.unlink()
            writable = True  # root ignores permissions: simulate a read-only mount instead
        except PermissionError:
            writable = False
        if writable:
            def read_only(*args, **kwargs):
                raise OSError(errno.EROFS, "Read-only file system")
            monkeypatch.setattr(tempfile, "mkstemp", read_only)
        with pytest.raises(StoreError, match="permission denied while saving|read-only file system while saving"):
            save_graph(path, sample_graph(nodes=8))
        assert path.read_bytes() == before and temp_litter(folder) == []
    finally:
        folder.chmod(0o700)


def test_replace_with_backup_keeps_the_previous_file(tmp_path):
    path = tmp_path / "chat.bme.json"
    assert replace_with_backup(path, sample_graph()) is None and not backup_path(path).exists()
    path.write_bytes(b"garbage that is not a sidecar")
    assert replace_with_backup(path, sample_graph(nodes=2)) == backup_path(path)
    assert backup_path(path).read_bytes() == b"garbage that is not a sidecar"
    assert len(load_graph(path, NOW).nodes) == 2 and temp_litter(tmp_path) == []


def test_meta_extra_may_not_shadow_reserved_keys(tmp_path):
    g = sample_graph()
    g.meta.extra["embedding"] = 1
    with pytest.raises(ValueError, match="reserved keys"):
        save_graph(tmp_path / "x.bme.json", g)


# -- reading documents from files -----------------------------------------------------------
def test_read_document_takes_a_chat_graph_from_the_header_line_only(tmp_path):
    graph_doc = json.loads(export_document(sample_graph(dim=None)))
    chat = tmp_path / "chat.jsonl"
    header = {"user_name": "unused", "character_name": "unused",
              "chat_metadata": {"integrity": "u", "st_bme_graph": graph_doc}}
    chat.write_bytes(json.dumps(header).encode() + b"\n" + b"\xff\xfe not json, never read")
    imported = read_document(chat, NOW)
    assert imported.kind == KIND_CHAT and len(imported.graph.nodes) == 5


def test_read_document_reads_sidecars_and_exports(tmp_path, sidecar):
    assert read_document(sidecar, NOW).embedding_model == "bge-small"
    export = tmp_path / "export.json"
    export.write_text(export_document(sample_graph()))
    assert read_document(export, NOW).kind == KIND_STBME
    with pytest.raises(GraphFormatError, match="cannot read"):
        read_document(tmp_path / "missing.json", NOW)


# -- locking ----------------------------------------------------------------------------------
HOLDER = """
import sys
from pathlib import Path
from bme_cli.graph.store import GraphLock
with GraphLock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()
"""


def start_holder(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_lock_held_by_another_process_names_its_pid(sidecar):
    holder = start_holder(sidecar)
    try:
        with pytest.raises(LockedError) as info:
            with GraphLock(sidecar, wait=0):
                pass
        assert f"{sidecar} is locked by pid {holder.pid} (started " in info.value.message
        assert info.value.hint == "wait for it, or pass --wait SECONDS"
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_waiting_lock_is_taken_once_the_holder_releases(sidecar):
    holder = start_holder(sidecar)
    timer = threading.Timer(0.4, holder.stdin.close)
    timer.start()
    start = time.monotonic()
    try:
        with GraphLock(sidecar, wait=10) as lock:
            assert lock.held
            assert json.loads(lock_path(sidecar).read_text())["pid"] == os.getpid()
        assert 0.3 < time.monotonic() - start < 10
    finally:
        timer.cancel()
        holder.wait(timeout=30)
    assert not lock_path(sidecar).exists()


def test_lock_of_a_killed_holder_is_taken_over_at_once(sidecar):
    holder = start_holder(sidecar)
    holder.kill()
    holder.wait(timeout=30)
    assert lock_path(sidecar).exists()  # the file stays; its flock died with the process
    with GraphLock(sidecar, wait=0):
        assert json.loads(lock_path(sidecar).read_text())["pid"] == os.getpid()


def test_stale_lock_file_from_a_dead_pid_is_taken_over(sidecar):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=30)
    lock_path(sidecar).write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "started": 1}))
    with GraphLock(sidecar, wait=0):
        assert json.loads(lock_path(sidecar).read_text())["pid"] == os.getpid()
    assert not lock_path(sidecar).exists()


def test_lock_is_not_reentrant_within_a_process(sidecar):
    with GraphLock(sidecar):
        with pytest.raises(LockedError, match=f"locked by pid {os.getpid()}"):
            GraphLock(sidecar, wait=0.1).acquire()


def test_lock_in_a_missing_folder_says_so(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        GraphLock(tmp_path / "nowhere" / "a.bme.json").acquire()


WRITER = """
import sys
from pathlib import Path
from bme_cli.graph.store import GraphLock, load_graph, save_graph
path = Path(sys.argv[1])
for _ in range(int(sys.argv[2])):
    with GraphLock(path, wait=60):
        graph = load_graph(path, 1_700_000_000_000)
        graph.meta.extraction_count += 1
        save_graph(path, graph)
"""


def test_two_writers_never_lose_each_others_updates(tmp_path):
    path = tmp_path / "chat.bme.json"
    g = sample_graph()
    g.meta.extraction_count = 0
    save_graph(path, g)
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "25"]) for _ in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert load_graph(path, NOW).meta.extraction_count == 50
    assert not lock_path(path).exists() and temp_litter(tmp_path) == []


# -- what orjson cannot do, the stdlib still does ----------------------------------------------
@pytest.mark.parametrize("spoil", [
    lambda g: g.nodes[0].fields.update(score=float("nan")),
    lambda g: g.nodes[1].extra.update(bmeScore=[1.0, float("inf")]),
    lambda g: setattr(g.edges[0], "strength", float("nan")),
    lambda g: g.edges[1].extra.update(bmeWeight=float("-inf")),
    lambda g: g.extra.update(future={"x": float("nan")}),
    lambda g: g.meta.extra.update(lastScore=float("inf")),
    lambda g: setattr(g.nodes[2], "evolution_history", [{"delta": float("nan")}]),
], ids=["fields", "node-extra", "strength", "edge-extra", "graph-extra", "meta-extra", "history"])
def test_nan_or_infinity_anywhere_is_refused_and_nothing_is_written(sidecar, tmp_path, spoil):
    before = sidecar.read_bytes()
    g = sample_graph()
    spoil(g)
    with pytest.raises(GraphFormatError, match="JSON cannot store"):
        save_graph(sidecar, g)
    assert sidecar.read_bytes() == before and temp_litter(tmp_path) == []


def test_integers_beyond_64_bits_survive_save_and_load_exactly(tmp_path):
    g = sample_graph()
    g.nodes[0].fields["big"] = 2 ** 70 + 1
    g.extra["ledger"] = [-(2 ** 64) - 7]
    g.meta.extra["counter"] = 10 ** 30 + 1
    path = tmp_path / "big.bme.json"
    save_graph(path, g)
    loaded = load_graph(path, NOW)
    assert loaded.nodes[0].fields["big"] == 2 ** 70 + 1 and loaded.extra["ledger"] == [-(2 ** 64) - 7]
    assert loaded.meta.extra["counter"] == 10 ** 30 + 1
    assert export_document(loaded, True) == export_document(g, True)


def test_loading_never_changes_the_file(sidecar):
    before = sidecar.read_bytes()
    load_graph(sidecar, NOW)
    assert sidecar.read_bytes() == before


def test_a_one_line_sidecar_mentioning_chat_metadata_is_read_as_a_sidecar(tmp_path):
    g = sample_graph()
    g.nodes[0].fields["summary"] = 'quoted "chat_metadata" text'
    path = tmp_path / "s.bme.json"
    save_graph(path, g)
    imported = read_document(path, NOW)
    assert imported.kind == "bme-sidecar" and imported.graph.nodes[0].fields["summary"] == g.nodes[0].fields["summary"]


def test_blank_sidecar_is_reported_empty(tmp_path):
    path = tmp_path / "b.bme.json"
    path.write_bytes(b" \n\t\n")
    with pytest.raises(GraphFormatError, match="the file is empty"):
        load_graph(path, NOW)


def test_write_text_atomic_makes_a_private_file_unless_told_and_keeps_an_existing_mode(tmp_path):
    old_umask = os.umask(0)  # the mode must not come from the umask
    try:
        private, shared = tmp_path / "export.json", tmp_path / "shared.json"
        write_text_atomic(private, "é\n")
        write_text_atomic(shared, "s\n", mode=0o644)
    finally:
        os.umask(old_umask)
    assert private.read_text(encoding="utf-8") == "é\n" and private.stat().st_mode & 0o777 == 0o600
    assert shared.stat().st_mode & 0o777 == 0o644
    write_text_atomic(shared, "second\n")
    assert shared.read_text(encoding="utf-8") == "second\n" and shared.stat().st_mode & 0o777 == 0o644
    assert temp_litter(tmp_path) == []


# -- bme import over whatever is there ---------------------------------------------------------
@pytest.mark.parametrize("occupant", [b'{"format": "bme-sidecar", "trunc', b"not json at all",
                                      None], ids=["corrupt", "foreign", "newer"])
def test_import_with_force_replaces_a_sidecar_it_cannot_read_and_keeps_it_as_bak(tmp_path, occupant):
    chat = tmp_path / "chat.jsonl"
    chat.write_text('{"user_name": "u", "character_name": "c", "chat_metadata": {}}\n', encoding="utf-8")
    source = tmp_path / "export.json"
    source.write_text(export_document(sample_graph(nodes=3)), encoding="utf-8")
    target = sidecar_path(chat)
    save_graph(target, sample_graph())
    if occupant is None:  # written by a newer bme
        occupant = target.read_bytes().replace(b'"formatVersion":1', b'"formatVersion":2', 1)
    target.write_bytes(occupant)
    with pytest.raises((GraphFormatError, StoreError)):
        workflow.import_graph(chat, source, now=NOW, graph_override=None, force=False, lock_wait=0, embedding_model=None)
    assert target.read_bytes() == occupant and not backup_path(target).exists()
    summary = workflow.import_graph(chat, source, now=NOW, graph_override=None, force=True, lock_wait=0,
                                    embedding_model=None)
    assert "imported 3 nodes" in summary and backup_path(target).read_bytes() == occupant
    assert len(load_graph(target, NOW).nodes) == 3


def test_read_document_reads_a_pipe(tmp_path):
    fifo = tmp_path / "graph.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=(export_document(sample_graph(dim=None)),))
    writer.start()
    try:
        assert len(read_document(fifo, NOW).graph.nodes) == 5
    finally:
        writer.join(timeout=30)
