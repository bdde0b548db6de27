"""Extraction operations a model copied from its prompt or made up, dropped before they are applied.

A small model (SmolLM2-135M on llama.cpp) answers extraction with valid JSON built from the
prompt itself: the example's `loc1` as a place's name, `A, B` as participants, a schema
column's description ("the story so far") as an event summary, a placeholder
(`current_condition`) as a state. Each created or updated node's text fields are held against
what the batch shows the model: its messages and speakers, and the overview of existing nodes.

* **placeholder**: a field with no letter or digit ("...", "-");
* **copied**: a field of two or more words, or one that looks like an identifier (`loc1`,
  `current_condition`), whose whole text stands in the prompt but in none of those inputs;
* **made up**: a name or title, or any field of two or more content terms, none of whose
  terms occurs in the inputs;
* **off the messages**: an event summary of three or more terms sharing less than
  MIN_SUMMARY_OVERLAP of them with the inputs.

The last two are not judged for text in another script than the messages (Chinese memories of
an English chat). A bad label field drops the operation; another bad field is dropped alone.
Every extractor is screened the same way: the offline heuristic writes from the messages and
passes (tests/test_extract_guard.py checks it on the sample chats).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..prompts.extract import CreateOp, ExtractInput, UpdateOp
from ..providers.base import JsonTask
from ..text import detect_language
from .guard import overlap
from .lexical import tokenize

LABEL_KEYS = ("name", "title", "summary", "insight")
NAME_KEYS = ("name", "title")   # a name must come from the input, even a one-word one
MIN_SUMMARY_OVERLAP = 0.2
_IDENTIFIER = re.compile(r"^[A-Za-z]+(?:_[A-Za-z0-9]+|[0-9]+)\w*$")
_HAS_WORD = re.compile(r"[^\W_]")


@dataclass
class Screened:
    """What the screen dropped: whole operations and single fields, with why."""

    dropped_ops: list[str] = field(default_factory=list)
    dropped_fields: list[str] = field(default_factory=list)


def inputs_of(data: ExtractInput) -> list[str]:
    """The texts the model was shown as input: messages, speakers, names, existing nodes."""
    texts = [f"{m.name} {m.text}" for m in data.messages]
    texts += [f"{n.label} {n.detail}" for g in data.overview for n in g.nodes]
    return texts + [n for n in (data.user_name, data.character_name) if n]


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def field_problem(key: str, value: str, *, label: bool, event: bool, prompt: str, inputs: list[str],
                  joined: str) -> str | None:
    """Why one field's text must not be stored, or None."""
    if not _HAS_WORD.search(value):
        return "a placeholder"
    words = tokenize(value, stopwords=False)
    text = _norm(value)
    if (len(words) >= 2 or _IDENTIFIER.match(value.strip())) and text in prompt and text not in joined:
        return "copied from the prompt"
    if detect_language(value) != detect_language(joined):
        return None
    terms, share = overlap(value, inputs)
    if share == 0.0 and (terms >= 2 or label and key in NAME_KEYS):
        return "in no message"
    if event and key == "summary" and terms >= 3 and share < MIN_SUMMARY_OVERLAP:
        return f"off the messages ({share:.0%} of its words in them)"
    return None


def screen(task: JsonTask[Any], operations: list[Any], node_type: Any) -> tuple[list[Any], Screened]:
    """The operations worth applying, and what was dropped. `node_type(op)` gives an op's schema
    type, None for an unknown type or node (left for apply to count)."""
    data = task.data
    if not isinstance(data, ExtractInput):
        return operations, Screened()
    inputs = inputs_of(data)
    joined, prompt = _norm("\n".join(inputs)), _norm(f"{task.system}\n{task.user}")
    kept, out = [], Screened()
    for op in operations:
        kind = node_type(op) if isinstance(op, (CreateOp, UpdateOp)) else None
        if kind is None:
            kept.append(op)
            continue
        event = kind == "event"
        label = next((k for k in LABEL_KEYS if isinstance(op.fields.get(k), str)), None)
        bad = {k: why for k, v in op.fields.items() if isinstance(v, str) and v
               and (why := field_problem(k, v, label=k == label, event=event, prompt=prompt, inputs=inputs,
                                         joined=joined))}
        if label in bad:
            out.dropped_ops.append(f"{label} {_show(op.fields[label])}: {bad[label]}")
            continue
        for k, why in bad.items():
            out.dropped_fields.append(f"{k} {_show(op.fields[k])}: {why}")
            del op.fields[k]
        kept.append(op)
    return kept, out


def _show(value: str, limit: int = 40) -> str:
    value = " ".join(value.split())
    return repr(value if len(value) <= limit else value[:limit - 1] + "…")


def problems(texts: Iterable[str]) -> str:
    """The first few reasons, joined for one warning line."""
    texts = list(texts)
    more = f" and {len(texts) - 3} more" if len(texts) > 3 else ""
    return "; ".join(texts[:3]) + more
