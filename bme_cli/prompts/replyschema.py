"""Bounded JSON schemas for replies, and the most tokens a reply under one can take.

A grammar-constrained server (llama.cpp, Ollama, vLLM) makes the model follow the JSON
schema it is sent, and will happily let a weak model repeat list items or extend a string
until max_tokens cuts the reply off. So every reply schema bme sends is *bounded*: each
list has maxItems, each string maxLength, numbers are small integers with a range, known
values are enums, and objects admit no other keys. `token_bound` then says how many
completion tokens the largest reply the schema allows could need, which sizes each task's
max_tokens (the chat.max_tokens setting still caps it).
"""
from __future__ import annotations

import json
import math
from typing import Any, Iterable

Schema = dict[str, Any]

# Tokens per character: English prose is about four characters a token, but CJK text and
# ids (a UUID is 20-30 tokens) come near one token per character, and a bound must hold
# for them too.
TOKENS_PER_CHAR = 1.0
PAIR_OVERHEAD = 4     # quotes, colon, comma and a little whitespace around a key or value
ITEM_OVERHEAD = 2
REPLY_OVERHEAD = 8


def text(max_chars: int) -> Schema:
    """A string of at most max_chars characters."""
    return {"type": "string", "maxLength": max_chars}


def choice(values: Iterable[str]) -> Schema:
    """One of the given strings (an enum)."""
    return {"type": "string", "enum": list(dict.fromkeys(values))}


def const(value: str) -> Schema:
    """Exactly this string."""
    return {"type": "string", "const": value}


def whole(lo: int, hi: int) -> Schema:
    """An integer in [lo, hi]."""
    return {"type": "integer", "minimum": lo, "maximum": hi}


def flag() -> Schema:
    """true or false."""
    return {"type": "boolean"}


def nullable(schema: Schema) -> Schema:
    """The schema, or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def items(schema: Schema, max_items: int) -> Schema:
    """A list of at most max_items values of schema."""
    return {"type": "array", "items": schema, "maxItems": max_items}


def record(properties: dict[str, Schema], required: Iterable[str] = ()) -> Schema:
    """An object with exactly these keys (the required ones first, no others)."""
    req = [k for k in required if k in properties]
    return {"type": "object", "properties": properties, "required": req, "additionalProperties": False}


def any_of(options: list[Schema]) -> Schema:
    """One of several shapes."""
    return options[0] if len(options) == 1 else {"anyOf": options}


def unbounded(schema: Schema, root: Schema | None = None, path: str = "$") -> list[str]:
    """Where the schema lets a reply grow without end (an empty list means bounded)."""
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return unbounded(root.get("$defs", {}).get(name, {}), root, path)
    if "const" in schema or "enum" in schema:
        return []
    out: list[str] = []
    for key in ("anyOf", "oneOf", "allOf"):
        for i, option in enumerate(schema.get(key, [])):
            out += unbounded(option, root, f"{path}.{key}[{i}]")
    if out or any(k in schema for k in ("anyOf", "oneOf", "allOf")):
        return out
    kind = schema.get("type")
    if kind == "string" and "maxLength" not in schema:
        out.append(f"{path}: string without maxLength")
    elif kind == "number" or (kind == "integer" and not {"minimum", "maximum"} <= set(schema)):
        out.append(f"{path}: {kind} without a small integer range")
    elif kind == "array":
        if "maxItems" not in schema:
            out.append(f"{path}: array without maxItems")
        out += unbounded(schema.get("items", {}), root, f"{path}[]")
    elif kind == "object":
        if schema.get("additionalProperties", True) is not False:
            out.append(f"{path}: object that admits other keys")
        for name, prop in schema.get("properties", {}).items():
            out += unbounded(prop, root, f"{path}.{name}")
    elif kind not in ("boolean", "null", "integer", "string"):
        out.append(f"{path}: no type")
    return out


def token_bound(schema: Schema, root: Schema | None = None) -> int | None:
    """Completion tokens the largest reply this schema allows could take; None if unbounded."""
    if unbounded(schema):
        return None
    return REPLY_OVERHEAD + _tokens(schema, root or schema)


def _tokens(schema: Schema, root: Schema) -> int:
    if "$ref" in schema:
        return _tokens(root.get("$defs", {})[schema["$ref"].rsplit("/", 1)[-1]], root)
    if "const" in schema:
        return _literal(schema["const"])
    if "enum" in schema:
        return max((_literal(v) for v in schema["enum"]), default=1)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return max(_tokens(o, root) for o in options)
    kind = schema.get("type")
    if kind == "string":
        return 1 + math.ceil(schema["maxLength"] * TOKENS_PER_CHAR)
    if kind == "integer":
        return len(str(max(abs(schema["minimum"]), abs(schema["maximum"])))) + 1
    if kind == "array":
        return 2 + schema["maxItems"] * (_tokens(schema["items"], root) + ITEM_OVERHEAD)
    if kind == "object":
        return 2 + sum(_literal(k) + PAIR_OVERHEAD + _tokens(v, root)
                       for k, v in schema.get("properties", {}).items())
    return 2  # boolean, null


def _literal(value: Any) -> int:
    return 1 + math.ceil(len(json.dumps(value, ensure_ascii=False)) * TOKENS_PER_CHAR)
