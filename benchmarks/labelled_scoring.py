"""Scoring a memory graph against a labelled chat (the pure half of labelled_quality.py).

Reads the labels in tests/data/labelled/ and compares them with a graph in ST-BME's v3
layout (the `graph` object of a sidecar) and with recall blocks. Knows nothing about how
the graph was made: no bme import, so it judges any extractor the same way.

Matching rules (docs/quality.md, "Extraction quality on the labelled set"):

* names and texts are compared after `norm`: NFKC, case-folded, curly quotes made straight,
  whitespace runs collapsed;
* a character (location) node matches a label when its `name` equals the label's canonical
  name or one of its aliases; several nodes on one label count once for recall and the
  extras as false positives; a name in the label's `also_ok` list is neither right nor
  wrong; anything else is a false positive, and also "junk" when it is in `not_entities`;
* a node is a junk node when its text (every string field) holds a marker of non-story
  text (`MARKERS`: markup, macros, status-panel lines, planning notes, policy lists) or one
  of the chat's `leaks` (phrases that stand only in reasoning, plans, panels, OOC notes or
  swipes that were not chosen), or when it is a junk entity;
* a fact is covered when every keyword group (a string, or a list of alternatives) occurs
  in one active node's text (graph coverage), or in the recall block for its query.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENTITY_TYPES = {"characters": "character", "places": "location"}
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def norm(text: str) -> str:
    """The form names and texts are compared in."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return re.sub(r"\s+", " ", text).strip()


def name_key(name: str) -> str:
    """The form entity names are compared in: a leading English article is no part of a name
    ("the Bend" and "Bend" are one; labels used to list both)."""
    return re.sub(r"^(?:the|a|an) ", "", norm(name))


# ------------------------------------------------------------------ labels

@dataclass(frozen=True)
class Label:
    """One character or place a careful reader would list."""

    name: str
    aliases: tuple[str, ...]
    minor: bool

    @property
    def keys(self) -> set[str]:
        return {name_key(n) for n in (self.name, *self.aliases)}


@dataclass(frozen=True)
class Fact:
    """A key fact: its sentence, the keyword groups that must all appear, and a query."""

    text: str
    keywords: tuple[tuple[str, ...], ...]
    query: str

    def found_in(self, text: str) -> bool:
        """True when every keyword group has an alternative inside `text` (already normed)."""
        return all(any(norm(k) in text for k in group) for group in self.keywords)


@dataclass
class ChatLabels:
    """Everything labelled about one chat."""

    name: str
    split: str
    language: str
    chat_path: Path
    entities: dict[str, list[Label]]
    also_ok: dict[str, set[str]]
    not_entities: set[str]
    facts: list[Fact]
    leaks: list[str]


def _labels(items: list[dict]) -> list[Label]:
    return [Label(i["name"], tuple(i.get("aliases", ())), bool(i.get("minor", False))) for i in items]


def _fact(item: dict) -> Fact:
    groups = tuple((k,) if isinstance(k, str) else tuple(k) for k in item["keywords"])
    return Fact(item["fact"], groups, item["query"])


def load_chat_labels(folder: Path, split: str, entry: dict) -> ChatLabels:
    """One manifest entry and its labels file."""
    raw = json.loads((folder / entry["labels"]).read_text(encoding="utf-8"))
    also = raw.get("also_ok", {})
    return ChatLabels(
        name=entry["name"], split=split, language=entry["language"],
        chat_path=(folder / entry["chat"]).resolve(),
        entities={k: _labels(raw[k]) for k in ENTITY_TYPES},
        also_ok={k: {name_key(n) for n in also.get(k, ())} for k in ENTITY_TYPES},
        not_entities={name_key(n) for n in raw.get("not_entities", ())},
        facts=[_fact(f) for f in raw["facts"]], leaks=list(raw.get("leaks", ())))


def load_manifest(path: Path, splits: list[str] | None = None) -> list[ChatLabels]:
    """The labelled chats of the chosen splits (all of them by default), in manifest order."""
    manifest = json.loads(path.read_text(encoding="utf-8"))
    chosen = splits or list(manifest["splits"])
    return [load_chat_labels(path.parent, split, entry)
            for split in chosen for entry in manifest["splits"][split]]


# ------------------------------------------------------------------ junk markers
# Each marker says what kind of non-story text it is. They name structure (tags, macros,
# key: value panels) and the generic words presets use, never a word of a labelled chat.

_PANEL_KEYS = ("date|time|day|location|room|weather|mood|cash|coin|money|status|hp|affection|"
               "outfit|party|item|items|found|lead|clue|present|lamp|radio|open|rule|event|"
               "时间|时辰|日期|地点|天气|心情|好感度|金钱|法币|衣着|状态|物品|线索|在场|同行|"
               "期限|任务|计划|体力|事件|项目|结案|缴获|下一站|节令|传闻")
MARKERS: dict[str, list[re.Pattern]] = {
    "macro": [re.compile(r"\{\{[^{}]{1,40}\}\}"), re.compile(r"<(?:user|bot|char)>", re.I)],
    "markup": [re.compile(r"<(?!(?i:user|bot|char)>)/?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>"), re.compile(r"<!--|-->"),
               re.compile(r"```"), re.compile(r"\|[^|\n]*\|[^|\n]*\|"),
               re.compile(r"\b(?:font-family|font-size|background|border(?:-[a-z]+)?|padding)\s*:"),
               re.compile(r"\b(?:StatusBlock|safety_check|plot_summary|main_plot|parallel_plots"
                          r"|sub_event)\b")],
    "policy": [re.compile(r"\b(?:Harassment|Sexually Explicit|Dangerous Content|Hate Speech)\b"),
               re.compile(r"\bHate\s*:")],
    "planning": [re.compile(r"根据要求|推进主线|推进支线|本轮|本回复|字数|用户扮演|用户希望|用户要求|埋下?伏笔"),
                 re.compile(r"\bPlan\s*:|\bOOC\b|（OOC|\bthe user (?:is|has|wants|asks|asked|brought|told)\b",
                            re.I)],
}
_PANEL_LINE = re.compile(rf"(?:^|[\s|>:：。，,;📅📍❤💰🔑🩸⚠⏳🧑👗])({_PANEL_KEYS})\s*[:：]\s*\S", re.I)


def markers_in(text: str) -> list[str]:
    """The kinds of non-story text found in a node's raw (un-normed) text."""
    kinds = [kind for kind, patterns in MARKERS.items() if any(p.search(text) for p in patterns)]
    if len({m.group(1).casefold() for m in _PANEL_LINE.finditer(text)}) >= 2:
        kinds.append("panel")
    return kinds


# ------------------------------------------------------------------ scoring

def node_text(node: dict) -> str:
    """Every string field of a node, one per line."""
    return "\n".join(str(v) for v in node.get("fields", {}).values() if isinstance(v, str))


def active_nodes(graph: dict) -> list[dict]:
    """Nodes that are not archived (deleted, forgotten or compressed away)."""
    return [n for n in graph.get("nodes", []) if not n.get("archived")]


@dataclass
class EntityScore:
    """Precision and recall of one entity type in one chat."""

    labels: int = 0
    labels_main: int = 0
    found: list[str] = field(default_factory=list)        # canonical names matched
    missed: list[str] = field(default_factory=list)       # "name" or "name (minor)"
    missed_main: int = 0
    nodes: int = 0                                        # nodes judged (also_ok excluded)
    duplicates: list[str] = field(default_factory=list)   # extra nodes of a matched label
    false_positives: list[str] = field(default_factory=list)
    neutral: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        return len(self.found) / self.nodes if self.nodes else None

    @property
    def recall(self) -> float | None:
        return len(self.found) / self.labels if self.labels else None

    @property
    def recall_main(self) -> float | None:
        return (self.labels_main - self.missed_main) / self.labels_main if self.labels_main else None


def score_entities(nodes: list[dict], kind: str, cl: ChatLabels) -> EntityScore:
    """Compare the active nodes of one type with the chat's labels of that kind."""
    labels = cl.entities[kind]
    other = [lab for k, labs in cl.entities.items() if k != kind for lab in labs]
    score = EntityScore(labels=len(labels), labels_main=sum(not lab.minor for lab in labels))
    seen: set[int] = set()
    for node in nodes:
        if node.get("type") != ENTITY_TYPES[kind]:
            continue
        name = str(node.get("fields", {}).get("name", ""))
        key = name_key(name)
        hit = next((i for i, lab in enumerate(labels) if key in lab.keys), None)
        if hit is None and key in cl.also_ok[kind]:
            score.neutral.append(name)
            continue
        score.nodes += 1
        if hit is None:
            score.false_positives.append(_why_wrong(name, key, other, cl))
        elif hit in seen:
            score.duplicates.append(f"{name} (again {labels[hit].name})")
        else:
            seen.add(hit)
            score.found.append(labels[hit].name)
    for i, lab in enumerate(labels):
        if i not in seen:
            score.missed.append(lab.name + (" (minor)" if lab.minor else ""))
            score.missed_main += not lab.minor
    return score


def _why_wrong(name: str, key: str, other: list[Label], cl: ChatLabels) -> str:
    if key in cl.not_entities:
        return f"{name} [junk]"
    lab = next((lab for lab in other if key in lab.keys), None)
    return f"{name} [is {lab.name}, other type]" if lab else name


@dataclass
class ChatScore:
    """Everything measured on one chat."""

    name: str
    split: str
    language: str
    entities: dict[str, EntityScore]
    junk_nodes: dict[str, list[str]]          # node type -> "snippet [kinds]"
    leaks: list[str]                          # leak phrases found in active nodes
    facts_graph: list[bool]
    facts_recall: list[bool]
    missed_facts_graph: list[str]
    missed_facts_recall: list[str]
    active_nodes: int

    @property
    def junk_count(self) -> int:
        return sum(len(v) for v in self.junk_nodes.values())


def score_chat(cl: ChatLabels, graph: dict, blocks: list[str]) -> ChatScore:
    """Score one chat's graph, and the recall blocks of its facts' queries (same order)."""
    nodes = active_nodes(graph)
    texts = [(n, node_text(n)) for n in nodes]
    normed = [norm(t) for _, t in texts]
    entities = {kind: score_entities(nodes, kind, cl) for kind in ENTITY_TYPES}
    leaks = [p for p in cl.leaks if any(norm(p) in t for t in normed)]
    junk: dict[str, list[str]] = {}
    for (node, raw), low in zip(texts, normed):
        kinds = markers_in(raw)
        kinds += ["leak"] * any(norm(p) in low for p in leaks)
        if node.get("type") in ENTITY_TYPES.values() and name_key(str(node["fields"].get("name", ""))) in cl.not_entities:
            kinds.append("junk entity")
        if kinds:
            junk.setdefault(node["type"], []).append(f"{_snippet(raw)} [{', '.join(kinds)}]")
    in_graph = [any(f.found_in(t) for t in normed) for f in cl.facts]
    in_block = [f.found_in(norm(b)) for f, b in zip(cl.facts, blocks)]
    return ChatScore(cl.name, cl.split, cl.language, entities, junk, leaks, in_graph, in_block,
                     [f.text for f, ok in zip(cl.facts, in_graph) if not ok],
                     [f.text for f, ok in zip(cl.facts, in_block) if not ok], len(nodes))


def _snippet(text: str, width: int = 70) -> str:
    one = re.sub(r"\s+", " ", text).strip()
    return one if len(one) <= width else one[: width - 1] + "…"
