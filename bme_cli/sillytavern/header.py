"""Changing a chat's header line (`chat_metadata`) and copying every message line byte for byte.

SillyTavern rewrites the whole header with JSON.stringify on every save, so bme does the
same for that one line: other keys keep their values and order, the line keeps its BOM and
line end, and the rest of the file is streamed through unchanged. The file is replaced by
bme's one atomic writer (bme_cli.atomic, through graph.files: temp file, fsync, rename),
after a copy of the old file is kept as `<chat>.bak` when asked.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from .. import chat_lines
from ..chat_lines import BOM, decode_line, is_header, open_for_read, shown
from ..errors import BadInputError, BmeError
from ..graph.files import atomic_write, keep_backup

_MIB = 1024 * 1024
MetadataChange = Callable[[dict], bool]   # edits chat_metadata in place; False: nothing to write


def write_chat_metadata(path: Path, key: str, value: Any) -> None:
    """Set `chat_metadata[key]` in the header; every other byte of the file is copied as is."""
    def change(meta: dict) -> bool:
        meta[key] = value
        return True
    update_chat_metadata(path, change)


def update_chat_metadata(path: Path, change: MetadataChange, *, backup: Path | None = None) -> bool:
    """Let `change` edit the header's chat_metadata, then replace the file atomically.

    `change` sees the header as it is on disk and may raise to refuse; when it returns
    False nothing is written. With `backup`, the old file is kept there first. Returns
    whether the file was rewritten.
    """
    path = Path(path)
    with open_for_read(path) as src:
        leading, header_line = _read_header_line(path, src)
        line_no = leading.count(b"\n") + 1
        obj, bom, ending = _parse_header(path, line_no, header_line)
        if not change(_metadata(path, obj)):
            return False
        new_line = _header_bytes(path, obj, bom, ending)
        if backup is not None:
            keep_backup(path, backup)
        atomic_write(path, _stream(leading + new_line, src))
    return True


def read_chat_metadata(path: Path) -> dict:
    """The header's chat_metadata as it is on disk (read only; the messages are not parsed)."""
    seen: list[dict] = []
    update_chat_metadata(path, lambda meta: seen.append(meta) or False)
    return seen[0]


def _stream(head: bytes, rest: BinaryIO) -> Iterator[bytes]:
    yield head
    while chunk := rest.read(1 << 20):
        yield chunk


def _read_header_line(path: Path, src: BinaryIO) -> tuple[bytes, bytes]:
    """Return (blank lines before the header, the header line with its line end)."""
    leading, limit = b"", chat_lines.MAX_HEADER_BYTES
    while line := src.readline(limit + 1):
        chat_lines.check_size(path, leading.count(b"\n") + 1, line, limit)
        if line.strip(BOM + b" \t\r\n"):
            return leading, line
        leading += line
    raise BadInputError(f"{shown(path)}: no messages (the file is empty); nothing was written",
                        "pass a SillyTavern chat file (.jsonl)")


def _parse_header(path: Path, line_no: int, line: bytes) -> tuple[dict, bytes, bytes]:
    """The header object, its BOM (or b"") and its line end; refuses a line that is no header."""
    bom = BOM if line.startswith(BOM) else b""
    body = line[len(bom):]
    ending = body[len(body.rstrip(b"\r\n")):]
    obj, problem = decode_line(body)
    if obj is None:
        raise BadInputError(f"{shown(path)} line {line_no}: {problem}; nothing was written",
                            "fix the header line first")
    if not is_header(obj):
        raise BadInputError(
            f"{shown(path)} has no header line (an old-style group chat); nothing was written",
            "older SillyTavern would read an added header as a message; keep the graph in "
            "bme's sidecar file instead")
    return obj, bom, ending


def _metadata(path: Path, obj: dict) -> dict:
    meta = obj.get("chat_metadata")
    if meta is None:
        meta = obj["chat_metadata"] = {}
    if not isinstance(meta, dict):
        raise BadInputError(f"{shown(path)}: the header's chat_metadata is not an object; "
                            "nothing was written", "fix the header line first")
    return meta


def _header_bytes(path: Path, obj: dict, bom: bytes, ending: bytes) -> bytes:
    """The header re-serialised as ST does; refused when the reader could not read it back."""
    new_line = bom + st_json(obj).encode("utf-8") + ending
    limit = chat_lines.MAX_HEADER_BYTES
    if len(new_line) - new_line.endswith(b"\n") > limit:
        # A header this reader would refuse: never write a chat bme cannot read back.
        raise BmeError(f"{shown(path)}: the header would grow to {len(new_line) // _MIB} MiB, "
                       f"more than the {limit // _MIB} MiB bme reads; nothing was written",
                       "keep the graph in bme's sidecar file instead")
    return new_line


def st_json(obj: Any) -> str:
    """JSON as JS JSON.stringify writes it: compact, non-ASCII kept, lone surrogates escaped."""
    import json
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as exc:
        raise BmeError(f"cannot store the value in the chat header ({exc}); nothing was written",
                       "NaN and Infinity are not valid JSON") from None
    # json.loads joins valid surrogate pairs, so any surrogate left here is a lone one.
    return re.sub(r"[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
