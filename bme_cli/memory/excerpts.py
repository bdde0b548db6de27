"""Excerpts: short verbatim passages of the chat, recalled beside the nodes.

A node is what the extractor made of a few messages; sometimes a line of the chat says it
better, with the detail a 200-character cell had no room for. So recall may quote the chat
itself: the story text of each message (what `Message.text` holds: reasoning, panels and
planning notes already gone) is cut into units, runs of whole sentences of one message of at
most UNIT_CHARS (UNIT_CHARS_CJK for Chinese); a longer sentence is a unit of its own, cut at a
word boundary. Filler sentences ("Wow, that's great!") are left out of every unit.

Units are retrieved by the same fusion as nodes (BM25 over the unit text, cosine against a
vector per unit, see `excerpt_vectors`), scored on the nodes' scale (`score`), and compete
with nodes for the budget in one fill (inject.fit_to_budget). Two rules keep them apart from
the nodes: a unit whose words a taken row already holds is not quoted, and an event whose
messages are all quoted whole is dropped (recall.py).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .lexical import Bm25Index, sorted_unique, tokenize, weighted_terms

if TYPE_CHECKING:
    from .trigger import MessageLike

UNIT_CHARS = 320       # about one chat message, or a paragraph of role-play narration
UNIT_CHARS_CJK = 160
SENTENCE_CHARS = 480   # a single sentence longer than this is cut (a run-on narration block)
SENTENCE_CHARS_CJK = 240
# Score shape (tuned on LoCoMo conv-26/conv-30, checked on conv-44/conv-49; the sweeps are in docs/quality.md):
NEIGHBOUR_SHARE = 0.7   # a unit gains this share of the best unit of the message before or after
SPEAKER_BOOST = 0.3     # units spoken by a person the query names weigh this much more


@dataclass(frozen=True, slots=True)
class Unit:
    """A quotable run of whole sentences of one message."""

    seq: int
    part: int              # position among the message's units
    parts: int             # how many units the message has
    speaker: str
    when: datetime | None
    text: str

    type = "excerpt"  # duck-types with Node where reports list candidates

    def label(self) -> str:
        """'#12 Mira: the text' for reports."""
        who = f"{self.speaker}: " if self.speaker else ""
        return f"#{self.seq} {who}{self.text}"

    @property
    def key(self) -> str:
        """Identifies the unit's text at its message: a changed message gets a new key."""
        digest = hashlib.sha1(self.text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{self.seq}:{digest}"


_UNITS: dict[tuple[Any, ...], list[Unit]] = {}
UNITS_CACHE = 4096   # messages: ingest cuts every batch's context window again


def message_units(message: MessageLike, names: frozenset[str] = frozenset()) -> list[Unit]:
    """The units of one message (none for hidden or blank ones, or one that is all filler);
    `names` (lowercased speakers) do not make a sentence worth quoting ("Wow, Mel!").
    Relative dates are resolved against the message's day ("yesterday (7 May 2023)")."""
    try:   # everything the units are made of
        key = (message.seq, message.name, message.is_system, message.text, message.send_date,
               getattr(message, "dated", True), names)
        hit = _UNITS.get(key)
    except TypeError:   # an unhashable send_date: cut it afresh
        return _message_units(message, names)
    if hit is None:
        if len(_UNITS) >= UNITS_CACHE:
            _UNITS.clear()
        hit = _UNITS[key] = _message_units(message, names)
    return list(hit)


def _message_units(message: MessageLike, names: frozenset[str]) -> list[Unit]:
    # Imported here: a recall from a saved index cuts no messages, and these compile many patterns.
    from ..reltime import resolve_dates, send_day
    from ..sentences import clip, is_cjk, is_filler, split_sentences, trim_lead
    if message.is_system or not (message.text or "").strip():
        return []
    cjk = is_cjk(message.text)
    limit, longest = (UNIT_CHARS_CJK, SENTENCE_CHARS_CJK) if cjk else (UNIT_CHARS, SENTENCE_CHARS)
    glue = "" if cjk else " "
    when = send_day(message)
    runs: list[str] = []
    for sentence in split_sentences(message.text):
        if is_filler(sentence, names):
            continue
        sentence = trim_lead(sentence, names)
        sentence = clip(resolve_dates(sentence, when), longest)
        if runs and len(runs[-1]) + len(glue) + len(sentence) <= limit:
            runs[-1] = runs[-1] + glue + sentence
        else:
            runs.append(sentence)
    return [Unit(message.seq, i, len(runs), message.name or "", when, text) for i, text in enumerate(runs)]


def chat_units(messages: Iterable[MessageLike]) -> list[Unit]:
    """The units of every message, in chat order."""
    msgs = list(messages)
    names = frozenset(w for m in msgs if m.name for w in tokenize(m.name, stopwords=False))
    return [u for m in msgs for u in message_units(m, names)]


@dataclass
class ExcerptIndex:
    """The units of one chat with their BM25 index, vectors and speakers, built once per recall run."""

    units: list[Unit]
    seq: np.ndarray           # int64 message seq of each unit
    bm25: Bm25Index
    emb: np.ndarray           # (M, d) float32 unit vectors (rows emb_rows), may be empty
    emb_rows: np.ndarray      # int64
    speaker_of: dict[str, np.ndarray]  # lowercased speaker -> bool mask of their units
    row_of: dict[tuple[int, int], int]  # (seq, part) -> row
    _seqs: np.ndarray | None = None     # the distinct seqs, sorted (built on first use)
    packed: tuple[dict, dict[str, np.ndarray]] | None = None  # (meta, arrays) it was unpacked from

    @property
    def n(self) -> int:
        return len(self.units)

    @classmethod
    def build(cls, units: list[Unit], vectors: dict[str, np.ndarray] | None = None) -> "ExcerptIndex":
        """Index units; `vectors` maps unit keys to vectors (units without one get BM25 only)."""
        seq = np.fromiter((u.seq for u in units), dtype=np.int64, count=len(units))
        rows, mats = [], []
        dims = {v.shape for v in (vectors or {}).values()}
        if vectors and len(dims) == 1:
            for i, u in enumerate(units):
                v = vectors.get(u.key)
                if v is not None:
                    rows.append(i)
                    mats.append(v)
        emb = np.stack(mats).astype(np.float32) if mats else np.zeros((0, 0), np.float32)
        if len(emb):
            norms = np.linalg.norm(emb, axis=1, keepdims=True)
            emb = emb / np.where(norms == 0, 1.0, norms)
        speakers: dict[str, list[int]] = {}
        for i, u in enumerate(units):
            if u.speaker:
                speakers.setdefault(u.speaker.lower(), []).append(i)
        masks = {}
        for name, idx in speakers.items():
            mask = np.zeros(len(units), dtype=bool)
            mask[idx] = True
            masks[name] = mask
        texts = [f"{u.speaker}: {u.text}" if u.speaker else u.text for u in units]
        return cls(units, seq, Bm25Index.build(texts), emb, np.asarray(rows, dtype=np.int64), masks,
                   {(u.seq, u.part): i for i, u in enumerate(units)})

    def cosine(self, query_vec: Any) -> np.ndarray:
        """Cosine of the query with every unit (0 where a unit has no vector or dimensions differ)."""
        out = np.zeros(self.n, dtype=np.float32)
        if query_vec is None or not len(self.emb_rows):
            return out
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        qn = float(np.linalg.norm(q))
        if q.shape[0] != self.emb.shape[1] or qn == 0:
            return out
        out[self.emb_rows] = self.emb @ (q / qn)
        return out

    def row(self, unit: Unit) -> int:
        """The row of a unit of this index."""
        return self.row_of[(unit.seq, unit.part)]

    def sources(self, node: Any) -> list[int]:
        """The messages with units that a node was made from (its seqRange)."""
        seqs = self._seqs if self._seqs is not None else sorted_unique(self.seq)
        self._seqs = seqs
        return seqs[(seqs >= node.seq_range[0]) & (seqs <= node.seq_end)].tolist()

    def named_speakers(self, text: str) -> np.ndarray:
        """Bool per unit: spoken by someone the text names (whole-word, case-insensitive)."""
        out = np.zeros(self.n, dtype=bool)
        tokens = set(tokenize(text, stopwords=False))
        low = text.lower()
        for name, mask in self.speaker_of.items():
            parts = tokenize(name, stopwords=False)
            if parts and all(p in tokens for p in parts) and name in low:
                out |= mask
        return out


@dataclass
class ExcerptScores:
    """Per-unit score parts and the fused score, on the scale of the nodes' fill score."""

    vector: np.ndarray
    lexical: np.ndarray
    final: np.ndarray

    def of(self, i: int) -> dict[str, float]:
        """The parts of one unit, rounded for reports."""
        return {k: round(float(getattr(self, k)[i]), 4) for k in ("vector", "lexical", "final")}


def score(index: ExcerptIndex, *, vector: np.ndarray, lexical: np.ndarray, named: np.ndarray,
          weights: Any) -> ExcerptScores:
    """The fused score of every unit, shaped like a node's fill score with its own relevance as
    its graph energy and a middling importance (a quote has no graph position and no importance
    of its own); plus a share of its neighbours' (the answer to a line is often the next line)
    and a boost for the words of people the query names."""
    v, lex = np.clip(vector, 0, 1), np.clip(lexical, 0, 1)
    own = np.maximum(v, lex)
    base = (weights.graph * own / 2.0 + weights.vector * v + weights.lexical * lex
            + weights.importance * 0.5)
    base = np.where(own > 0, base, 0.0)
    best = _best_per_seq(index.seq, base)
    around = np.maximum(_shifted(index.seq, best, -1), _shifted(index.seq, best, +1))
    final = (base + NEIGHBOUR_SHARE * around) * np.where(named, 1.0 + SPEAKER_BOOST, 1.0)
    return ExcerptScores(v, lex, np.where(base > 0, final, 0.0))


def _best_per_seq(seq: np.ndarray, values: np.ndarray) -> dict[int, float]:
    """Each message's best unit score (messages with units only, zeros included)."""
    best: dict[int, float] = {}
    for s, x in zip(seq.tolist(), values.tolist()):
        best[s] = max(best.get(s, 0.0), x)
    return best


def _shifted(seq: np.ndarray, best: dict[int, float], step: int) -> np.ndarray:
    """For each unit, the best score of the message `step` messages away among those with units."""
    order = sorted(best)
    nearest = {s: order[i + step] for i, s in enumerate(order) if 0 <= i + step < len(order)}
    return np.fromiter((best.get(nearest.get(s, -1), 0.0) for s in seq.tolist()), dtype=np.float64,
                       count=len(seq))


def quote_scores(index: ExcerptIndex, query: Any, query_vec: np.ndarray | None, weights: Any,
                 context_window: int = 0, chat_length: int | None = None) -> tuple[ExcerptScores, np.ndarray]:
    """The units' scores for a recall query, and which units may be quoted: not those of the
    messages the query was built from, nor (context_window) of the chat's last messages, which
    the model already sees."""
    lexical = index.bm25.normalised_scores(weighted_terms(query.weighted_parts()))
    scores = score(index, vector=index.cosine(query_vec), lexical=lexical,
                   named=index.named_speakers(query.anchor_text), weights=weights)
    quotable = ~np.isin(index.seq, np.asarray(query.seqs, dtype=np.int64))
    if context_window > 0 and chat_length is not None:
        quotable &= index.seq < chat_length - context_window
    return scores, quotable


def ranked(scores: ExcerptScores, allowed: np.ndarray) -> Sequence[int]:
    """Units with a positive score within `allowed`, best first (ties: later messages first)."""
    rows = np.flatnonzero(allowed & (scores.final > 0))
    return rows[np.lexsort((-rows, -scores.final[rows]))].tolist()
