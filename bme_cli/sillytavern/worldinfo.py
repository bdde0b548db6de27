"""SillyTavern World Info (lorebook) files, both ways.

Out: `{"entries": {"0": {...}, ...}}` as SillyTavern writes it, every field of its entry
template with its default, from the graph's characters, places, rules and threads. Keys
are the node's name or title and its aliases; content is the label, then one
`column: value` line per filled column; rules and active threads are constant (always in
the prompt, as ST-BME's Core); order follows importance (SillyTavern puts higher orders
nearer the end of the prompt, where they weigh more).

In: the entries of any World Info file (SillyTavern's own, or a card's `character_book`,
see card.py) as `LoreEntry`s; seeds.py decides what each becomes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BadInputError
from ..graph.model import Graph, Node
from ..graph.schema import Schema

# SillyTavern's new-entry template (public/scripts/world-info.js), in its order, defaults as written.
ENTRY_DEFAULTS: dict[str, Any] = {
    "key": [], "keysecondary": [], "comment": "", "content": "", "constant": False, "vectorized": False,
    "selective": True, "selectiveLogic": 0, "addMemo": False, "order": 100, "position": 0, "disable": False,
    "ignoreBudget": False, "excludeRecursion": False, "preventRecursion": False,
    "matchPersonaDescription": False, "matchCharacterDescription": False, "matchCharacterPersonality": False,
    "matchCharacterDepthPrompt": False, "matchScenario": False, "matchCreatorNotes": False,
    "delayUntilRecursion": 0, "probability": 100, "useProbability": True, "depth": 4, "outletName": "",
    "group": "", "groupOverride": False, "groupWeight": 100, "scanDepth": None, "caseSensitive": None,
    "matchWholeWords": None, "useGroupScoring": None, "automationId": "", "role": None, "sticky": None,
    "cooldown": None, "delay": None, "triggers": [],
}
EXPORTED_TYPES = ("character", "location", "rule", "thread")
CONSTANT_TYPES = ("rule", "thread")
_ENDED = {"rule": ("revoked", "suspended"), "thread": ("completed", "abandoned")}
COMMENT_SEP = ": "   # comment = "<type>: <label>", so bme knows its own entries again
MAX_LOREBOOK_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class LoreEntry:
    """One lorebook entry as bme reads it, whichever file it came from."""

    keys: tuple[str, ...]
    content: str
    comment: str = ""
    constant: bool = False
    disabled: bool = False
    order: float = 100.0
    secondary: tuple[str, ...] = ()


# -- out ---------------------------------------------------------------------------------
def lorebook_document(graph: Graph, schema: Schema) -> dict[str, Any]:
    """The graph's characters, places, rules and threads as a SillyTavern World Info document."""
    nodes = [n for n in graph.active_nodes() if n.type in EXPORTED_TYPES and n.type in schema and _label(n)]
    nodes.sort(key=lambda n: (EXPORTED_TYPES.index(n.type), -n.importance, n.seq))
    entries: dict[str, dict[str, Any]] = {}
    for uid, node in enumerate(nodes):
        entries[str(uid)] = {"uid": uid, **_entry(node, schema), "displayIndex": uid}
    return {"entries": entries}


def _entry(node: Node, schema: Schema) -> dict[str, Any]:
    label = _label(node)
    aliases = [a.strip() for a in str(node.fields.get("aliases", "")).split(",") if a.strip()]
    ended = str(node.fields.get("status", "")).strip().casefold() in _ENDED.get(node.type, ())
    lines = [label] + [f"{col}: {_one_line(node.fields[col])}" for col in schema.columns(node.type)
                       if node.fields.get(col) not in (None, "") and _one_line(node.fields[col]) != label]
    return {**ENTRY_DEFAULTS, "key": list(dict.fromkeys([label, *aliases])),
            "comment": f"{node.type}{COMMENT_SEP}{label}", "content": "\n".join(lines),
            "constant": node.type in CONSTANT_TYPES and not ended,
            "order": int(round(node.importance * 10)), "disable": node.type == "rule" and ended}


def _label(node: Node) -> str:
    """The name (characters, places) or title (rules, threads) a lorebook key is made of."""
    return _one_line(node.fields.get("name") or node.fields.get("title") or "")


def _one_line(value: Any) -> str:
    return " ".join(str(value).split())


def lorebook_text(graph: Graph, schema: Schema) -> str:
    """The lorebook as SillyTavern saves one: JSON with a 4-space indent, non-ASCII as is."""
    return json.dumps(lorebook_document(graph, schema), ensure_ascii=False, indent=4) + "\n"


# -- in ----------------------------------------------------------------------------------
def read_lorebook(path: Path) -> list[LoreEntry]:
    """The entries of a SillyTavern World Info file (or a bare character_book); one-line errors."""
    if _starts_with_png(path):
        raise BadInputError(f"{path}: a PNG image, not a World Info file", "pass a character card with --card")
    doc = read_json_file(path, "World Info file")
    if isinstance(doc, dict) and isinstance(doc.get("entries"), (dict, list)):
        return entries_from(doc["entries"], path)
    if isinstance(doc, dict) and (str(doc.get("spec", "")).startswith("chara_card") or "first_mes" in doc):
        raise BadInputError(f"{path}: a character card, not a World Info file", "pass it with --card")
    raise BadInputError(f"{path}: not a SillyTavern World Info file (no \"entries\" object)",
                        "export the lorebook from SillyTavern's World Info panel, or pass a card with --card")


def _starts_with_png(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(8) == b"\x89PNG\r\n\x1a\n"
    except OSError:
        return False   # read_json_file says why


def read_json_file(path: Path, what: str) -> Any:
    """A JSON file's value; a missing, unreadable, huge or invalid file is one BadInputError."""
    try:
        if path.stat().st_size > MAX_LOREBOOK_BYTES:
            raise BadInputError(f"{path}: larger than {MAX_LOREBOOK_BYTES >> 20} MiB; not a {what}?")
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInputError(f"{path}: no such file", "check the path and the file name") from None
    except IsADirectoryError:
        raise BadInputError(f"{path} is a folder, not a {what}") from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return parse_json_bytes(data, f"{path}", what)


def parse_json_bytes(data: bytes, source: str, what: str) -> Any:
    """Strict JSON from bytes (a BOM allowed); anything else is one BadInputError naming the source."""
    try:
        return json.loads(data.decode("utf-8-sig"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{source}: not UTF-8 text (byte {exc.start + 1}); not a {what}?") from None
    except json.JSONDecodeError as exc:
        raise BadInputError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                            f"not a {what}?") from None
    except (ValueError, RecursionError) as exc:
        raise BadInputError(f"{source}: not valid JSON ({exc}); not a {what}?") from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def entries_from(raw: dict | list, source: Path) -> list[LoreEntry]:
    """LoreEntries of SillyTavern's entries object or a V2 character_book's entries list."""
    items = list(raw.values()) if isinstance(raw, dict) else list(raw)
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise BadInputError(f"{source}: entry {i + 1} is not an object", "fix or remove that entry")
        out.append(_lore_entry(item))
    return out


def _lore_entry(item: dict) -> LoreEntry:
    """Either layout: SillyTavern's (key, keysecondary, disable, order) or V2's (keys, enabled, insertion_order)."""
    keys = item.get("key", item.get("keys"))
    secondary = item.get("keysecondary", item.get("secondary_keys"))
    order = item.get("order", item.get("insertion_order", 100))
    disabled = item.get("disable") is True or item.get("enabled") is False
    return LoreEntry(keys=_strings(keys), secondary=_strings(secondary), content=_text(item.get("content")),
                     comment=_text(item.get("comment")) or _text(item.get("name")),
                     constant=item.get("constant") is True, disabled=disabled,
                     order=float(order) if isinstance(order, (int, float)) and not isinstance(order, bool)
                     else 100.0)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(s.strip() for s in value if isinstance(s, str) and s.strip()))


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
