"""The SillyTavern chat reader and header writer: every odd case from the format notes."""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from bme_cli import atomic, chat as chat_mod
from bme_cli.chat import parse_send_date, read_chat
from bme_cli.sillytavern.header import write_chat_metadata
from bme_cli.errors import BadInputError, BmeError, ExitCode
from bme_cli.story import StoryOptions

SAMPLES = Path(__file__).resolve().parent.parent / "sample_chats"
HEADER = {"user_name": "sora", "character_name": "Jesse", "create_date": "2025-02-26@09h26m58s",
          "chat_metadata": {"integrity": "0b7c6a3e-1111-4222-8333-944455556666", "tainted": False}}


def dumps(obj: object) -> str:
    """Serialise like SillyTavern (JSON.stringify)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def msg(name: str = "Jesse", mes: str = "Hello.", **extra: object) -> dict:
    """A message line as saveReply writes it (no is_system key unless given)."""
    return {"name": name, "is_user": False, "send_date": "March 25, 2025 9:19pm", "mes": mes,
            **extra}


def user(mes: str = "Hi.", name: str = "sora", **extra: object) -> dict:
    """A user message line."""
    return {"name": name, "is_user": True, "is_system": False,
            "send_date": "March 25, 2025 9:20pm", "mes": mes, **extra}


def write_lines(path: Path, lines: list[object], *, end: str = "", sep: str = "\n") -> Path:
    """Write objects (or raw strings) one per line, ST style unless told otherwise."""
    text = sep.join(line if isinstance(line, str) else dumps(line) for line in lines) + end
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture
def simple(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "chat.jsonl",
                       [HEADER, msg(mes="Welcome, {{user}}."), user(), msg(mes="Sure.")])


# ---------------------------------------------------------------- structure

def test_header_line_is_not_a_message_and_seq_starts_at_zero(simple: Path) -> None:
    chat = read_chat(simple)
    assert chat.header == HEADER
    assert [m.seq for m in chat.messages] == [0, 1, 2]
    assert [m.line_no for m in chat.messages] == [2, 3, 4]
    assert chat.is_group is False
    assert chat.assistant_turns == [0, 2]
    assert [m.role for m in chat.messages] == ["assistant", "user", "assistant"]


def test_headerless_group_file_reads_first_line_as_a_message(tmp_path: Path) -> None:
    first = msg("Alice", "Hi all.", is_group=True, original_avatar="Alice.png")
    path = write_lines(tmp_path / "g.jsonl", [first, user(), msg("Bob", original_avatar="Bob.png")])
    chat = read_chat(path)
    assert chat.header is None
    assert chat.is_group is True
    assert [m.name for m in chat.messages] == ["Alice", "sora", "Bob"]
    assert chat.messages[0].line_no == 1


def test_a_first_line_with_mes_is_a_message_even_with_header_keys(tmp_path: Path) -> None:
    odd = {"user_name": "x", "name": "Alice", "is_user": False, "mes": "I am a message."}
    chat = read_chat(write_lines(tmp_path / "c.jsonl", [odd, user()]))
    assert chat.header is None
    assert chat.messages[0].text == "I am a message."


def test_header_with_chat_metadata_only_is_a_header(tmp_path: Path) -> None:
    chat = read_chat(write_lines(tmp_path / "c.jsonl", [{"chat_metadata": {}}, user()]))
    assert chat.header == {"chat_metadata": {}}
    assert len(chat.messages) == 1


def test_unused_header_names_are_ignored_and_names_come_from_messages(tmp_path: Path) -> None:
    header = {"chat_metadata": {}, "user_name": "unused", "character_name": "unused"}
    lines = [header, msg("Leah"), user(name="Kai"), msg("Leah"), user(name="Kai")]
    chat = read_chat(write_lines(tmp_path / "c.jsonl", lines))
    assert (chat.user_name, chat.character_name) == ("Kai", "Leah")


def test_message_names_win_over_header_names_after_a_rename(tmp_path: Path) -> None:
    lines = [HEADER, msg("Jess"), user(name="Sora2"), msg("Jess")]
    chat = read_chat(write_lines(tmp_path / "c.jsonl", lines))
    assert (chat.user_name, chat.character_name) == ("Sora2", "Jess")


def test_most_common_speaker_is_the_character_and_system_speakers_do_not_count(
        tmp_path: Path) -> None:
    lines = [HEADER, msg("System", is_system=True), msg("System", is_system=True),
             msg("Jesse"), msg("Narrator"), msg("Jesse"), user()]
    assert read_chat(write_lines(tmp_path / "c.jsonl", lines)).character_name == "Jesse"


def test_header_only_file_is_a_chat_with_no_messages(tmp_path: Path) -> None:
    chat = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER]))
    assert chat.messages == [] and chat.assistant_turns == []
    assert (chat.user_name, chat.character_name) == ("sora", "Jesse")
    unused = {"chat_metadata": {}, "user_name": "unused", "character_name": "unused"}
    chat = read_chat(write_lines(tmp_path / "u.jsonl", [unused]))
    assert (chat.user_name, chat.character_name) == (None, None)


def test_graph_in_header_returns_the_st_bme_graph_only_when_it_is_an_object(
        tmp_path: Path) -> None:
    graph = {"version": 3, "lastProcessedSeq": -1, "nodes": [], "edges": []}
    with_graph = {**HEADER, "chat_metadata": {"st_bme_graph": graph}}
    assert read_chat(write_lines(tmp_path / "a.jsonl", [with_graph])).graph_in_header() == graph
    broken = {**HEADER, "chat_metadata": {"st_bme_graph": "[]"}}
    assert read_chat(write_lines(tmp_path / "b.jsonl", [broken])).graph_in_header() is None
    assert read_chat(write_lines(tmp_path / "c.jsonl", [msg()])).graph_in_header() is None


# ---------------------------------------------------------------- message fields

def test_missing_is_system_means_false(simple: Path) -> None:
    assert read_chat(simple).messages[0].is_system is False


def test_hidden_message_is_kept_but_flagged_and_not_an_assistant_turn(tmp_path: Path) -> None:
    lines = [HEADER, msg(), msg(mes="(hidden)", is_system=True), user(is_system=True), msg()]
    chat = read_chat(write_lines(tmp_path / "c.jsonl", lines))
    assert [m.is_system for m in chat.messages] == [False, True, True, False]
    assert chat.assistant_turns == [0, 3]
    assert chat.messages[1].text == "(hidden)"


def test_third_party_boolean_spellings_are_understood(tmp_path: Path) -> None:
    lines = [HEADER, {"name": "a", "is_user": "true", "is_system": 1, "mes": "x"},
             {"name": "b", "is_user": 0, "is_system": "false", "mes": "y"}]
    first, second = read_chat(write_lines(tmp_path / "c.jsonl", lines)).messages
    assert (first.is_user, first.is_system) == (True, True)
    assert (second.is_user, second.is_system) == (False, False)


def test_swipes_show_mes_and_keep_swipe_id(tmp_path: Path) -> None:
    line = msg(mes="second", swipe_id=1, swipes=["first", "second", "third"],
               swipe_info=[{"send_date": "March 25, 2025 9:19pm"}])
    m = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, line, msg()])).messages[0]
    assert (m.text, m.swipe_id, m.swipe_count) == ("second", 1, 3)


def test_message_without_swipes_has_no_swipe_id_and_zero_count(simple: Path) -> None:
    m = read_chat(simple).messages[1]
    assert (m.swipe_id, m.swipe_count) == (None, 0)


def test_empty_mes_with_swipes_stays_empty(tmp_path: Path) -> None:
    line = msg(mes="", swipe_id=0, swipes=["", "later text"])
    m = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, line])).messages[0]
    assert (m.text, m.raw) == ("", "")


def test_extra_reasoning_is_kept_out_of_text(tmp_path: Path) -> None:
    line = msg(mes="The door opens.", extra={"api": "custom", "reasoning": "She should open it.",
                                             "reasoning_duration": 1200})
    m = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, line])).messages[0]
    assert m.reasoning == "She should open it."
    assert m.text == "The door opens."


def test_inline_think_block_is_removed_from_text_but_kept_in_raw(tmp_path: Path) -> None:
    raw = "<think>\nPlan: be coy.\n</think>\n\nHello <b>there</b>.<THINK>again</THINK>"
    m = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, msg(mes=raw)])).messages[0]
    assert m.text == "Hello there."  # prose HTML leaves its text (bme_cli.story)
    assert m.raw == raw
    assert m.reasoning is None


@pytest.mark.parametrize("raw, text", [
    ("reasoning that began before mes</think>Answer.", "Answer."),
    ("Answer.<think>cut off mid-thought", "Answer."),
    ("<thinking>plan</thinking>Answer.", "Answer."),
    ("No reasoning at all.", "No reasoning at all."),
])
def test_unbalanced_and_variant_think_tags_are_removed(raw: str, text: str) -> None:
    assert chat_mod.clean_text(raw) == text


def test_crlf_inside_mes_becomes_lf_in_text_only(tmp_path: Path) -> None:
    m = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, msg(mes=" a\r\nb\r\n ")])).messages[0]
    assert (m.text, m.raw) == ("a\nb", " a\r\nb\r\n ")


def test_chub_style_mes_object_is_unwrapped(tmp_path: Path) -> None:
    line = {"name": "Venus", "is_user": False, "mes": {"message": "From Chub."}}
    m = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, line])).messages[0]
    assert (m.text, m.raw) == ("From Chub.", "From Chub.")


def test_missing_or_null_mes_reads_as_empty_text(tmp_path: Path) -> None:
    lines = [HEADER, {"name": "a", "is_user": False}, {"name": "b", "mes": None}]
    assert [m.text for m in read_chat(write_lines(tmp_path / "c.jsonl", lines)).messages] == ["", ""]


def test_group_speaker_falls_back_to_original_avatar(tmp_path: Path) -> None:
    line = {"name": "", "is_user": False, "mes": "x", "original_avatar": "Dr. Nadia Orlov.png"}
    m = read_chat(write_lines(tmp_path / "c.jsonl", [line])).messages[0]
    assert m.name == "Dr. Nadia Orlov"


# ---------------------------------------------------------------- file shapes

def test_trailing_newline_or_none_reads_the_same(tmp_path: Path) -> None:
    lines = [HEADER, msg(), user()]
    bare = read_chat(write_lines(tmp_path / "a.jsonl", lines))
    ended = read_chat(write_lines(tmp_path / "b.jsonl", lines, end="\n"))
    assert [m.text for m in bare.messages] == [m.text for m in ended.messages]
    assert len(ended.messages) == 2


def test_crlf_line_ends_are_accepted(tmp_path: Path) -> None:
    chat = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, msg(), user()], sep="\r\n",
                                 end="\r\n"))
    assert chat.header == HEADER
    assert [m.text for m in chat.messages] == ["Hello.", "Hi."]


def test_utf8_bom_before_the_header_is_ignored(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, msg()])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    chat = read_chat(path)
    assert chat.header == HEADER and len(chat.messages) == 1


def test_blank_lines_are_ignored_and_line_numbers_still_count_them(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, "", "   ", msg()], end="\n\n")
    chat = read_chat(path)
    assert len(chat.messages) == 1
    assert chat.messages[0].line_no == 4


# ---------------------------------------------------------------- dates

UTC = timezone.utc


@pytest.mark.parametrize("value, expected", [
    ("March 25, 2025 9:19pm", datetime(2025, 3, 25, 21, 19, tzinfo=UTC)),
    ("March 25, 2025 12:05am", datetime(2025, 3, 25, 0, 5, tzinfo=UTC)),
    ("December 1, 2024 12:00pm", datetime(2024, 12, 1, 12, 0, tzinfo=UTC)),
    ("Sep 3, 2024 7:04 PM", datetime(2024, 9, 3, 19, 4, tzinfo=UTC)),
    ("三月 25, 2025 9:19pm", datetime(2025, 3, 25, 21, 19, tzinfo=UTC)),
    (1742937540000, datetime(2025, 3, 25, 21, 19, tzinfo=UTC)),
    ("1742937540000", datetime(2025, 3, 25, 21, 19, tzinfo=UTC)),
    (1742937540, datetime(2025, 3, 25, 21, 19, tzinfo=UTC)),
    ("2024-7-12@01h31m37s", datetime(2024, 7, 12, 1, 31, 37, tzinfo=UTC)),
    ("2025-03-25@21h19m28s", datetime(2025, 3, 25, 21, 19, 28, tzinfo=UTC)),
    ("2024-6-5 @14h 56m 50s 682ms", datetime(2024, 6, 5, 14, 56, 50, 682000, tzinfo=UTC)),
    ("2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)),
    ("2025-03-13T11:24:44.910Z", datetime(2025, 3, 13, 11, 24, 44, 910000, tzinfo=UTC)),
    ("2025-03-13T12:24:44+01:00", datetime(2025, 3, 13, 11, 24, 44, tzinfo=UTC)),
])
def test_every_send_date_form_is_parsed(value: object, expected: datetime) -> None:
    assert parse_send_date(value) == expected


@pytest.mark.parametrize("value", [
    "garbage", "", "   ", None, True, False, [], {}, float("nan"), float("inf"), -5, 2025,
    "February 30, 2025 1:00pm", "March 25, 2025 13:19pm", "Smarch 25, 2025 9:19pm",
    "2025-13-01@01h01m01s", "99999999999999999999999", "2025W01", "Invalid Date",
])
def test_unknown_dates_are_none_never_an_error(value: object) -> None:
    assert parse_send_date(value) is None


@given(st.one_of(st.text(max_size=40), st.integers(), st.floats(), st.none()))
def test_parse_send_date_never_raises(value: object) -> None:
    result = parse_send_date(value)
    assert result is None or result.tzinfo is not None


def test_a_bad_date_never_fails_the_read(tmp_path: Path) -> None:
    lines = [HEADER, msg(send_date="yesterday-ish"), msg(send_date=1742937540000), msg()]
    dates = [m.send_date for m in read_chat(write_lines(tmp_path / "c.jsonl", lines)).messages]
    assert dates[0] is None and dates[1] == dates[2]


# ---------------------------------------------------------------- bad input

def test_bad_json_line_names_file_line_and_json_error(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "chat.jsonl", [HEADER, msg(), '{"name":"x" "mes":"y"}', msg()])
    with pytest.raises(BadInputError) as info:
        read_chat(path)
    error = info.value
    assert error.exit_code == ExitCode.BAD_INPUT
    assert error.message.startswith(f"{path} line 3: not valid JSON (Expecting ',' delimiter")
    assert error.message.endswith("; nothing was written")
    assert "--skip-bad-lines" in (error.hint or "")
    assert "\n" not in str(error)


def test_skip_bad_lines_warns_per_line_and_counts(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, msg(), "{broken", "[1, 2]", msg(mes="ok")])
    warnings: list[str] = []
    chat = read_chat(path, skip_bad_lines=True, on_warning=warnings.append)
    assert chat.skipped_lines == 2
    assert [m.text for m in chat.messages] == ["Hello.", "ok"]
    assert [m.seq for m in chat.messages] == [0, 1]
    assert len(warnings) == 2
    assert "line 3" in warnings[0] and "line 4" in warnings[1]


def test_skip_bad_lines_without_a_warning_callback_still_counts(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, "nope", msg()])
    assert read_chat(path, skip_bad_lines=True).skipped_lines == 1


@pytest.mark.parametrize("line, kind", [("[1, 2, 3]", "list"), ('"just text"', "str"),
                                        ("42", "int"), ("null", "NoneType")])
def test_a_line_that_is_not_a_json_object_is_rejected(tmp_path: Path, line: str, kind: str) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, line])
    with pytest.raises(BadInputError, match=rf"line 2: not a JSON object \(found {kind}\)"):
        read_chat(path)


def test_a_line_that_is_not_utf8_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(dumps(HEADER).encode() + b'\n{"name":"a","mes":"caf\xe9"}')
    with pytest.raises(BadInputError, match=r"line 2: not UTF-8 text \(byte 0xe9"):
        read_chat(path)


def test_an_empty_file_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(BadInputError, match="no messages"):
        read_chat(path)
    path.write_bytes(b"\n  \n\r\n")
    with pytest.raises(BadInputError, match="no messages"):
        read_chat(path)


def test_a_file_whose_every_line_was_skipped_is_bad_input(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", ["oops", "still oops"])
    with pytest.raises(BadInputError, match="all 2 lines were unreadable"):
        read_chat(path, skip_bad_lines=True)


def test_a_missing_file_or_a_folder_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="no such file"):
        read_chat(tmp_path / "nope.jsonl")
    with pytest.raises(BadInputError, match="is a folder"):
        read_chat(tmp_path)


# ---------------------------------------------------------------- writing

def message_lines(path: Path) -> list[bytes]:
    """Every line after the header, with its line end, exactly as stored."""
    return path.read_bytes().splitlines(keepends=True)[1:]


def test_write_chat_metadata_changes_only_that_key_and_copies_messages_byte_for_byte(
        tmp_path: Path) -> None:
    header = {"user_name": "sora", "character_name": "Jesse", "create_date": "x",
              "chat_metadata": {"integrity": "keep-me", "variables": {"名": "值"}, "zz": 1}}
    odd = '{ "name" : "spaced",  "mes":"kept \\u00e9 exactly" , "is_user":false}'
    path = write_lines(tmp_path / "c.jsonl", [header, msg(mes="苏晚晴"), odd, msg()])
    before = message_lines(path)
    graph = {"version": 3, "nodes": [{"id": "n1", "fields": {"name": "苏晚晴"}}]}
    write_chat_metadata(path, "st_bme_graph", graph)
    assert message_lines(path) == before
    first = path.read_bytes().split(b"\n", 1)[0]
    written = json.loads(first)
    assert list(written) == list(header)
    assert list(written["chat_metadata"]) == ["integrity", "variables", "zz", "st_bme_graph"]
    assert written["chat_metadata"]["integrity"] == "keep-me"
    assert written["chat_metadata"]["st_bme_graph"] == graph
    assert "苏晚晴".encode() in first and b": " not in first
    assert read_chat(path).graph_in_header() == graph


def test_write_chat_metadata_replaces_an_existing_key_in_place(tmp_path: Path) -> None:
    header = {"chat_metadata": {"a": 1, "st_bme_graph": {"old": True}, "b": 2}}
    path = write_lines(tmp_path / "c.jsonl", [header, msg()])
    write_chat_metadata(path, "st_bme_graph", {"new": True})
    first = path.read_bytes().split(b"\n", 1)[0]
    assert first == b'{"chat_metadata":{"a":1,"st_bme_graph":{"new":true},"b":2}}'


@pytest.mark.parametrize("end", ["", "\n"])
def test_write_chat_metadata_keeps_the_trailing_newline_state(tmp_path: Path, end: str) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, msg(), user()], end=end)
    write_chat_metadata(path, "k", 1)
    assert path.read_bytes().endswith(b"}" + end.encode())


def test_write_chat_metadata_on_a_header_only_file_without_newline(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [{"chat_metadata": {}, "user_name": "unused"}])
    write_chat_metadata(path, "k", "v")
    assert path.read_bytes() == b'{"chat_metadata":{"k":"v"},"user_name":"unused"}'


def test_write_chat_metadata_adds_chat_metadata_when_the_header_lacks_it(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [{"user_name": "a", "character_name": "b"}, msg()])
    write_chat_metadata(path, "k", [1])
    assert json.loads(path.read_bytes().split(b"\n")[0])["chat_metadata"] == {"k": [1]}


def test_write_chat_metadata_keeps_bom_and_crlf_of_the_header_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + dumps(HEADER).encode() + b"\r\n" + dumps(msg()).encode())
    write_chat_metadata(path, "k", 1)
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf{") and data.count(b"\r\n") == 1
    assert read_chat(path).header["chat_metadata"]["k"] == 1


def test_write_chat_metadata_escapes_lone_surrogates_like_json_stringify(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"chat_metadata":{"odd":"\\ud800x"}}\n' + dumps(msg()).encode())
    write_chat_metadata(path, "k", "é")
    assert path.read_bytes().split(b"\n")[0] == b'{"chat_metadata":{"odd":"\\ud800x","k":"\xc3\xa9"}}'


def test_write_chat_metadata_refuses_a_headerless_group_file(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "g.jsonl", [msg(is_group=True), user()])
    before = path.read_bytes()
    with pytest.raises(BadInputError, match="no header line"):
        write_chat_metadata(path, "st_bme_graph", {})
    assert path.read_bytes() == before


def test_write_chat_metadata_refuses_a_broken_header(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", ['{"chat_metadata": {', msg()])
    before = path.read_bytes()
    with pytest.raises(BadInputError, match="line 1: not valid JSON"):
        write_chat_metadata(path, "k", 1)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]


def test_write_chat_metadata_rejects_nan_without_touching_the_file(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, msg()])
    before = path.read_bytes()
    with pytest.raises(BmeError, match="NaN|nan"):
        write_chat_metadata(path, "k", [float("nan")])
    assert path.read_bytes() == before


def test_write_chat_metadata_is_atomic_when_the_replace_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, msg(), user()])
    before = path.read_bytes()

    def crash(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", crash)
    with pytest.raises(BmeError, match="no space left .* the previous file was kept"):
        write_chat_metadata(path, "st_bme_graph", {"version": 3})
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]


def test_write_chat_metadata_keeps_the_file_mode(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", [HEADER, msg()])
    os.chmod(path, 0o640)
    write_chat_metadata(path, "k", 1)
    assert path.stat().st_mode & 0o777 == 0o640


def test_write_chat_metadata_on_missing_or_empty_file_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="no such file"):
        write_chat_metadata(tmp_path / "nope.jsonl", "k", 1)
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"\n")
    with pytest.raises(BadInputError, match="no messages"):
        write_chat_metadata(empty, "k", 1)


# ---------------------------------------------------------------- sample chats

def test_adventure_sample_loads_with_expected_shape() -> None:
    chat = read_chat(SAMPLES / "adventure.jsonl")
    assert len(chat.messages) == 97 and chat.header is not None
    assert (chat.user_name, chat.character_name, chat.is_group) == ("Rowan", "Mira", False)
    assert chat.messages[0].name == "Mira" and chat.assistant_turns[0] == 0
    assert len(chat.assistant_turns) == 49
    assert all(m.send_date is not None for m in chat.messages)
    assert chat.header["chat_metadata"]["integrity"]


def test_chinese_sample_loads_with_reasoning_out_of_text() -> None:
    chat = read_chat(SAMPLES / "chinese.jsonl")
    assert len(chat.messages) == 69
    assert chat.header["user_name"] == "unused"
    assert (chat.user_name, chat.character_name) == ("萧寒", "苏晚晴")
    assert [m.seq for m in chat.messages if "<think>" in m.raw] == [6, 14, 52]
    assert all("<think>" not in m.text and "</think>" not in m.text for m in chat.messages)
    assert [m.seq for m in chat.messages if m.reasoning] == [44]


def test_group_sample_loads_headerless_with_swipes_hidden_and_epoch() -> None:
    chat = read_chat(SAMPLES / "group.jsonl")
    assert chat.header is None and chat.is_group
    assert len(chat.messages) == 35 and len(chat.assistant_turns) == 26
    assert {m.name for m in chat.messages} == {"Sam", "Inspector Calloway", "Dr. Nadia Orlov", "Pip"}
    assert [(m.seq, m.swipe_id) for m in chat.messages if m.swipe_count > 1] == [(2, 0), (6, 1), (19, 1)]
    assert [m.seq for m in chat.messages if m.is_system] == [28]
    assert chat.messages[13].send_date == datetime(2025, 3, 16, 2, 17, 1, 816000, tzinfo=UTC)
    assert "\r" in chat.messages[21].raw and "\r" not in chat.messages[21].text


@pytest.mark.parametrize("name", ["adventure.jsonl", "chinese.jsonl", "group.jsonl"])
def test_sample_chats_are_written_like_sillytavern(name: str) -> None:
    data = (SAMPLES / name).read_bytes()
    assert not data.endswith(b"\n")
    for line in data.split(b"\n"):
        assert dumps(json.loads(line)).encode() == line


# ---------------------------------------------------------------- size

def test_a_50_mb_chat_reads_in_one_streaming_pass(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    body = "The caravan rolls on through the dunes. " * 24
    with open(path, "wb") as fh:
        fh.write(dumps(HEADER).encode())
        line = ("\n" + dumps(msg(mes=body, extra={"api": "custom", "model": "m"}))).encode()
        count = 50_000_000 // len(line) + 1
        fh.write(line * count)
    assert path.stat().st_size >= 50_000_000
    started = time.perf_counter()
    chat = read_chat(path)
    elapsed = time.perf_counter() - started
    assert len(chat.messages) == count
    assert chat.messages[-1].seq == count - 1 and chat.messages[-1].line_no == count + 1
    assert elapsed < 15, f"50 MB read took {elapsed:.1f}s"


# ---------------------------------------------------------------- story text and names

def test_a_card_title_is_never_a_speaker_or_the_character(tmp_path: Path) -> None:
    header = {**HEADER, "character_name": "# Fog Harbour 1937"}
    lines = [header, msg("# Fog Harbour 1937", "Welcome, {{user}}. I am {{char}}."), user(), msg("---")]
    chat = read_chat(write_lines(tmp_path / "c.jsonl", lines))
    assert (chat.user_name, chat.character_name) == ("sora", None)
    assert [m.name for m in chat.messages] == ["", "sora", ""]
    assert [m.raw_name for m in chat.messages] == ["# Fog Harbour 1937", "sora", "---"]
    assert chat.messages[0].text == "Welcome, sora. I am ."


def test_a_header_name_that_never_speaks_is_a_title_but_one_nobody_contradicts_is_kept(
        tmp_path: Path) -> None:
    lines = [{**HEADER, "character_name": "Fog Harbour"}, msg("# Fog Harbour"), user()]
    assert read_chat(write_lines(tmp_path / "a.jsonl", lines)).character_name is None
    greeting_only = [HEADER, msg(mes="Hello {{user}}, I am {{char}}.")]
    chat = read_chat(write_lines(tmp_path / "b.jsonl", greeting_only))
    assert chat.user_name == "sora" and chat.messages[0].text == "Hello sora, I am Jesse."


def test_story_options_reach_the_reader_and_raw_stays_the_file(tmp_path: Path) -> None:
    raw = "<memo>Bought rope.</memo><content>She waves.</content>"
    path = write_lines(tmp_path / "c.jsonl", [HEADER, msg(mes=raw)])
    assert read_chat(path).messages[0].text == "She waves."
    kept = read_chat(path, story=StoryOptions(keep_tags=("memo",))).messages[0]
    assert kept.text == "Bought rope.\n\nShe waves." and kept.raw == raw


def test_sillytavern_narration_has_no_speaker_and_names_no_character(tmp_path: Path) -> None:
    narration = msg("SillyTavern System", "Three days later, they reach the coast.",
                    extra={"type": "narrator"})
    chat = read_chat(write_lines(tmp_path / "c.jsonl", [HEADER, narration, narration, msg(), user()]))
    assert chat.character_name == "Jesse"
    assert [m.name for m in chat.messages] == ["", "", "Jesse", "sora"]
    assert chat.messages[0].raw_name == "SillyTavern System"


def test_a_card_the_story_never_names_narrates_and_speaks_unnamed(tmp_path):
    from bme_cli.chat import read_chat
    from bme_cli.chat_stream import open_streamed
    rows = [{"user_name": "姜蘅", "character_name": "锦瑟深宫", "chat_metadata": {}}]
    for i in range(6):
        rows += [{"name": "姜蘅", "is_user": True, "mes": f"我去请安。第{i}天"},
                 {"name": "锦瑟深宫", "is_user": False, "mes": "宸贵妃冷笑：“我早知道是你。”"}]
    rows += [{"name": "Mira", "is_user": False, "mes": "*Mira nods.*"} for _ in range(5)]
    path = tmp_path / "palace.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    chat = read_chat(path)
    assert chat.narrators == frozenset({"锦瑟深宫"})   # Mira is named in her own narration
    assert {m.name for m in chat.messages if not m.is_user} == {"", "Mira"}
    with open_streamed(path, head=3) as streamed:
        assert {m.name for m in streamed.stream() if not m.is_user} == {"", "Mira"}


# ---------------------------------------------------------------- a story's own calendar

def test_a_story_that_gives_its_own_years_far_from_the_send_dates_keeps_its_own_calendar(tmp_path: Path) -> None:
    from bme_cli.memory.extract import dialogue_message
    from bme_cli.memory.excerpts import message_units
    from bme_cli.reltime import keeps_own_calendar, named_years
    assert named_years("一九九五年，十月，油麻地。") == [1995]
    assert named_years("Date: Wednesday, October 14, 1953 — 2:14 a.m.") == [1953]
    assert named_years("London, 1888. Fog on the river.") == [1888]
    assert named_years("The DJ vanished in 1998, they say.") == []          # a year looked back to
    assert keeps_own_calendar([(1995, 2025), (1997, 2025)])
    assert not keeps_own_calendar([(1995, 2025)])                           # once is not enough
    assert not keeps_own_calendar([(2022, 2025), (2023, 2025), (1995, 2025)])
    old = write_lines(tmp_path / "old.jsonl", [HEADER, msg(mes="一九九五年，十月，油麻地。他说明天再来。"),
                                               user(mes="好。"), msg(mes="一九九五年十月三日。昨天下雨了。")])
    chat = read_chat(old)
    assert chat.own_calendar and not any(m.dated for m in chat.messages)
    assert dialogue_message(chat.messages[0], "zh").date is None            # no 2025 date in its memories
    assert "2025" not in "".join(u.text for u in message_units(chat.messages[2]))
    now = read_chat(write_lines(tmp_path / "now.jsonl", [HEADER, msg(mes="He vanished in 1998. Yesterday we met."),
                                                         user(mes="Go on."), msg(mes="Since 1998, nobody.")]))
    assert not now.own_calendar and all(m.dated for m in now.messages)
    assert "(24 Mar 2025)" in "".join(u.text for u in message_units(now.messages[0]))


def test_a_card_called_the_something_narrates_though_every_story_writes_the(tmp_path: Path) -> None:
    lines = [HEADER] + [msg(name="The Asylum", mes=f"The ward is cold. The nurse counts {i} beds.") for i in range(6)]
    chat = read_chat(write_lines(tmp_path / "c.jsonl", lines))
    assert chat.narrators == frozenset({"The Asylum"}) and all(m.name == "" for m in chat.messages)


def test_a_card_named_only_by_its_title_lines_or_inside_other_names_narrates(tmp_path: Path) -> None:
    # every reply opens with the card's title line: a heading, not the story naming the card
    lines = [HEADER] + [msg(name="草原牧歌·那达慕", mes=f"# 草原牧歌·那达慕\n第{i}章。风吹过草原。") for i in range(6)]
    assert read_chat(write_lines(tmp_path / "a.jsonl", lines)).narrators == frozenset({"草原牧歌·那达慕"})
    # "The Velnara Accord" is named by its head word; "Velnara Station" names the station, not the card
    lines = [HEADER] + [msg(name="The Velnara Accord", mes=f"We dock at Velnara Station on day {i}. Welcome to Velnara.")
                        for i in range(6)]
    assert read_chat(write_lines(tmp_path / "b.jsonl", lines)).narrators == frozenset({"The Velnara Accord"})
    # a person's card is named where another capitalised word only starts the sentence before it
    lines = [HEADER] + [msg(name="Caroline", mes="Thanks Caroline! I will.") for _ in range(6)]
    assert read_chat(write_lines(tmp_path / "c.jsonl", lines)).narrators == frozenset()
    lines = [HEADER] + [msg(name="Caroline", mes="We walked down Caroline Street.") for _ in range(6)]
    assert read_chat(write_lines(tmp_path / "d.jsonl", lines)).narrators == frozenset({"Caroline"})
    # a card named after its village narrates, however often its story names the village
    lines = [HEADER] + [msg(name="王家湾", mes="王家湾的早上，雾还没散。") for _ in range(6)]
    chat = read_chat(write_lines(tmp_path / "e.jsonl", lines))
    assert chat.narrators == frozenset({"王家湾"}) and all(m.name == "" for m in chat.messages)
