"""The chat reader on hostile input: a Chat or one line of BadInputError naming the file, never
a crash, a hang or unbounded memory."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from bme_cli import chat as chat_mod
from bme_cli import chat_lines
from bme_cli.chat import Chat, is_header, read_chat
from bme_cli.errors import BadInputError, BmeError, ExitCode
from bme_cli.memory.ingest import fingerprint
from bme_cli.sillytavern.header import write_chat_metadata

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
HEADER = {"user_name": "sora", "character_name": "Jesse", "chat_metadata": {"tainted": False}}
MESSAGE = {"name": "Jesse", "is_user": False, "send_date": "March 25, 2025 9:19pm",
           "mes": "Hello <think>plan</think>there.", "swipe_id": 0, "swipes": ["Hello there."],
           "extra": {"reasoning": "why", "api": "openai"}}
MESSAGE_FIELDS = ("mes", "name", "is_user", "is_system", "swipes", "swipe_id", "extra",
                  "send_date", "original_avatar", "is_group")
HEADER_FIELDS = ("chat_metadata", "user_name", "character_name")
LINE_BREAKS = re.compile(r"[\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")  # all of str.splitlines'


def dumps(obj: object) -> bytes:
    """A line as SillyTavern writes it, except that Python's NaN/Infinity pass through."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8",
                                                                              "surrogatepass")


def lines(*objs: object) -> bytes:
    """Objects (or raw bytes) one per line."""
    return b"\n".join(o if isinstance(o, bytes) else dumps(o) for o in objs)


def not_finite(value: object) -> bool:
    """Does a JSON value hold a NaN or an infinity (written as NaN/Infinity by json.dumps)?"""
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, dict):
        return any(not_finite(v) for v in value.values())
    return isinstance(value, list) and any(not_finite(v) for v in value)


def assert_one_line_error(error: BaseException, path: Path) -> None:
    """The CLI's promise at library level: exit code 3, one line, the file named."""
    assert isinstance(error, BadInputError), f"{type(error).__name__}: {error}"
    assert error.exit_code == ExitCode.BAD_INPUT
    assert not LINE_BREAKS.search(str(error)), repr(str(error))
    assert str(path) in error.message


def assert_sane(chat: Chat) -> None:
    """Whatever the field types were, a Chat holds normalised values only."""
    assert chat.header is None or isinstance(chat.header, dict)
    for seq, m in enumerate(chat.messages):
        assert m.seq == seq and m.line_no >= 1
        assert isinstance(m.text, str) and isinstance(m.raw, str) and isinstance(m.name, str)
        assert type(m.is_user) is bool and type(m.is_system) is bool
        assert m.swipe_id is None or type(m.swipe_id) is int
        assert m.swipe_count >= 0
        assert m.send_date is None or (isinstance(m.send_date, datetime)
                                       and m.send_date.tzinfo is not None)
        assert m.reasoning is None or isinstance(m.reasoning, str)
        assert len(fingerprint(m).partition("/")[0]) == 16   # what ingest keeps to spot edits
    assert [m.line_no for m in chat.messages] == sorted({m.line_no for m in chat.messages})
    assert chat.graph_in_header() is None or isinstance(chat.graph_in_header(), dict)
    assert all(isinstance(s, int) for s in chat.assistant_turns)
    for name in (chat.user_name, chat.character_name):
        assert name is None or isinstance(name, str)


def read_or_error(path: Path, data: bytes, **kwargs: object) -> Chat | BadInputError:
    """Write `data` and read it: a sane Chat, or a checked BadInputError. Anything else fails."""
    path.write_bytes(data)
    try:
        chat = read_chat(path, **kwargs)  # type: ignore[arg-type]
    except BmeError as error:
        assert_one_line_error(error, path)
        return error
    assert_sane(chat)
    return chat


@pytest.fixture
def chat_path(tmp_path: Path) -> Path:
    return tmp_path / "chat.jsonl"


# ---------------------------------------------------------------- strategies

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(),
                         st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
message_objects = st.fixed_dictionaries(
    {}, optional={key: json_values for key in MESSAGE_FIELDS + HEADER_FIELDS})


# ---------------------------------------------------------------- property-based

@FUZZ
@given(data=st.binary(max_size=3000))
@example(data=b"\xff\xfe{\x00}\x00")
@example(data=b"\x00" * 40)
def test_random_bytes_give_a_chat_or_a_one_line_bad_input_error(
        chat_path: Path, data: bytes) -> None:
    read_or_error(chat_path, data)
    read_or_error(chat_path, data, skip_bad_lines=True, on_warning=lambda w: None)


@FUZZ
@given(text=st.text(max_size=400))
def test_random_text_with_lone_surrogates_never_crashes(chat_path: Path, text: str) -> None:
    read_or_error(chat_path, text.encode("utf-8", "surrogatepass"))


@FUZZ
@given(objs=st.lists(message_objects, min_size=1, max_size=6))
def test_any_json_value_in_any_field_reads_or_fails_cleanly(
        chat_path: Path, objs: list[dict]) -> None:
    result = read_or_error(chat_path, lines(*objs))
    has_constant = any(not_finite(obj) for obj in objs)
    not_a_chat = not any("mes" in obj for obj in objs) and not is_header(objs[0])
    if isinstance(result, BadInputError):
        # Valid JSON objects only fail for NaN/Infinity, which JSON.parse refuses too, or
        # when no line is a header or a message: JSON Lines of something else.
        assert (has_constant and "is not a JSON value" in result.message) or \
            (not_a_chat and "not a SillyTavern chat" in result.message)
    else:
        assert not has_constant and not not_a_chat


@FUZZ
@given(objs=st.lists(st.one_of(message_objects, json_values), min_size=1, max_size=6),
       mutations=st.lists(st.tuples(st.integers(0, 10_000), st.binary(max_size=3)), max_size=4))
def test_corrupted_json_lines_read_or_fail_cleanly(
        chat_path: Path, objs: list[object], mutations: list[tuple[int, bytes]]) -> None:
    data = bytearray(lines(HEADER, *objs))
    for where, junk in mutations:  # overwrite a few bytes: cut strings, stray quotes, bad UTF-8
        at = where % (len(data) + 1)
        data[at:at + len(junk)] = junk
    warnings: list[str] = []
    result = read_or_error(chat_path, bytes(data), skip_bad_lines=True,
                           on_warning=warnings.append)
    for warning in warnings:
        assert not LINE_BREAKS.search(warning) and str(chat_path) in warning
    if isinstance(result, Chat):
        assert result.skipped_lines == len(warnings)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<think>", "</think>", "<THINKING>", "</thinking>",
                                 "<Think>", "</THINK>", "a", "\n", " ", "<", ">", "/"]),
                max_size=30).map("".join))
def test_no_reasoning_tag_survives_any_tag_soup(raw: str) -> None:
    # Closed, unclosed, nested, stray: whatever the mix, no reasoning tag reaches memory.
    assert "think>" not in chat_mod.clean_text(raw).lower()
    assert "thinking>" not in chat_mod.clean_text(raw).lower()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["think", "THINKING", "Reasoning"]),
                          st.integers(0, 999)), min_size=1, max_size=12))
def test_closed_reasoning_blocks_go_and_everything_between_them_stays(
        parts: list[tuple[bool, str, int]]) -> None:
    raw = " ".join(f"<{tag}>plan{n}</{tag}>" if hidden else f"story{n}."
                   for hidden, tag, n in parts)
    text = chat_mod.clean_text(raw)
    assert "plan" not in text
    assert text.split() == [f"story{n}." for hidden, _, n in parts if not hidden]


# ---------------------------------------------------------------- wrong types, field by field

@pytest.mark.parametrize("field", MESSAGE_FIELDS)
@pytest.mark.parametrize("value", [42, -1.5, 1e300, [], ["a", 1, None], {}, {"message": 7},
                                   None, True, "", "true", "x" * 1000, [[[[[]]]]]],
                         ids=repr)
def test_every_field_of_every_type_reads_as_a_normalised_message(
        chat_path: Path, field: str, value: object) -> None:
    chat = read_or_error(chat_path, lines(HEADER, {**MESSAGE, field: value}, MESSAGE))
    assert isinstance(chat, Chat) and len(chat.messages) == 2


@pytest.mark.parametrize("field", HEADER_FIELDS)
@pytest.mark.parametrize("value", [42, [], {"st_bme_graph": [1]}, None, "unused", {"a": {}}])
def test_odd_header_values_never_fail_the_read(chat_path: Path, field: str, value: object) -> None:
    chat = read_or_error(chat_path, lines({**HEADER, field: value}, MESSAGE))
    assert isinstance(chat, Chat) and chat.header is not None


def test_wrong_types_are_normalised_the_documented_way(chat_path: Path) -> None:
    odd = {"mes": 42, "is_user": "true", "swipes": "not a list", "swipe_id": 99,
           "extra": ["not", "a", "dict"], "send_date": {"when": "now"}}
    chat = read_or_error(chat_path, lines(HEADER, odd, {"mes": ["a", 1]}, {"mes": None}))
    assert isinstance(chat, Chat)
    first, second, third = chat.messages
    assert (first.raw, first.name, first.is_user, first.swipe_count) == ("42", "", True, 0)
    assert first.swipe_id == 99 and first.reasoning is None and first.send_date is None
    assert second.raw == '["a", 1]' and third.raw == ""


# ---------------------------------------------------------------- JSON that Python bends

@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("field", ["mes", "send_date", "swipe_id", "is_user", "extra"])
def test_nan_and_infinity_are_refused_as_json_parse_refuses_them(
        chat_path: Path, literal: str, field: str) -> None:
    line = b'{"name":"a","%s":%s}' % (field.encode(), literal.encode())
    error = read_or_error(chat_path, lines(HEADER, line))
    assert isinstance(error, BadInputError)
    assert f"line 2: not valid JSON ({literal} is not a JSON value)" in error.message


def test_a_nan_in_the_header_is_refused_before_anything_is_written(chat_path: Path) -> None:
    data = b'{"user_name":"u","chat_metadata":{"x":NaN}}\n' + dumps(MESSAGE)
    chat_path.write_bytes(data)
    with pytest.raises(BadInputError, match=r"line 1: not valid JSON \(NaN is not a JSON value"):
        write_chat_metadata(chat_path, "k", 1)
    assert chat_path.read_bytes() == data


def test_an_overflowing_float_reads_like_json_parse_reads_it(chat_path: Path) -> None:
    # JSON.parse("1e999") is Infinity, so SillyTavern loads such a line; so do we.
    chat = read_or_error(chat_path, lines(HEADER, b'{"mes":"a","send_date":1e999,"x":-1e999}'))
    assert isinstance(chat, Chat) and chat.messages[0].send_date is None


def test_a_number_of_thousands_of_digits_is_a_bad_line_not_a_value_error(chat_path: Path) -> None:
    error = read_or_error(chat_path, lines(HEADER, b'{"mes":"a","swipe_id":' + b"7" * 5000 + b"}"))
    assert isinstance(error, BadInputError)
    assert "line 2: not valid JSON (a number longer than 4300 digits)" in error.message


@pytest.mark.parametrize("opener, closer", [(b"[", b"]"), (b'{"a":', b"}")])
def test_100k_nested_arrays_or_objects_are_a_bad_line(
        chat_path: Path, opener: bytes, closer: bytes) -> None:
    deep = opener * 100_000 + b"1" + closer * 100_000
    for data in (deep, lines(HEADER, b'{"mes":' + deep + b"}")):
        error = read_or_error(chat_path, data)
        assert isinstance(error, BadInputError) and "nested too deeply" in error.message


def _read_at_stack_depth(path: Path, depth: int) -> Chat | BadInputError:
    """Read with `depth` extra Python frames on the stack, as a deep caller would."""
    if depth:
        return _read_at_stack_depth(path, depth - 1)
    try:
        return read_chat(path)
    except BadInputError as error:
        return error


@pytest.mark.parametrize("stack", [0, 100, 600])
def test_nesting_near_the_recursion_limit_never_escapes_as_recursion_error(
        tmp_path: Path, stack: int) -> None:
    # A `mes` that json.loads just manages must not overflow in json.dumps (raw of a list).
    limit = sys.getrecursionlimit()
    outcomes = set()
    for depth in range(max(1, limit - stack - 120), limit - stack + 10, 3):
        path = tmp_path / f"d{depth}.jsonl"
        path.write_bytes(b'{"mes":' + b"[" * depth + b"]" * depth + b"}")
        outcomes.add(type(_read_at_stack_depth(path, stack)).__name__)
    assert outcomes == {"Chat", "BadInputError"}


# ---------------------------------------------------------------- encodings and odd characters

@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32"])
def test_utf16_or_utf32_with_a_byte_order_mark_says_so(chat_path: Path, codec: str) -> None:
    text = lines(HEADER, MESSAGE).decode()
    bom = {"utf-16-be": "\ufeff"}.get(codec, "")
    error = read_or_error(chat_path, (bom + text).encode(codec))
    assert isinstance(error, BadInputError)
    assert "line 1: UTF-16 text, not UTF-8 (save the file as UTF-8)" in error.message


def test_utf16_without_a_byte_order_mark_is_named_by_its_nul_bytes(chat_path: Path) -> None:
    error = read_or_error(chat_path, lines(HEADER, MESSAGE).decode().encode("utf-16-le"))
    assert isinstance(error, BadInputError) and "it holds NUL bytes" in error.message


def test_latin1_text_names_the_offending_byte(chat_path: Path) -> None:
    data = lines(HEADER, b'{"name":"a","mes":"caf' + "é".encode("latin-1") + b'"}')
    error = read_or_error(chat_path, data)
    assert isinstance(error, BadInputError)
    assert "line 2: not UTF-8 text (byte 0xe9 at column 23)" in error.message


def test_a_raw_nul_byte_is_a_bad_line_but_an_escaped_one_is_text(chat_path: Path) -> None:
    error = read_or_error(chat_path, lines(HEADER, b'{"mes":"a\x00b"}'))
    assert isinstance(error, BadInputError) and "line 2" in error.message
    chat = read_or_error(chat_path, lines(HEADER, b'{"mes":"a\\u0000b"}'))
    assert isinstance(chat, Chat) and chat.messages[0].text == "a\x00b"


def test_an_encoded_lone_surrogate_is_not_utf8(chat_path: Path) -> None:
    error = read_or_error(chat_path, lines(HEADER, b'{"mes":"\xed\xa0\x80"}'))
    assert isinstance(error, BadInputError) and "not UTF-8 text (byte 0xed" in error.message


def test_escaped_lone_surrogates_are_replaced_and_fingerprinted(chat_path: Path) -> None:
    chat = read_or_error(chat_path, lines(HEADER, b'{"name":"\\udfff","mes":"x\\ud800y"}'))
    assert isinstance(chat, Chat)
    message = chat.messages[0]
    assert message.text == "x\ufffdy" and message.name == "\ufffd"
    assert len(fingerprint(message).partition("/")[0]) == 16


def test_unicode_line_separators_stay_inside_their_line(chat_path: Path) -> None:
    raw = '{"mes":"a\u2028b\u2029c\x85d"}'.encode()
    chat = read_or_error(chat_path, lines(HEADER, raw, b'{"mes":"\\u2028"}', MESSAGE))
    assert isinstance(chat, Chat)
    assert [m.line_no for m in chat.messages] == [2, 3, 4]
    assert chat.messages[0].text == "a\u2028b\u2029c\x85d"


def test_a_bare_carriage_return_does_not_split_lines(chat_path: Path) -> None:
    error = read_or_error(chat_path, dumps(HEADER) + b"\r" + dumps(MESSAGE))
    assert isinstance(error, BadInputError)
    assert "line 1: not valid JSON (Extra data" in error.message


def test_json_error_messages_do_not_stutter(chat_path: Path) -> None:
    error = read_or_error(chat_path, lines(HEADER, b'{"mes":"a\tb"}'))
    assert isinstance(error, BadInputError)
    assert "(Invalid control character at column 10)" in error.message


# ---------------------------------------------------------------- huge fields

@pytest.mark.parametrize("field", ["mes", "name", "send_date", "original_avatar"])
def test_several_megabytes_in_one_field_read_quickly(chat_path: Path, field: str) -> None:
    huge = "The caravan rolls on. " * 250_000  # 5.5 MB
    started = time.perf_counter()
    chat = read_or_error(chat_path, lines(HEADER, {"mes": "x", field: huge, "extra": {}}))
    assert time.perf_counter() - started < 5
    assert isinstance(chat, Chat)


@pytest.mark.parametrize("pattern, expected", [
    ("<think>", "before  after"),            # the first opener pairs with the last closer
    ("<think></thinking>", "before  after"),
    ("<think>\n<thinking>a", "before  after"),
    ("<thinking>", "before"),                 # never closed: cut from the first opener on
    ("</think>", "after"),                    # stray closers: each drops what came before
])
def test_a_megabyte_of_unclosed_think_tags_is_linear_not_quadratic(
        chat_path: Path, pattern: str, expected: str) -> None:
    count = 1_000_000 // len(pattern)
    raw = "before " + pattern * count + "<think>gone</think> after"
    started = time.perf_counter()
    chat = read_or_error(chat_path, lines(HEADER, {"mes": raw}))
    assert time.perf_counter() - started < 2, "think-tag removal went quadratic"
    assert isinstance(chat, Chat)
    text = chat.messages[0].text
    assert text == expected


def test_text_shares_the_raw_string_when_nothing_is_cleaned(chat_path: Path) -> None:
    chat = read_or_error(chat_path, lines(HEADER, {"mes": "plain " * 999 + "end"}, MESSAGE))
    assert isinstance(chat, Chat)
    assert chat.messages[0].text is chat.messages[0].raw   # one string, not two copies
    assert chat.messages[1].text is not chat.messages[1].raw


def test_speaker_names_are_one_string_per_speaker(chat_path: Path) -> None:
    chat = read_or_error(chat_path, lines(HEADER, *[{**MESSAGE, "mes": str(i)} for i in range(3)]))
    assert isinstance(chat, Chat)
    assert chat.messages[0].name is chat.messages[2].name


# ---------------------------------------------------------------- size limits

@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(chat_lines, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(chat_lines, "MAX_HEADER_BYTES", 4000)
    yield


@pytest.mark.usefixtures("small_limits")
@pytest.mark.parametrize("skip", [False, True])
def test_a_message_line_over_the_limit_stops_the_read_even_when_skipping(
        chat_path: Path, skip: bool) -> None:
    data = lines(HEADER, MESSAGE, {"mes": "x" * 2000}, MESSAGE)
    error = read_or_error(chat_path, data, skip_bad_lines=skip)
    assert isinstance(error, BadInputError)
    assert error.message == (f"{chat_path} line 3 is larger than 1000 bytes; not a chat file? "
                             "nothing was written")


@pytest.mark.usefixtures("small_limits")
def test_a_line_of_exactly_the_limit_is_read_with_or_without_its_newline(chat_path: Path) -> None:
    line = dumps({"mes": ""})
    line = line[:-2] + b"x" * (1000 - len(line)) + line[-2:]
    assert len(line) == 1000
    for data in (lines(HEADER, line), lines(HEADER, line) + b"\n", lines(HEADER, line, MESSAGE)):
        chat = read_or_error(chat_path, data)
        assert isinstance(chat, Chat) and len(chat.messages[0].raw) == 1000 - len('{"mes":""}')


@pytest.mark.usefixtures("small_limits")
def test_the_header_may_be_larger_than_a_message_line(chat_path: Path) -> None:
    header = {**HEADER, "chat_metadata": {"st_bme_graph": {"nodes": ["n" * 3000]}}}
    chat = read_or_error(chat_path, b"\n\n" + lines(header, MESSAGE))
    assert isinstance(chat, Chat) and chat.graph_in_header() == {"nodes": ["n" * 3000]}
    big = {**HEADER, "chat_metadata": {"x": "n" * 5000}}
    error = read_or_error(chat_path, lines(big, MESSAGE))
    assert isinstance(error, BadInputError) and "line 1 is larger than 4000 bytes" in error.message


@pytest.mark.usefixtures("small_limits")
def test_write_chat_metadata_never_writes_a_header_the_reader_would_refuse(
        chat_path: Path) -> None:
    data = lines(HEADER, MESSAGE)
    chat_path.write_bytes(data)
    write_chat_metadata(chat_path, "st_bme_graph", {"nodes": ["n" * 3000]})
    assert isinstance(read_or_error(chat_path, chat_path.read_bytes()), Chat)
    chat_path.write_bytes(data)
    with pytest.raises(BmeError, match=r"header would grow to 0 MiB, more than the 0 MiB"):
        write_chat_metadata(chat_path, "st_bme_graph", {"nodes": ["n" * 5000]})
    assert chat_path.read_bytes() == data


@pytest.mark.usefixtures("small_limits")
def test_write_chat_metadata_refuses_to_read_an_oversized_header(chat_path: Path) -> None:
    data = lines({**HEADER, "chat_metadata": {"x": "n" * 5000}}, MESSAGE)
    chat_path.write_bytes(data)
    with pytest.raises(BadInputError, match="line 1 is larger than 4000 bytes"):
        write_chat_metadata(chat_path, "k", 1)
    assert chat_path.read_bytes() == data


def test_the_real_limit_refuses_a_65_mib_line(chat_path: Path) -> None:
    assert chat_lines.MAX_LINE_BYTES == 64 * 1024 * 1024
    with open(chat_path, "wb") as fh:
        fh.write(dumps(HEADER) + b'\n{"mes":"')
        fh.write(b"x" * (65 * 1024 * 1024))
        fh.write(b'"}')
    with pytest.raises(BadInputError) as info:
        read_chat(chat_path)
    assert info.value.message == (f"{chat_path} line 2 is larger than 64 MiB; not a chat file? "
                                  "nothing was written")


@pytest.mark.usefixtures("small_limits")
@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_an_endless_device_file_is_refused_before_reading() -> None:
    with pytest.raises(BadInputError, match="not a regular file"):
        read_chat(Path("/dev/zero"), skip_bad_lines=True)


# ---------------------------------------------------------------- paths

def test_a_file_name_too_long_for_the_os_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / ("x" * 300 + ".jsonl")
    with pytest.raises(BadInputError, match="cannot read .*too long") as info:
        read_chat(path)
    assert_one_line_error(info.value, path)


def test_a_nul_byte_in_the_path_is_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"not a valid file name") as info:
        read_chat(tmp_path / "a\x00b.jsonl")
    assert "\\x00" in info.value.message


@pytest.mark.parametrize("name", ["two\nlines.jsonl", "sep\u2028.jsonl", "tab\there.jsonl"])
def test_a_file_name_with_line_breaks_still_gives_a_one_line_error(
        tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"{broken")
    with pytest.raises(BadInputError) as info:
        read_chat(path)
    message = str(info.value)
    assert not LINE_BREAKS.search(message) and "\t" not in message
    assert message.startswith(f"{tmp_path}/{name.encode('unicode_escape').decode()} line 1: ")


@pytest.mark.skipif(os.name != "posix" or sys.platform == "darwin",
                    reason="undecodable file names are a Linux thing")
def test_an_undecodable_file_name_gives_a_printable_error(tmp_path: Path) -> None:
    path = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9.jsonl"))
    path.write_bytes(b"[1]")
    with pytest.raises(BadInputError) as info:
        read_chat(path)
    str(info.value).encode("utf-8")  # a lone surrogate here would crash the CLI's print
    assert "caf\\udce9.jsonl line 1: not a JSON object" in info.value.message
