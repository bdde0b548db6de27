"""SillyTavern character cards: V2/V3 JSON, or the PNG that carries one in a text chunk.

A PNG card keeps its JSON base64-encoded in a `tEXt` chunk named `ccv3` (V3) or `chara`
(V2, and V3 cards for older readers); the V3 one wins when both are there. V1 cards (the
fields at the top level, no `data`) are read too. The card's `character_book` is a lorebook
in the V2 layout (`keys`, `enabled`, `insertion_order`).
"""
from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadInputError
from .worldinfo import LoreEntry, MAX_LOREBOOK_BYTES, entries_from, parse_json_bytes

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CARD_CHUNKS = ("ccv3", "chara")   # in order of preference
_HINT = "pass a character card exported from SillyTavern (.png or .json)"


@dataclass(frozen=True)
class Card:
    """What bme takes from a character card."""

    name: str
    description: str = ""
    personality: str = ""
    scenario: str = ""
    entries: list[LoreEntry] = field(default_factory=list)


def read_card(path: Path) -> Card:
    """A character card from a .png or .json file; a bad file is one BadInputError."""
    try:
        if path.stat().st_size > MAX_LOREBOOK_BYTES:
            raise BadInputError(f"{path}: larger than {MAX_LOREBOOK_BYTES >> 20} MiB; not a character card?", _HINT)
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInputError(f"{path}: no such file", "check the path and the file name") from None
    except IsADirectoryError:
        raise BadInputError(f"{path} is a folder, not a character card", _HINT) from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if data.startswith(PNG_SIGNATURE):
        data = _card_chunk(data, path)
    return card_from_json(parse_json_bytes(data, str(path), "character card"), path)


def _card_chunk(png: bytes, path: Path) -> bytes:
    """The decoded JSON of the PNG's card chunk (ccv3, else chara)."""
    texts = png_text_chunks(png, path)
    name = next((k for k in _CARD_CHUNKS if k in texts), None)
    if name is None:
        raise BadInputError(f"{path}: a PNG image without a character card in it (no chara text chunk)", _HINT)
    try:
        return base64.b64decode(texts[name], validate=False)
    except (binascii.Error, ValueError):
        raise BadInputError(f"{path}: the PNG's {name} chunk is not base64 text", _HINT) from None


def png_text_chunks(png: bytes, path: Path) -> dict[str, bytes]:
    """keyword -> text of every tEXt chunk, walking the chunks until IEND."""
    out: dict[str, bytes] = {}
    pos = len(PNG_SIGNATURE)
    while pos + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        end = pos + 8 + length
        if end + 4 > len(png):
            raise BadInputError(f"{path}: a truncated PNG (chunk {kind!r} runs past the end of the file)", _HINT)
        if kind == b"tEXt":
            keyword, _, text = png[pos + 8:end].partition(b"\0")
            out.setdefault(keyword.decode("latin-1"), text)
        if kind == b"IEND":
            break
        pos = end + 4   # the CRC
    return out


def card_from_json(doc: Any, path: Path) -> Card:
    """A Card from a parsed V1, V2 or V3 card."""
    if not isinstance(doc, dict):
        raise BadInputError(f"{path}: not a character card (a JSON {type(doc).__name__}, not an object)", _HINT)
    data = doc.get("data") if isinstance(doc.get("data"), dict) else doc
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise BadInputError(f"{path}: not a character card (no \"name\")", _HINT)
    book = data.get("character_book")
    entries = book.get("entries") if isinstance(book, dict) else None
    return Card(name=name.strip(), description=_text(data.get("description")),
                personality=_text(data.get("personality")), scenario=_text(data.get("scenario")),
                entries=entries_from(entries, path) if isinstance(entries, (list, dict)) else [])


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
