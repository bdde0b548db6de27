"""Shared fixtures. Every test runs with no BME_*/OPENAI_* variables and with config, cache
and data folders inside tmp_path, so nobody's real key, config, cache or call log is touched."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).parent))   # so tests can `import openai_stub`

import llama_server  # noqa: E402
from openai_stub import OpenAIStub  # noqa: E402

from bme_cli.providers.offline import HashEmbedder  # noqa: E402

# .ci/run sets this: there the real-model tests must run, not skip.
REQUIRE_LLAMA = os.environ.get("LLAMA_TESTS_REQUIRED") == "1"


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


@pytest.fixture(scope="session")
def llama() -> Iterator[tuple[llama_server.LlamaServer, llama_server.LlamaServer]]:
    """A real llama.cpp server with SmolLM2-135M for chat, and one for embeddings (see
    tests/llama_server.py); the tests that use it skip, saying why, without the packages."""
    why = llama_server.missing()
    if why and REQUIRE_LLAMA:
        pytest.fail(f"LLAMA_TESTS_REQUIRED is set (as in CI) but the real-model tests cannot run: {why}")
    if why:
        pytest.skip(why)
    model = llama_server.smollm2_path()
    chat = llama_server.start(model)
    try:
        embed = llama_server.start(model, embedding=True, ctx=2048)
    except BaseException:
        chat.stop()
        raise
    try:
        yield chat, embed
    finally:
        chat.stop()
        embed.stop()


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's reporter
    """How long each real-model command took (tests/test_real_model.py), for the CI log."""
    if llama_server.TIMINGS:
        terminalreporter.section("real model (SmolLM2-135M on llama.cpp)")
        for line in llama_server.TIMINGS:
            terminalreporter.write_line(line)
