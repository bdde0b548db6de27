"""What answers is said once, after the command succeeded, and never with -q: the offline
notice, and where embeddings go when only the chat endpoint was set."""
from __future__ import annotations

from pathlib import Path

import pytest

from cli_support import cli_env, copy_samples, error_lines, ingested, ingested_template, invoke, ok  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")
OFFLINE = "no API configured"


def _notices(stderr: str, text: str) -> list[str]:
    return [line for line in stderr.splitlines() if text in line]


def test_the_offline_notice_comes_once_after_the_result(ingested: dict[str, Path]) -> None:
    result = ok("recall", ingested["group"], "--no-reinforce")
    assert len(_notices(result.stderr, OFFLINE)) == 1
    assert result.stderr.splitlines()[-1].startswith("bme: " + OFFLINE)


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_silences_it_wherever_it_is_typed(ingested: dict[str, Path], where: str) -> None:
    args = ["recall", str(ingested["group"]), "--no-reinforce"]
    result = ok(*(["-q", *args] if where == "before" else [*args, "-q"]))
    assert result.stderr == "" and result.stdout


def test_no_notice_before_an_error(tmp_path: Path) -> None:
    result = invoke("recall", tmp_path / "missing.jsonl")
    assert result.exit_code == 3 and not _notices(result.stderr, OFFLINE) and len(error_lines(result)) == 1


def test_ingest_says_offline_in_its_table_only(tmp_path: Path) -> None:
    chat = copy_samples(tmp_path, ("group",))["group"]
    result = ok("ingest", chat)
    assert "offline: no model called" in result.stderr and not _notices(result.stderr, OFFLINE)


def test_embeddings_that_follow_the_chat_endpoint_are_announced(ingested: dict[str, Path], openai_stub,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BME_CHAT_BASE_URL", openai_stub.base_url)
    told = ok("--no-cache", "recall", ingested["group"], "--no-reinforce")
    [line] = _notices(told.stderr, "embeddings: sent to the chat endpoint")
    assert openai_stub.base_url in line and "BME_EMBEDDING_BASE_URL" in line
    monkeypatch.setenv("BME_EMBEDDING_BASE_URL", openai_stub.base_url)
    chosen = ok("--no-cache", "recall", ingested["group"], "--no-reinforce")
    assert not _notices(chosen.stderr, "embeddings:")


@pytest.mark.skipif(__import__("os").name != "posix", reason="POSIX file modes")
def test_a_key_file_others_can_read_is_said_once_and_not_with_quiet(ingested: dict[str, Path], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[embedding]\noffline = true\napi_key = "sk-NOT-PRINTED"\n')
    cfg.chmod(0o644)
    monkeypatch.setenv("BME_CONFIG", str(cfg))
    result = ok("recall", ingested["group"], "--no-reinforce")
    [line] = _notices(result.stderr, "holds an API key")
    assert f"chmod 600 {cfg}" in line and "NOT-PRINTED" not in result.stderr + result.stdout
    assert not _notices(ok("-q", "recall", ingested["group"], "--no-reinforce").stderr, "API key")
    cfg.chmod(0o600)
    assert not _notices(ok("recall", ingested["group"], "--no-reinforce").stderr, "API key")
