"""Story text through the CLI: DeepSeek-style exports in, no reasoning, panel or macro out."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bme_cli.chat import read_chat
from bme_cli.graph import store
from bme_cli.memory.ingest import fingerprint

from fakes import NOW
from cli_support import cli_env, error_lines, invoke, ok, sidecar  # noqa: F401  (fixture)

DATA = Path(__file__).resolve().parent / "data"
EXPORTS = ("deepseek_zh", "deepseek_en")
# What must never reach memory from these exports: policy words from the safety checks, tag
# names, macros, status-panel lines, planning notes, the card title.
JUNK = re.compile(
    r"Harassment|Hate\b|Sexually Explicit|Dangerous Content|Verdict|Policy review|"
    r"safety_check|StatusBlock|thinking|<\w|</|\{\{|\}\}|<USER>|<BOT>|"
    r"金钱|好感度|随身物品|状态栏|Coins|trust|Clues:|Threat:|Time: \d|"
    r"根据要求|本轮|推进主线|下一步|埋下伏笔|Next:|Round summary|Okay, I'll|Plan:|Anmerkung|"
    r"OOC|make Brandt suspicious|请把沈青|雾都往事")
# In a node (not in the Markdown block, which is made of tables): no table rows, no titles.
SHAPES = re.compile(r"\|\s*---|\|.*\||^#|\n#", re.M)


@pytest.fixture
def exports(tmp_path: Path, cli_env: None) -> dict[str, Path]:
    """Copies of the DeepSeek-style test exports, by name."""
    return {n: Path(shutil.copy(DATA / f"{n}.jsonl", tmp_path / f"{n}.jsonl")) for n in EXPORTS}


def stored_texts(chat: Path) -> list[str]:
    """Every string field of every node of a chat's graph."""
    graph = store.load_graph(sidecar(chat), NOW)
    assert graph is not None and graph.nodes
    return [v for n in graph.nodes for v in n.fields.values() if isinstance(v, str)]


@pytest.mark.parametrize("name", EXPORTS)
def test_no_reasoning_policy_tag_macro_panel_or_plan_reaches_memory(exports: dict[str, Path],
                                                                      name: str) -> None:
    chat = exports[name]
    before = chat.read_bytes()
    ok("ingest", "--quiet", chat)
    texts = stored_texts(chat)
    leaks = [t for t in texts if JUNK.search(t) or SHAPES.search(t)]
    assert not leaks, leaks
    block = ok("recall", chat, "--query", "where is the ledger / 名单在哪里", "--no-reinforce").stdout
    assert block.strip() and not JUNK.search(block), block
    assert chat.read_bytes() == before   # the chat file is never changed


def test_the_story_itself_is_what_memory_keeps(exports: dict[str, Path]) -> None:
    for name, expected in (("deepseek_zh", ("陈默", "沈青", "三号仓库")),
                           ("deepseek_en", ("Ellis", "Vera", "Brandt"))):
        ok("ingest", "--quiet", exports[name])
        joined = "\n".join(stored_texts(exports[name]))
        assert all(word in joined for word in expected), (name, joined)


def test_the_header_user_names_the_user_and_a_card_title_names_no_one(exports: dict[str, Path]) -> None:
    zh = read_chat(exports["deepseek_zh"])
    assert (zh.user_name, zh.character_name) == ("陈默", None)
    assert {m.name for m in zh.messages if not m.is_user} == {""}
    assert "陈默提着一只旧皮箱" in zh.messages[0].text
    en = read_chat(exports["deepseek_en"])
    assert (en.user_name, en.character_name) == ("Ellis", "Vera")
    assert en.messages[0].text.startswith("*The last train") and "I'm Vera" in en.messages[0].text


def test_asides_in_other_languages_that_are_story_stay(exports: dict[str, Path]) -> None:
    zh, en = (read_chat(exports[n]) for n in EXPORTS)
    assert "Halt! Papiere, bitte." in zh.messages[4].text
    assert "Der letzte Zug ist weg." in en.messages[2].text
    assert all("Anmerkung" not in m.text for m in [*zh.messages, *en.messages])


def test_fingerprints_read_the_file_so_new_story_settings_are_not_edits(exports: dict[str, Path]) -> None:
    chat = exports["deepseek_zh"]
    ok("ingest", "--quiet", chat)
    again = invoke("ingest", "--quiet", chat, env={"BME_STORY_DROP_PANELS": "false",
                                                   "BME_STORY_STORY_TAGS": "main_text"})
    assert again.exit_code == 0, again.stderr
    assert not error_lines(again)
    card = read_chat(chat).messages[0]
    old_style = type("Old", (), {"name": card.raw_name, "is_user": False, "is_system": False,
                                 "raw": card.raw, "swipe_id": None, "text": ""})()
    assert card.name == "" and fingerprint(card) == fingerprint(old_style)


def test_show_lists_messages_with_their_raw_and_story_lengths(exports: dict[str, Path]) -> None:
    out = ok("show", exports["deepseek_en"], env={"COLUMNS": "80"}).stdout
    assert all(len(line) <= 80 for line in out.splitlines())
    rows = [line for line in out.splitlines() if re.match(r"│\s+\d+ │", line)]
    assert len(rows) == 12
    assert "Vera" in rows[0] and "Ellis" in rows[1] and "hidden" in rows[9]


def test_show_message_prints_the_story_text_and_what_was_dropped(exports: dict[str, Path]) -> None:
    out = ok("show", exports["deepseek_en"], "--message", "2").stdout
    head, dropped, *body = out.splitlines()
    assert head.startswith("#2 · assistant · Vera · line 4 · ")
    assert dropped == ("dropped: <think>, text outside the story tags, <safety_check>, <table>, "
                       "<plot>, <summary>")
    assert body[0].startswith('"In the signal box') and not any("<" in line for line in body)


def test_show_raw_prints_the_file_mes_beside_the_story_text(exports: dict[str, Path]) -> None:
    out = ok("show", exports["deepseek_zh"], "-m", "0", "--raw").stdout
    assert "--- raw mes ---\n「序章·雾港」\n<content>" in out
    assert "{{user}}提着" in out.split("--- story text ---")[0]
    assert "陈默提着" in out.split("--- story text ---")[1]
    assert "(the file says '# 雾都往事1937')" in out


def test_show_a_range_as_json(exports: dict[str, Path]) -> None:
    data = json.loads(ok("show", exports["deepseek_en"], "-m", "3-5", "-f", "json").stdout)["messages"]
    assert [d["seq"] for d in data] == [3, 4, 5]
    assert data[0]["dropped"] == ["OOC note"] and "raw" not in data[0]
    assert data[2]["text"].endswith("a < b > c, simple logic.")
    every = json.loads(ok("show", exports["deepseek_en"], "-f", "json").stdout)["messages"]
    assert len(every) == 12 and every[3]["dropped"] == ["OOC note"] and every[1]["dropped"] == []
    with_raw = json.loads(ok("show", exports["deepseek_en"], "-m", "3", "-f", "json", "--raw").stdout)["messages"]
    assert with_raw[0]["raw"].endswith("(OOC: make Brandt suspicious, please)")


@pytest.mark.parametrize("value, message", [
    ("x", "give a message number or a range such as 3-7"),
    ("7-3", "the range runs backwards"),
    ("40", "the chat has 12 messages (#0-#11)"),
])
def test_show_refuses_a_message_number_it_cannot_use(exports: dict[str, Path], value: str,
                                                     message: str) -> None:
    result = invoke("show", exports["deepseek_en"], "--message", value)
    assert result.exit_code == 2 and result.stdout == ""
    assert error_lines(result) == [f"bme: error: --message {value}: {message}" if value != "x"
                                   else f"bme: error: --message 'x': {message}"]


def test_show_follows_the_story_settings(exports: dict[str, Path]) -> None:
    kept = ok("show", exports["deepseek_en"], "-m", "11", env={"BME_STORY_KEEP_TAGS": "status"}).stdout
    assert "Threat: Councillor Hale (escaped)" in kept
    assert "Threat:" not in ok("show", exports["deepseek_en"], "-m", "11").stdout
