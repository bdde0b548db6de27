"""`bme node ...`: user edits that stick through re-ingest, compression, sleep and recall."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from fakes import NOW
from cli_support import cli_env, error_lines, ingested, ingested_template, invoke, ok, sidecar  # noqa: F401

from bme_cli.graph import store


def _graph(chat: Path):
    return store.load_graph(sidecar(chat), NOW)


def _first(chat: Path, type_id: str, level: int = 0):
    return next(n for n in _graph(chat).nodes if n.type == type_id and not n.archived and n.level == level)


def _named(chat: Path, key: str, value: str):
    return [n for n in _graph(chat).nodes if n.fields.get(key) == value]


def test_pinned_event_survives_rebuild_compression_and_sleep_and_is_core(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    event = _first(chat, "event")
    ok("node", "pin", chat, event.id[:8])
    ok("ingest", "--quiet", "--rebuild", chat)
    ok("compress", chat, "--force")
    ok("sleep", chat, "--threshold", "0.99")
    kept = _graph(chat).get(event.id)
    assert kept is not None and not kept.archived and kept.level == 0 and kept.fields == event.fields
    block = ok("recall", chat, "--budget", "120", "--query", "zzz", "--format", "json").stdout
    core = [n["id"] for n in json.loads(block)["nodes"] if n["section"] == "core"]
    assert core[0] == event.id


def test_archived_and_deleted_nodes_never_return_on_reingest(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    place = _first(chat, "location")
    person = _first(chat, "character")
    ok("node", "archive", chat, place.id)
    result = ok("node", "delete", chat, person.id, "--force")
    assert "kept in" in result.stderr and Path(str(sidecar(chat)) + ".bak").exists()
    ok("ingest", "--quiet", "--rebuild", chat)
    ok("sleep", chat, "--restore")
    assert [n.archived for n in _named(chat, "name", place.fields["name"])] == [True]
    assert _named(chat, "name", person.fields["name"]) == []
    ok("node", "restore", chat, place.id)
    assert not _graph(chat).get(place.id).archived


def test_edited_fields_stay_through_rebuild_and_history_says_who_and_when(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    person = _first(chat, "character")
    ok("node", "edit", chat, person.id, "--set", "state=resting in Saltmere", "--set", "goal=")
    ok("ingest", "--quiet", "--rebuild", chat)
    node = _graph(chat).get(person.id)
    assert node.fields["state"] == "resting in Saltmere" and "goal" not in node.fields
    log = node.extra["bmeUser"]["log"]
    assert log[-1]["action"] == "edit" and log[-1]["by"] == "user" and log[-1]["at"] > 0
    assert log[-1]["changes"]["state"][1] == "resting in Saltmere"
    assert len(_named(chat, "name", person.fields["name"])) == 1   # no duplicate made by re-ingest


def test_added_node_is_printed_kept_and_validated(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    new_id = ok("node", "add", chat, "rule", "--set", "title=honesty",
                "--set", "constraint=Mira never lies to Rowan", "--pin").stdout.strip()
    ok("ingest", "--quiet", "--rebuild", chat)
    node = _graph(chat).get(new_id)
    assert node is not None and not node.archived and node.extra["bmeUser"]["added"]
    bad = invoke("node", "add", chat, "rule", "--set", "rule=x")
    assert bad.exit_code == 2 and "rule has no field 'rule'" in error_lines(bad)[0]
    missing = invoke("node", "add", chat, "rule", "--set", "scope=x")
    assert missing.exit_code == 2 and "needs a 'title'" in error_lines(missing)[0]
    assert invoke("node", "add", chat, "spell", "--set", "name=x").exit_code == 2


def test_delete_needs_force_and_unknown_ids_are_usage_errors(ingested: dict[str, Path]) -> None:
    chat = ingested["adventure"]
    before = sidecar(chat).read_bytes()
    node = _first(chat, "event")
    assert invoke("node", "delete", chat, node.id).exit_code == 2
    assert invoke("node", "pin", chat, "no-such-node").exit_code == 2
    assert sidecar(chat).read_bytes() == before


def test_edit_without_set_opens_the_editor_on_toml(ingested: dict[str, Path], tmp_path: Path,
                                                   monkeypatch) -> None:
    chat = ingested["adventure"]
    person = _first(chat, "character")
    script = tmp_path / "ed.py"
    script.write_text("import sys,re\np=sys.argv[1]\nt=open(p,encoding='utf-8').read()\n"
                      "t=re.sub(r'(?m)^state = .*$', lambda m: 'state = \"asleep\\\\nby the fire\"', t)\n"
                      "t=t if 'state =' in t else t+'state = \"asleep\\\\nby the fire\"\\n'\n"
                      "open(p,'w',encoding='utf-8').write(t)\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    ok("node", "edit", chat, person.id)
    assert _graph(chat).get(person.id).fields["state"] == "asleep\nby the fire"
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c pass")
    assert "no change" in ok("node", "edit", chat, person.id).stderr


def test_edit_with_broken_toml_changes_nothing(ingested: dict[str, Path], tmp_path: Path, monkeypatch) -> None:
    chat = ingested["adventure"]
    person = _first(chat, "character")
    before = sidecar(chat).read_bytes()
    script = tmp_path / "ed.py"
    script.write_text("import sys\nopen(sys.argv[1],'a').write('state = \"unclosed\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    result = invoke("node", "edit", chat, person.id)
    assert result.exit_code == 3 and "not valid TOML" in error_lines(result)[0]
    assert sidecar(chat).read_bytes() == before
