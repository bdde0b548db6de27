"""Branches: a chat sharing its first messages with a processed chat starts from that graph."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bme_cli.graph import store
from fakes import NOW
from cli_support import SAMPLES, cli_env, error_lines, invoke, ok, sidecar  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")
DATA = Path(__file__).resolve().parent / "data" / "sillytavern" / "chats" / "Mira"
PARENT = "Mira - 2025-03-25@21h19m28s.jsonl"
BRANCH = "Branch #9 - 2025-03-26@08h00m00s.jsonl"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    dest = tmp_path / "Mira"
    shutil.copytree(DATA, dest)
    return dest


def test_a_branch_starts_from_its_parents_graph_rolled_back_to_where_they_part(folder: Path) -> None:
    parent, branch = folder / PARENT, folder / BRANCH
    ok("ingest", "--quiet", parent)
    pg = store.load_graph(sidecar(parent), NOW)
    result = ok("ingest", branch)
    assert f"a branch of {PARENT}" in result.stderr and "before message #10" in result.stderr
    assert "1 batch(es) pending" in result.stderr            # only the branch's own reply is extracted
    bg = store.load_graph(sidecar(branch), NOW)
    assert bg.last_processed_seq == 11
    kept = {n.id for n in pg.nodes if n.seq_range[0] < 10}
    assert kept <= {n.id for n in bg.nodes}                  # the shared story's memories, same ids
    assert not [n for n in bg.nodes if n.id in {m.id for m in pg.nodes} and n.seq_range[0] >= 10]
    assert {s: fp for s, fp in bg.meta.fingerprints.items() if s < 10} == \
        {s: fp for s, fp in pg.meta.fingerprints.items() if s < 10}
    ids = {n.id for n in bg.nodes}
    assert all(e.from_id in ids and e.to_id in ids for e in bg.edges)
    assert all(n.prev_id in ids | {None} and n.next_id in ids | {None} for n in bg.nodes)
    assert "Odile" in ok("recall", branch, "--budget", "3000").stdout


def test_a_folder_ingests_the_parent_first_and_says_so(folder: Path) -> None:
    result = ok("ingest", folder)                            # "Branch #9" sorts before "Mira - "
    assert f"a branch of {PARENT}" in result.stderr
    assert sidecar(folder / PARENT).exists() and sidecar(folder / BRANCH).exists()


def test_from_names_a_parent_elsewhere_and_refuses_one_that_shares_nothing(folder: Path, tmp_path: Path) -> None:
    ok("ingest", "--quiet", folder / PARENT)
    elsewhere = tmp_path / "moved.jsonl"
    shutil.copy(folder / BRANCH, elsewhere)
    result = ok("ingest", elsewhere, "--from", folder / PARENT)
    assert f"a branch of {PARENT}" in result.stderr
    other = tmp_path / "other.jsonl"
    shutil.copy(SAMPLES / "chinese.jsonl", other)
    bad = invoke("ingest", other, "--from", folder / PARENT)
    assert bad.exit_code == 2 and "shares no processed reply" in error_lines(bad)[0]
    assert not sidecar(other).exists() or not store.load_graph(sidecar(other), NOW).nodes
    again = invoke("ingest", elsewhere, "--from", folder / PARENT)
    assert again.exit_code == 2 and "--from starts a new graph" in error_lines(again)[0]
    two = invoke("ingest", elsewhere, other, "--from", folder / PARENT)
    assert two.exit_code == 2


def test_the_same_greeting_alone_is_no_branch_and_the_setting_turns_detection_off(folder: Path) -> None:
    ok("ingest", "--quiet", folder / PARENT)
    lines = (folder / PARENT).read_text(encoding="utf-8").split("\n")
    reply = {"name": "Mira", "is_user": False, "mes": "Mira laughs and pours two cups of tea."}
    ask = {"name": "Rowan", "is_user": True, "mes": "Tea first. Then the tower."}
    fresh = folder / "Mira - 2025-04-01@10h00m00s.jsonl"
    fresh.write_text("\n".join(lines[:2] + [json.dumps(ask), json.dumps(reply)]), encoding="utf-8")
    assert "a branch of" not in ok("ingest", fresh).stderr
    off = ok("ingest", folder / BRANCH, env={"BME_SILLYTAVERN_DETECT_BRANCHES": "false"})
    assert "a branch of" not in off.stderr
