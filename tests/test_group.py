"""Group chats: every member a character, who witnessed what, and recall for one member."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bme_cli.chat import read_chat
from bme_cli.graph import store
from bme_cli.memory.witness import members, present
from fakes import NOW
from cli_support import SAMPLES, cli_env, error_lines, invoke, ok, sidecar  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")
GROUP = Path(__file__).resolve().parent / "data" / "sillytavern" / "group chats" / "2025-03-16@01h36m52s.jsonl"
SECRET = "coal tender"
ASK = "Where are the stolen letters hidden?"


@pytest.fixture
def group(tmp_path: Path) -> Path:
    folder = tmp_path / "group chats"
    folder.mkdir()
    return Path(shutil.copy(GROUP, folder / GROUP.name))


def recall_text(chat: Path, *args: str) -> str:
    return ok("recall", chat, "--query", ASK, "--context-window", "0", "--no-reinforce", *args).stdout


def test_an_old_headerless_group_file_reads_every_member(group: Path) -> None:
    chat = read_chat(group)
    assert chat.header is None and chat.is_group
    assert members(chat) == ["Inspector Calloway", "Pip", "Dr. Nadia Orlov"]
    assert present(chat, 10, 11) == ["Inspector Calloway", "Dr. Nadia Orlov", "Sam"]   # Pip left at #2
    assert "Pip" in present(chat, 13, 13)
    ok("ingest", "--quiet", group, "--until", "0")     # before any extraction: every member is a character
    g = store.load_graph(sidecar(group), NOW)
    assert [n.fields["name"] for n in g.active_nodes("character")] == members(chat)


def test_ingest_records_witnesses_and_a_viewer_recalls_only_what_they_saw(group: Path) -> None:
    ok("ingest", "--quiet", group)
    g = store.load_graph(sidecar(group), NOW)
    secret = [n for n in g.active_nodes("event") if SECRET in n.fields["summary"]]
    assert secret and all("Pip" not in n.fields["visibility"] for n in secret)
    assert all("Sam" in n.fields["visibility"] for n in g.active_nodes("event"))
    assert all("visibility" not in n.fields for n in g.active_nodes("character"))
    assert SECRET in recall_text(group)                                   # no viewer: everything
    assert SECRET in recall_text(group, "--viewer", "Dr. Nadia Orlov")
    assert SECRET not in recall_text(group, "--viewer", "Pip")
    assert "Tea!" in recall_text(group, "--viewer", "Pip")                # what Pip did see


def test_each_member_gets_a_block_and_batch_lines_carry_their_viewer(group: Path, tmp_path: Path) -> None:
    ok("ingest", "--quiet", group)
    text = recall_text(group, "--each-member")
    blocks = dict(part.split("\n", 1) for part in text.split("# viewer: ")[1:])
    assert list(blocks) == ["Inspector Calloway", "Pip", "Dr. Nadia Orlov"]
    assert SECRET in blocks["Inspector Calloway"] and SECRET not in blocks["Pip"]
    data = json.loads(recall_text(group, "--viewer", "Pip", "--viewer", "Sam", "--format", "json"))["viewers"]
    assert [d["viewer"] for d in data] == ["Pip", "Sam"] and SECRET in data[1]["text"]
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": ASK, "viewer": "Pip"}) + "\n" + json.dumps({"query": ASK}) + "\n",
                       encoding="utf-8")
    lines = [json.loads(x) for x in ok("recall", group, "--queries", queries, "--context-window", "0")
             .stdout.splitlines()]
    assert lines[0]["viewer"] == "Pip" and SECRET not in lines[0]["text"]
    assert "viewer" not in lines[1] and SECRET in lines[1]["text"]
    both = [json.loads(x) for x in ok("recall", group, "--queries", queries, "--context-window", "0",
                                      "--viewer", "Sam").stdout.splitlines()]
    assert [b["viewer"] for b in both] == ["Pip", "Sam"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query": ASK, "viewer": 3}) + "\n", encoding="utf-8")
    result = invoke("recall", group, "--queries", bad)
    assert result.exit_code == 3 and '"viewer" must be a name' in result.stderr and error_lines(result)


def test_one_to_one_chats_get_no_witnesses_and_each_member_needs_speakers(tmp_path: Path) -> None:
    chat = Path(shutil.copy(SAMPLES / "adventure.jsonl", tmp_path / "a.jsonl"))
    ok("ingest", "--quiet", chat, "--until", "9")
    g = store.load_graph(sidecar(chat), NOW)
    assert all("visibility" not in n.fields for n in g.nodes)
    only_user = tmp_path / "u.jsonl"
    only_user.write_text(json.dumps({"chat_metadata": {}, "user_name": "u", "character_name": "c"}) + "\n"
                         + json.dumps({"name": "u", "is_user": True, "mes": "hello"}), encoding="utf-8")
    result = invoke("recall", only_user, "--each-member")
    assert result.exit_code == 2 and "no members" in error_lines(result)[0]


def test_the_sample_group_chat_marks_every_member_who_spoke_nearby() -> None:
    chat = read_chat(SAMPLES / "group.jsonl")
    assert set(members(chat)) == {"Inspector Calloway", "Pip", "Dr. Nadia Orlov"}
    assert chat.user_name in present(chat, 0, 0)
