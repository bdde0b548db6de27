"""`bme ingest --rebuild`: the graph stays the size of one extraction, the old one is kept as
.bak, and a sidecar bme cannot read is moved aside instead of blocking the way forever."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import cli_env, copy_samples, error_lines, invoke, ok, sidecar  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")


def _nodes(graph: Path) -> int:
    return len(_graph_nodes(graph))


def _graph_nodes(graph: Path) -> list[dict]:
    return json.loads(graph.read_text(encoding="utf-8"))["graph"]["nodes"]


def test_rebuilds_do_not_pile_up_archived_nodes_and_keep_a_backup(tmp_path: Path) -> None:
    chat = copy_samples(tmp_path, ("group",))["group"]
    ok("ingest", chat, "-q")
    graph = sidecar(chat)
    first, size = _nodes(graph), graph.stat().st_size
    ok("ingest", chat, "--rebuild", "-q")
    ok("ingest", chat, "--rebuild", "-q")
    assert _nodes(graph) == first                      # not first + archived generations
    assert graph.stat().st_size < size * 1.2
    backup = graph.with_name(graph.name + ".bak")
    assert _nodes(backup) == first                     # the graph before the last rebuild


def test_rebuild_from_a_message_keeps_what_came_before(tmp_path: Path) -> None:
    chat = copy_samples(tmp_path, ("group",))["group"]
    ok("ingest", chat, "-q")
    graph = sidecar(chat)
    before = {n["id"] for n in _graph_nodes(graph) if n["seqRange"][1] < 10}
    ok("ingest", chat, "--rebuild-from", "10", "-q")
    after = _graph_nodes(graph)
    assert before <= {n["id"] for n in after}
    assert not [n for n in after if n.get("archived") and n["seqRange"][1] >= 10 and not n.get("parentId")]


def test_an_unreadable_sidecar_says_how_out_and_rebuild_moves_it_aside(tmp_path: Path) -> None:
    chat = copy_samples(tmp_path, ("group",))["group"]
    graph = sidecar(chat)
    graph.write_text('{"format": "bme-sidecar", "formatVersion": 1, "nodes": [', encoding="utf-8")
    failed = invoke("ingest", chat)
    assert failed.exit_code == 3
    [line] = error_lines(failed)
    assert str(graph.name) in line and "--rebuild" in line and ".bak" not in line
    rebuilt = ok("ingest", chat, "--rebuild", "-q")
    aside = graph.with_name(graph.name + ".unreadable")
    assert aside.read_text(encoding="utf-8").endswith('"nodes": [')   # kept byte for byte
    assert "moved it to" in rebuilt.stderr and _nodes(graph) > 0


def test_the_hint_names_the_backup_when_there_is_one(tmp_path: Path) -> None:
    chat = copy_samples(tmp_path, ("group",))["group"]
    ok("ingest", chat, "-q")
    ok("ingest", chat, "--rebuild", "-q")              # leaves a .bak
    graph = sidecar(chat)
    graph.write_text("{", encoding="utf-8")
    [line] = error_lines(invoke("recall", chat))
    assert f"{graph.name}.bak" in line
