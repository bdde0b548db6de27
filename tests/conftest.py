"""Shared fixtures. Every test runs with no BME_*/OPENAI_* variables and with config, cache
and data folders inside tmp_path, so nobody's real key, config, cache or call log is touched."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))   # so tests can `import openai_stub`

from openai_stub import OpenAIStub  # noqa: E402

from bme_cli.providers.offline import HashEmbedder  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("BME_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))   # the call log


@pytest.fixture
def openai_stub() -> Iterator[OpenAIStub]:
    """A scriptable OpenAI-compatible server on 127.0.0.1 (see tests/openai_stub.py)."""
    stub = OpenAIStub().start()
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    """A deterministic 256-d embedder (no model download, instant)."""
    return HashEmbedder(dim=256)
