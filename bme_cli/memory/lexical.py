"""Lexical retrieval: CJK-aware tokens and a BM25 index over node text (spec §10.14).

Graphs without embeddings (or with weak ones) still recall through this index. Tokens:
Latin words lowercased (a small English stopword list is dropped), numbers kept, CJK
runs as character bigrams (a lone CJK character stays a unigram). Index and query terms
(`search_terms`) are also lightly stemmed (`stem`: plural -s, -ing, -ed, final e/y), so
"painted" finds "painting" and "pots" finds "pot"; on LoCoMo that lifted BM25 alone from
0.683 to 0.708 answer recall at 1,000 tokens. The index is a
term -> postings CSR with each posting's BM25 weight precomputed (k1=1.2, b=0.75), so a
query is a handful of array slices and one `np.bincount`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Iterable, Mapping, Sequence

import numpy as np

K1 = 1.2
B = 0.75

_WORD = re.compile(r"[^\W_]+")
_DOC_BREAK = "\x01"
# ASCII non-alphanumerics are word boundaries for `_WORD`; cutting there first changes no token.
# (single-character replacements only: str.translate is fast only then).
_SPLIT_TABLE = {i: " " for i in range(128) if not chr(i).isalnum() and chr(i) != _DOC_BREAK}
# Han (incl. extension A and compatibility), kana and Hangul: scripts written without spaces.
_CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"


# The CJK classes take milliseconds to compile: done on first use, so a process that tokenizes
# only ASCII text (an English recall from a saved index) never compiles them.
@cache
def _cjk_any() -> re.Pattern[str]:
    return re.compile(f"[{_CJK_CLASS}]")


@cache
def _cjk_split() -> re.Pattern[str]:
    return re.compile(f"([{_CJK_CLASS}]+)")


STOPWORDS = frozenset("""
a an the and or but if of at by for with about against between into through during before after
above below to from up down in out on off over under again further then once here there when where
why how all any both each few more most other some such no nor not only own same so than too very
s t can will just don should now i me my myself we our ours ourselves you your yours yourself
yourselves he him his himself she her hers herself it its itself they them their theirs themselves
what which who whom this that these those am is are was were be been being have has had having do
does did doing would could ll re ve d m o y let lets
""".split())


def _split_cjk(word: str, out: list[str]) -> None:
    """Append a word holding CJK: each CJK run as bigrams (a single char as itself), other parts as words."""
    cjk_any = _cjk_any()
    for part in _cjk_split().split(word):
        if not part:
            continue
        if cjk_any.match(part):
            if len(part) == 1:
                out.append(part)
            else:
                out.extend(part[i:i + 2] for i in range(len(part) - 1))
        elif part not in STOPWORDS:
            out.append(part)


def tokenize(text: str, *, stopwords: bool = True) -> list[str]:
    """Lowercase search tokens of text: words and numbers, CJK bigrams; stopwords dropped unless told."""
    lowered = text.lower()
    words = _WORD.findall(lowered)
    if lowered.isascii() or not (cjk_any := _cjk_any()).search(lowered):   # ASCII holds no CJK
        return [w for w in words if w not in STOPWORDS] if stopwords else words
    out: list[str] = []
    for w in words:
        if cjk_any.search(w):
            _split_cjk(w, out)
        elif not stopwords or w not in STOPWORDS:
            out.append(w)
    return out


_VOWELS = frozenset("aeiou")


@lru_cache(maxsize=1 << 16)   # a chat repeats its words: ingest stems the same ones thousands of times
def stem(word: str) -> str:
    """A light English stem (a small subset of Porter's step 1 plus e/y folding); other words as they are.

    'stories' -> 'stori', 'story' -> 'stori', 'painted'/'painting'/'paints' -> 'paint',
    'running' -> 'run', 'loved'/'love' -> 'lov'. Only ASCII letters, words of 4+ letters.
    """
    if len(word) < 4 or not word.isascii() or not word.isalpha():
        return word
    w = word
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        base = w[:-len(suffix)]
        if w.endswith(suffix) and len(base) >= 3 and _VOWELS & set(base) and not w.endswith("eed"):
            w = base[:-1] if base[-1] == base[-2] and base[-1] not in "lsz" + "".join(_VOWELS) else base
            break
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    elif len(w) > 3 and w[-1] == "y":
        w = w[:-1] + "i"
    return w


def search_terms(text: str) -> list[str]:
    """`tokenize`, then `stem`: the terms the BM25 index holds and queries look up."""
    return [stem(t) for t in tokenize(text)]


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique(values) for a 1-d array, without np.unique (which imports numpy.ma, ~20 ms)."""
    out = np.sort(np.asarray(values).reshape(-1))
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out


def _expand(ptr: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Flat positions of the ptr-slices of every key, and each key's slice length."""
    starts = ptr[keys]
    lens = ptr[keys + 1] - starts
    total = int(lens.sum())
    firsts = np.cumsum(lens) - lens
    return np.repeat(starts - firsts, lens) + np.arange(total, dtype=np.int64), lens


@dataclass
class Bm25Index:
    """BM25 over a fixed list of documents (one per node row; an empty text never matches)."""

    n_docs: int
    vocab: dict[str, int]
    post_ptr: np.ndarray      # (V+1,) int64: postings of term t are [post_ptr[t], post_ptr[t+1])
    post_doc: np.ndarray      # (P,) int32 document ids
    post_weight: np.ndarray   # (P,) float32: idf * tf*(k1+1) / (tf + k1*(1-b+b*dl/avgdl))
    idf: np.ndarray           # (V,) float32

    @classmethod
    def build(cls, texts: Sequence[str | None]) -> "Bm25Index":
        """Index the texts (None or "" for documents that must never match)."""
        # The whole corpus is cut at ASCII punctuation and whitespace in two C calls (documents
        # joined by a break token); each distinct chunk then goes through `search_terms` once
        # (which splits any remaining Unicode punctuation, makes CJK bigrams, drops stopwords
        # and stems), and documents are expanded with numpy. Same terms as `search_terms`, faster.
        docs = [t or "" for t in texts]
        if any(_DOC_BREAK in t for t in docs):
            docs = [t.replace(_DOC_BREAK, " ") for t in docs]
        raw = f" {_DOC_BREAK} ".join(docs).lower().translate(_SPLIT_TABLE).split()
        words = {w: k for k, w in enumerate(dict.fromkeys(raw))}
        raw_ids = np.fromiter(map(words.__getitem__, raw), dtype=np.int64, count=len(raw))
        vocab: dict[str, int] = {}
        exp_ptr = np.zeros(len(words) + 1, dtype=np.int64)
        exp_ids: list[int] = []
        for k, w in enumerate(words):
            if w != _DOC_BREAK:
                exp_ids.extend(vocab.setdefault(t, len(vocab)) for t in search_terms(w))
            exp_ptr[k + 1] = len(exp_ids)
        newline = raw_ids == words.get(_DOC_BREAK, -1)
        doc_of = np.cumsum(newline)[~newline]
        raw_ids = raw_ids[~newline]
        pos, lens = _expand(exp_ptr, raw_ids)
        terms = np.asarray(exp_ids, dtype=np.int64)[pos] if len(pos) else np.zeros(0, np.int64)
        return cls._from_arrays(len(texts), vocab, terms, np.repeat(doc_of, lens))

    @classmethod
    def _from_arrays(cls, n: int, vocab: dict[str, int], terms: np.ndarray, docs: np.ndarray) -> "Bm25Index":
        lengths = np.bincount(docs, minlength=n)
        # One sort gives postings grouped by term, docs ascending, with term frequencies.
        keys, tf = np.unique(terms * max(n, 1) + docs, return_counts=True)
        p_term, p_doc = keys // max(n, 1), keys % max(n, 1)
        df = np.bincount(p_term, minlength=len(vocab)).astype(np.float64)
        ptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df.astype(np.int64), out=ptr[1:])
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        n_nonempty = max(1, int(np.count_nonzero(lengths)))
        avgdl = max(1.0, float(lengths.sum()) / n_nonempty)
        dl = lengths[p_doc].astype(np.float64)
        tf = tf.astype(np.float64)
        w = idf[p_term] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))
        return cls(n, vocab, ptr, p_doc.astype(np.int32), w.astype(np.float32), idf.astype(np.float32))

    def scores(self, weighted_terms: Mapping[str, float]) -> np.ndarray:
        """Raw BM25 score of every document for the weighted query terms (float32, length n_docs)."""
        parts_doc: list[np.ndarray] = []
        parts_w: list[np.ndarray] = []
        for term, qw in weighted_terms.items():
            t = self.vocab.get(term)
            if t is None or qw <= 0:
                continue
            lo, hi = self.post_ptr[t], self.post_ptr[t + 1]
            parts_doc.append(self.post_doc[lo:hi])
            parts_w.append(self.post_weight[lo:hi] * np.float32(qw))
        if not parts_doc:
            return np.zeros(self.n_docs, dtype=np.float32)
        out = np.bincount(np.concatenate(parts_doc), weights=np.concatenate(parts_w), minlength=self.n_docs)
        return out.astype(np.float32)

    def query_mass(self, weighted_terms: Mapping[str, float]) -> float:
        """Sum of weight*idf over the query's known terms: what a doc holding each term once scores."""
        total = 0.0
        for term, qw in weighted_terms.items():
            t = self.vocab.get(term)
            if t is not None and qw > 0:
                total += qw * float(self.idf[t])
        return total

    def normalised_scores(self, weighted_terms: Mapping[str, float]) -> np.ndarray:
        """BM25 / query_mass, clamped to [0, 1]: roughly the share of the query's idf mass a node holds."""
        mass = self.query_mass(weighted_terms)
        if mass <= 0:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.minimum(self.scores(weighted_terms) / np.float32(mass), np.float32(1.0))


def weighted_terms(parts: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Query term weights from (text, weight) parts: each term keeps the largest weight it gets."""
    out: dict[str, float] = {}
    for text, weight in parts:
        for tok in search_terms(text):
            if weight > out.get(tok, 0.0):
                out[tok] = weight
    return out
