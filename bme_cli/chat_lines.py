"""SillyTavern chat files line by line, as JSON.parse reads them: bytes in, JSON objects out.

The layer under chat.py (which makes Messages of these objects) that the header writer and
branch detection share. Decisions worth knowing:
* Limits keep memory bounded whatever the input: a message line over MAX_LINE_BYTES (64 MiB)
  or a header line over MAX_HEADER_BYTES (256 MiB: it may hold an ST-BME graph with its
  embeddings) stops the read, even with `skip_bad_lines`; that is no chat file.
* Only strict JSON is read, as JSON.parse reads it: NaN/Infinity and numbers too long for
  Python are bad lines like any other.
* A message's lone surrogates (an escape ST writes for a split emoji) become U+FFFD at the
  door; the header's stay, since bme writes the header line back.
"""
from __future__ import annotations

import json
import os
import re
import stat
import sys
from functools import cache
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from .errors import BadInputError, TooBigError

BOM = b"\xef\xbb\xbf"
_HEADER_KEYS = ("chat_metadata", "user_name", "character_name")
_BAD_LINE_HINT = "fix or remove that line, or pass --skip-bad-lines"
_MIB = 1024 * 1024
MAX_LINE_BYTES = 64 * _MIB     # far above any real message; stops a binary blob or /dev/zero
MAX_HEADER_BYTES = 256 * _MIB  # the header may carry an ST-BME graph with its embeddings
MAX_INPUT_BYTES = 2048 * _MIB  # the max_input_mb setting's default: the whole file

Warn = Callable[[str], None]


@cache
def _unprintable() -> re.Pattern[str]:
    """Compiled on first use: the surrogate range takes a millisecond to compile, and most runs
    show no path."""
    return re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def shown(path: Path) -> str:
    """The path on one printable line: line breaks, control chars and lone surrogates escaped."""
    return _unprintable().sub(lambda m: ascii(m.group())[1:-1], str(path))


def is_header(obj: dict) -> bool:
    """The format doc's rule: a header has chat_metadata/user_name/character_name and no mes."""
    return "mes" not in obj and any(key in obj for key in _HEADER_KEYS)


def open_for_read(path: Path, max_bytes: int = MAX_INPUT_BYTES) -> BinaryIO:
    """Open a chat file in binary mode, turning OS errors into messages a user can act on;
    a file over max_bytes is refused unread."""
    try:
        # is_dir() itself raises for a path under a folder we may not enter, hence inside try.
        if path.is_dir():
            raise IsADirectoryError
        fh = open(path, "rb")
        mode = os.fstat(fh.fileno()).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # a device (/dev/zero) never ends
            fh.close()
            raise BadInputError(f"{shown(path)} is not a regular file", "pass a .jsonl chat file")
        size = os.fstat(fh.fileno()).st_size
        if stat.S_ISREG(mode) and size > max_bytes:
            fh.close()
            raise TooBigError(shown(path), size, max_bytes)
        return fh
    except IsADirectoryError:
        raise BadInputError(f"{shown(path)} is a folder, not a chat file",
                            "pass a .jsonl file, e.g. data/<user>/chats/<character>/<chat>.jsonl"
                            ) from None
    except FileNotFoundError:
        raise BadInputError(f"{shown(path)}: no such file",
                            "check the path and the file name") from None
    except OSError as exc:
        raise BadInputError(f"{shown(path)}: cannot read ({exc.strerror or exc})",
                            "check the file's permissions") from None
    except ValueError:  # a NUL byte in the path
        raise BadInputError(f"{shown(path)}: not a valid file name (it holds a NUL byte)",
                            "check the path") from None


def objects(path: Path, fh: BinaryIO, skip: bool, warn: Warn | None,
             max_bytes: int = MAX_INPUT_BYTES, end: int | None = None) -> Iterator[tuple[int, dict | None]]:
    """Yield (line_no, object) per non-blank line, or (line_no, None) for a skipped bad one;
    with `end`, only the lines that start before that byte offset."""
    for line_no, line in _lines(path, fh, max_bytes, end):
        if line_no == 1 and line.startswith(BOM):
            line = line[len(BOM):]
        if not line or line.isspace():  # isspace, unlike strip, copies nothing
            continue
        obj, problem = decode_line(line)
        if problem is None:
            yield line_no, obj
            continue
        if not skip:
            raise BadInputError(
                f"{shown(path)} line {line_no}: {problem}; nothing was written", _BAD_LINE_HINT)
        if warn is not None:
            warn(f"{shown(path)} line {line_no}: {problem}; line skipped")
        yield line_no, None


def _lines(path: Path, fh: BinaryIO, max_bytes: int = MAX_INPUT_BYTES,
           end: int | None = None) -> Iterator[tuple[int, bytes]]:
    """Yield (line_no, line), never holding more than the size limit of one line in memory;
    past max_bytes in all (a pipe: a file's size was checked when it was opened) the read stops."""
    line_no, limit, total = 0, MAX_HEADER_BYTES, 0  # MAX_HEADER_BYTES until the first non-blank (header) line
    try:
        while (end is None or total < end) and (line := fh.readline(limit + 1)):
            line_no += 1
            total += len(line)
            if total > max_bytes:
                raise TooBigError(shown(path), None, max_bytes)
            check_size(path, line_no, line, limit)
            if limit == MAX_HEADER_BYTES and not line.removeprefix(BOM).isspace():
                limit = MAX_LINE_BYTES
            yield line_no, line
    except OSError as exc:
        raise BadInputError(
            f"{shown(path)}: cannot read line {line_no + 1} ({exc.strerror or exc})",
            "check the file and the disk") from None


def check_size(path: Path, line_no: int, line: bytes, limit: int) -> None:
    """Refuse a line longer than `limit` bytes (readline handed us limit+1 of it)."""
    if len(line) > limit and not line.endswith(b"\n"):
        size = f"{limit // _MIB} MiB" if limit % _MIB == 0 else f"{limit} bytes"
        raise BadInputError(f"{shown(path)} line {line_no} is larger than {size}; "
                            "not a chat file? nothing was written",
                            "pass a SillyTavern chat file (.jsonl)")


class _NotJson(Exception):
    """A value Python's json accepts but JSON.parse (and so SillyTavern) does not."""


def _refuse_constant(name: str) -> float:
    raise _NotJson(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)  # one for all lines: json.loads builds one a call


def decode_line(line: bytes) -> tuple[dict | None, str | None]:
    """Parse one line into a dict, or say in a few words why it is not one."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        if line.startswith((b"\xff\xfe", b"\xfe\xff")):
            return None, "UTF-16 text, not UTF-8 (save the file as UTF-8)"
        return None, f"not UTF-8 text (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"
    try:
        if text.startswith("\ufeff"):  # what json.loads says of a BOM, without its per-call decoder
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        obj = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        if "\x00" in text:
            return None, "not valid JSON (it holds NUL bytes: UTF-16 text or a binary file?)"
        return None, f"not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})"
    except _NotJson as exc:
        return None, f"not valid JSON ({exc})"
    except ValueError:  # int(): Python refuses to read a number of thousands of digits
        return None, (f"not valid JSON (a number longer than {sys.get_int_max_str_digits()} "
                      "digits)")
    except RecursionError:
        return None, "not valid JSON (nested too deeply)"
    if not isinstance(obj, dict):
        return None, f"not a JSON object (found {type(obj).__name__})"
    # Only an escape can put a lone surrogate in a string. A message's are replaced here, at
    # the door; the header's stay, since bme writes the header line back (write_chat_metadata).
    if _SURROGATE_ESCAPE.search(line) and not is_header(obj):
        try:
            obj = _valid_text(obj)
        except RecursionError:
            return None, "not valid JSON (nested too deeply)"
    return obj, None


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")


def _valid_text(value: Any) -> Any:
    """value with every lone surrogate (ST writes `\\ud800` for a split emoji) made U+FFFD,
    so nothing downstream meets a string that cannot be encoded."""
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_valid_text(v) for v in value]
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    return value
