"""Offline providers: the hashing and USE embedders, the heuristic chat model, offline factory/doctor."""
from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys

import numpy as np
import pytest
from pydantic import BaseModel

from bme_cli.doctor import run_doctor
from bme_cli.errors import InvalidReplyError, ProviderError
from bme_cli.providers.base import Embedder
from bme_cli.providers.factory import build_providers, describe
from bme_cli.providers.offline import HEURISTICS, HashEmbedder, OfflineChatModel, UseEmbedder
from bme_cli.settings import Settings, load_settings
from bme_cli.task import TASK_KINDS, JsonTask


def _cos(m: np.ndarray, i: int, j: int) -> float:
    return float(m[i] @ m[j])


# ------------------------------------------------------------------ HashEmbedder

def test_hash_embedder_gives_unit_rows_of_its_dimension(hash_embedder):
    out = hash_embedder.embed(["Alice walks home", "爱丽丝走回家", ""])
    assert out.shape == (3, 256) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out[:2], axis=1), 1.0, atol=1e-5)
    assert not out[2].any()                     # an empty text is a zero row, not NaN
    assert hash_embedder.model_id == "offline:hash-256" and hash_embedder.dimension == 256
    assert isinstance(hash_embedder, Embedder) and hash_embedder.offline
    assert HashEmbedder(dim=64).embed(["x"]).shape == (1, 64)
    assert hash_embedder.embed([]).shape == (0, 256)


def test_hash_embedder_is_deterministic_across_processes():
    code = ("from bme_cli.providers.offline import HashEmbedder;"
            "print(HashEmbedder(32).embed(['Bob met 小明 in Paris']).round(6).tolist())")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(runs) == 1


def test_hash_embedder_vectors_are_the_plain_sum_of_every_feature_hashed_anew():
    # what the cached, vectorised path must equal bit for bit: each feature hashed and added in order
    from bme_cli.providers import offline

    def plain(text: str, dim: int) -> np.ndarray:
        low = text.lower()
        feats = [f for run in offline._cjk_run().findall(low) for f in offline._run_features(run)]
        feats += [f for w in offline._WORD.findall(offline._cjk_run().sub(" ", low)) for f in offline._word_features(w)]
        acc = [0.0] * dim
        for feat, weight in feats:
            h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
            acc[h % dim] += weight if (h >> 63) & 1 else -weight
        vec = np.array(acc)
        return np.sign(vec) * np.log1p(np.abs(vec))

    emb = HashEmbedder(64)
    texts = ["Bob met 小明 in Paris, and Bob met him again", "", "   ", "苏晚晴中了毒。玄真赶到", "a a a a"]
    for text in [*texts, *texts]:   # the second time from the caches
        assert np.array_equal(emb._vector(text), plain(text, 64))


def test_hash_embedder_ranks_shared_words_and_cjk_bigrams_higher(hash_embedder):
    m = hash_embedder.embed(["Alice went to the old market", "alice goes to the markets",
                             "quantum chromodynamics lecture", "小明去了北京的大学", "小明在北京上大学",
                             "今天天气很好"])
    assert _cos(m, 0, 1) > _cos(m, 0, 2) + 0.2
    assert _cos(m, 3, 4) > _cos(m, 3, 5) + 0.2


# ------------------------------------------------------------------ UseEmbedder

def test_use_embedder_loads_lazily_and_embeds_512d_unit_rows():
    emb = UseEmbedder(threads=2)
    assert emb._model is None and emb.dimension == 512 and emb.model_id == "offline:use-m3"
    assert emb.embed([]).shape == (0, 512) and emb._model is None
    out = emb.embed(["The knight drew his sword.", "骑士拔出了剑。", "I like strawberry jam."])
    assert emb._model is not None
    assert out.shape == (3, 512) and out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-4)
    assert _cos(out, 0, 1) > _cos(out, 0, 2) + 0.2          # cross-lingual match beats topic change
    assert emb.usage.embedded_texts == 3


def test_use_embedder_defaults_to_at_most_four_threads():
    assert UseEmbedder().threads == min(4, os.cpu_count() or 1)


# ------------------------------------------------------------------ OfflineChatModel

class Pick(BaseModel):
    selected: list[str]


class OtherPick(BaseModel):           # the heuristic's own model: same fields, another class
    selected: list[str]


def _task(data=None) -> JsonTask[Pick]:
    return JsonTask(kind="recall", system="s", user="u", response_model=Pick, data=data)


def test_offline_chat_answers_with_the_kinds_heuristic_validated():
    seen = []
    model = OfflineChatModel(answers={"recall": lambda data: seen.append(data) or OtherPick(selected=["n1"])})
    reply = model.complete_json(_task({"candidates": ["n1"]}))
    assert reply == Pick(selected=["n1"]) and isinstance(reply, Pick)
    assert seen == [{"candidates": ["n1"]}]
    assert (model.usage.requests, model.usage.prompt_tokens) == (1, 0)
    assert model.name == "offline-heuristic" and model.offline


def test_offline_chat_accepts_a_plain_dict_answer():
    assert OfflineChatModel(answers={"recall": lambda data: {"selected": ["a", "b"]}}).complete_json(
        _task()).selected == ["a", "b"]


def test_offline_chat_invalid_heuristic_answer_is_an_invalid_reply():
    with pytest.raises(InvalidReplyError, match="selected"):
        OfflineChatModel(answers={"recall": lambda data: {"chosen": 3}}).complete_json(_task())


def test_offline_chat_without_a_heuristic_says_what_to_do():
    model = OfflineChatModel(answers={k: v for k, v in HEURISTICS.items() if k != "recall"})
    with pytest.raises(ProviderError, match="no heuristic for the recall task") as e:
        model.complete_json(_task())
    assert "BME_CHAT_BASE_URL" in str(e.value)


def test_offline_chat_has_a_heuristic_for_every_task_kind_imported_only_when_asked(monkeypatch):
    assert set(HEURISTICS) == set(TASK_KINDS) and OfflineChatModel().missing_kinds() == []
    code = ("import sys; from bme_cli.providers.offline import OfflineChatModel; OfflineChatModel(); "
            "print(sorted(m for m in sys.modules if '.heuristic.' in m))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for kind, answer in HEURISTICS.items():   # each dispatches to the module of its own kind
        module = importlib.import_module(f"bme_cli.providers.heuristic.{kind}")
        monkeypatch.setattr(module, "answer", lambda data, kind=kind: (kind, data))
        assert answer("input") == (kind, "input")


# ------------------------------------------------------------------ factory and doctor, offline

def test_nothing_configured_builds_offline_providers_and_says_so():
    p = build_providers(Settings(), use_cache=True)
    assert isinstance(p.chat, OfflineChatModel) and isinstance(p.embedder, UseEmbedder)
    assert p.notice == ("no API configured: using the offline heuristic extractor and the "
                                "local USE embedder")
    assert p.chat.usage is p.usage and p.embedder.usage is p.usage
    info = describe(p)
    assert info["chat"] == {"name": "offline-heuristic", "offline": True}
    assert info["embedder"] == {"model_id": "offline:use-m3", "offline": True, "dimension": 512}
    assert info["cache"]["enabled"] and info["cache"]["dir"].endswith("xdg-cache/bme")


def test_hash_offline_model_and_no_cache(tmp_path):
    s = load_settings(env={"BME_EMBEDDING_OFFLINE_MODEL": "hash", "XDG_CONFIG_HOME": str(tmp_path)})
    p = build_providers(s, use_cache=False)
    assert isinstance(p.embedder, HashEmbedder) and p.cache is None
    assert "hashing embedder" in p.notice
    s = load_settings(env={"BME_CACHE": "false", "XDG_CONFIG_HOME": str(tmp_path)})
    assert build_providers(s, use_cache=True).cache is None


def test_offline_embedding_with_an_api_chat_and_a_key_without_base_url(tmp_path):
    s = load_settings(env={"BME_CHAT_BASE_URL": "http://127.0.0.1:9/v1", "BME_EMBEDDING_OFFLINE": "1",
                           "XDG_CONFIG_HOME": str(tmp_path)})
    p = build_providers(s, use_cache=False)
    assert not p.chat.offline and p.embedder.offline
    assert p.notice == "embeddings: using the local USE embedder"
    s = load_settings(env={"BME_API_KEY": "k", "XDG_CONFIG_HOME": str(tmp_path)})
    assert "no base_url" in build_providers(s, use_cache=False).notice


def test_offline_runs_do_not_import_httpx():
    code = ("import sys; from bme_cli.providers.factory import build_providers; from bme_cli.settings import "
            "Settings; build_providers(Settings()); print('httpx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_heuristic_module_missing_from_the_install_is_reported(monkeypatch):
    from bme_cli.providers import offline
    broken = {**offline.HEURISTIC_MODULES, "reflect": "providers.heuristic.not_installed"}
    monkeypatch.setattr(offline, "HEURISTIC_MODULES", broken)
    assert OfflineChatModel().missing_kinds() == ["reflect"]


def test_offline_doctor_reports_providers_and_missing_heuristics(tmp_path):
    s = load_settings(env={"BME_EMBEDDING_OFFLINE_MODEL": "hash", "XDG_CONFIG_HOME": str(tmp_path)})
    providers = build_providers(s, use_cache=False)
    providers.chat = OfflineChatModel(answers={k: v for k, v in HEURISTICS.items() if k != "reflect"})
    report = run_doctor(s, providers)
    by_name = {c.name: c for c in report.checks if c.name != "config"}
    assert by_name["chat"].status == "fail" and by_name["chat"].detail.endswith(": reflect")
    assert by_name["embedding"].status == "ok" and report.embedding_dimension == 256
    assert any("offline heuristic" in c.detail for c in report.checks if c.name == "config")
    assert run_doctor(s, build_providers(s, use_cache=False)).ok
