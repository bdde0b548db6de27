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
* **repeats itself**: a loop, as the upkeep guard finds them (memory/guard.py);
* **already in the graph**: a created event, or any label of 40 characters or more, that
  begins as an existing node's label (or an earlier create's) does, or is its beginning;
* **off the messages**: an event summary of three or more terms sharing less than
  MIN_SUMMARY_OVERLAP of them with the batch's messages (existing nodes do not count: a
  model that restates an old event has not read the new messages).

The last two are not judged for text in another script than the messages (Chinese memories of
an English chat). A bad label field drops the operation; another bad field is dropped alone.
Every extractor is screened the same way: the offline heuristic writes from the messages and
passes (tests/test_extract_guard.py checks it on the sample chats).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Iterable

from ..prompts.extract import CreateOp, ExtractInput, UpdateOp, speaker_line
from ..task import JsonTask
from ..text import detect_language
from . import guard
from .lexical import tokenize

LABEL_KEYS = ("name", "title", "summary", "insight")
NAME_KEYS = ("name", "title")   # a name must come from the input, even a one-word one
MIN_SUMMARY_OVERLAP = 0.2
_IDENTIFIER = re.compile(r"^[A-Za-z]+(?:_[A-Za-z0-9]+|[0-9]+)\w*$")
_HAS_WORD = re.compile(r"[^\W_]")
_DATE_MARK = re.compile(r"^\s*\[[^\]]{1,40}\]\s*")   # "[27 Mar 2023] " that dated() puts first
_NO_SCAFFOLD = guard.Scaffold(frozenset(), frozenset())
REPEATED = "already in the graph"
MIN_DUPLICATE_CHARS = 40   # shorter labels ("Mira", "The harbour") may well repeat: names merge in apply


@dataclass
class Screened:
    """What the screen dropped: whole operations and single fields, with why."""

    dropped_ops: list[str] = field(default_factory=list)
    dropped_fields: list[str] = field(default_factory=list)
    repeated: int = 0        # of the dropped ops, those only saying what the graph holds

    @property
    def junk(self) -> bool:
        """Whether anything was dropped for being copied, made up or a loop (not a repeat)."""
        return len(self.dropped_ops) > self.repeated


@dataclass
class _Shown:
    """What the model was shown, normalised for the checks."""

    prompt: str              # the whole prompt
    inputs: list[str]        # messages with speakers, names, existing nodes
    messages: list[str]      # the dialogue alone
    joined: str              # the inputs in one text
    labels: list[str]        # existing nodes' labels, and those of creates kept so far

    @classmethod
    def of(cls, task: JsonTask[Any], data: ExtractInput) -> "_Shown":
        messages = [speaker_line(m) for m in data.messages]  # as the prompt shows each line
        nodes = [f"{n.label} {n.detail}" for g in data.overview for n in g.nodes]
        inputs = messages + nodes + [n for n in (data.user_name, data.character_name) if n]
        labels = [_bare(n.label) for g in data.overview for n in g.nodes]
        # _norm(system + "\n" + user), with the system prompt's part kept: casefolding maps no
        # character to or from white space, so the two parts normalise apart
        prompt = " ".join(p for p in (_norm_system(task.system), _norm(task.user)) if p)
        return cls(prompt, inputs, messages, _norm("\n".join(inputs)), labels)

    # Each field is held against the same inputs: their terms and language are worked out once.
    @cached_property
    def input_terms(self) -> set[str]:
        return guard.source_terms(self.inputs)

    @cached_property
    def message_terms(self) -> set[str]:
        return guard.source_terms(self.messages)

    @cached_property
    def language(self) -> str:
        return detect_language(self.joined)

    def repeats(self, value: str) -> bool:
        """Whether a created label says what an existing node (or an earlier create) says."""
        text = _bare(value)
        return len(text) >= MIN_DUPLICATE_CHARS and any(
            len(old) >= MIN_DUPLICATE_CHARS and (text.startswith(old) or old.startswith(text)) for old in self.labels)


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


@lru_cache(maxsize=16)   # the same instructions every batch
def _norm_system(text: str) -> str:
    return _norm(text)


def _bare(label: str) -> str:
    """A label without its date mark and the overview's ellipsis, normalised."""
    return _norm(_DATE_MARK.sub("", label)).rstrip("…").strip()


def field_problem(key: str, value: str, *, label: bool, event: bool, create: bool, shown: _Shown) -> str | None:
    """Why one field's text must not be stored, or None."""
    if not _HAS_WORD.search(value):
        return "a placeholder"
    words = tokenize(value, stopwords=False)
    text = _norm(value)
    if (len(words) >= 2 or _IDENTIFIER.match(value.strip())) and text in shown.prompt and text not in shown.joined:
        return "copied from the prompt"
    if guard.verdict(guard.measure(value, _NO_SCAFFOLD), required=False):
        return "repeats itself"
    if create and label and shown.repeats(value):
        return REPEATED
    if detect_language(value) != shown.language:
        return None
    terms, share = guard.overlap_in(value, shown.input_terms)
    if share == 0.0 and (terms >= 2 or label and key in NAME_KEYS):
        return "in no message"
    if event and key == "summary":
        terms, share = guard.overlap_in(value, shown.message_terms)   # an event is about the messages
        if terms >= 3 and share < MIN_SUMMARY_OVERLAP:
            return f"off the messages ({share:.0%} of its words in them)"
    return None


def screen(task: JsonTask[Any], operations: list[Any], node_type: Any) -> tuple[list[Any], Screened]:
    """The operations worth applying, and what was dropped. `node_type(op)` gives an op's schema
    type, None for an unknown type or node (left for apply to count)."""
    data = task.data
    if not isinstance(data, ExtractInput):
        return operations, Screened()
    shown = _Shown.of(task, data)
    kept, out = [], Screened()
    for op in operations:
        kind = node_type(op) if isinstance(op, (CreateOp, UpdateOp)) else None
        if kind is None:
            kept.append(op)
            continue
        label = next((k for k in LABEL_KEYS if isinstance(op.fields.get(k), str)), None)
        create = isinstance(op, CreateOp)
        bad = {k: why for k, v in op.fields.items() if isinstance(v, str) and v
               and (why := field_problem(k, v, label=k == label, event=kind == "event", create=create,
                                         shown=shown))}
        if label in bad:
            out.dropped_ops.append(f"{label} {_show(op.fields[label])}: {bad[label]}")
            out.repeated += bad[label] == REPEATED
            continue
        for k, why in bad.items():
            out.dropped_fields.append(f"{k} {_show(op.fields[k])}: {why}")
            del op.fields[k]
        if create and label:
            shown.labels.append(_bare(op.fields[label]))
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
