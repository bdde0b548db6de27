"""The README's exit-code table is the code's: every documented failure code (1 to 6) has
a case here that produces it through the command line; 130 (Ctrl-C) is produced by
test_cli_ingest.py and test_survival.py, which need a signal or a subprocess."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bme_cli.errors import ExitCode
from bme_cli.graph.lock import GraphLock
from cli_support import (cli_env, copy_samples, error_lines, ingested, ingested_template, invoke,  # noqa: F401
                         point_chat_at_nothing, sidecar)

pytestmark = pytest.mark.usefixtures("cli_env")
README = Path(__file__).resolve().parent.parent / "README.md"


def _readme_codes() -> set[int]:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Exit codes"):text.index("## Documentation")]
    return {int(c) for c in re.findall(r"^\| `(\d+)` \|", table, flags=re.M)}


def test_the_readme_table_lists_exactly_the_codes_bme_uses() -> None:
    assert _readme_codes() == {int(c) for c in ExitCode}


def _fails(code: int, *args: str | Path) -> None:
    result = invoke(*args)
    assert result.exit_code == code, (result.exit_code, result.stderr)
    if code not in (0, 2):             # click's own usage errors print a usage block instead
        assert len(error_lines(result)) >= 1


@pytest.mark.parametrize("budget", ["0", "-5", "49", "200001", "999999999"])
def test_a_budget_out_of_range_is_a_usage_error(ingested: dict[str, Path], budget: str) -> None:
    _fails(2, "recall", ingested["group"], "--budget", budget)


def test_paths_that_name_no_chat_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _fails(2, "ingest", tmp_path / "empty")
    _fails(2, "stats", "--no-such-option", tmp_path)


def test_unreadable_inputs_are_bad_input(ingested: dict[str, Path], tmp_path: Path) -> None:
    chat = ingested["group"]
    sidecar(chat).write_text("{", encoding="utf-8")
    _fails(3, "recall", chat)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"user_name": "U", "character_name": "C"}\nnot json\n', encoding="utf-8")
    _fails(3, "stats", broken)
    _fails(3, "recall", ingested["adventure"], "--queries", tmp_path / "missing.jsonl")


def test_a_locked_graph_and_one_failed_chat_of_two_are_errors(tmp_path: Path) -> None:
    chats = copy_samples(tmp_path, ("group", "adventure"))
    with GraphLock(sidecar(chats["group"])):
        _fails(1, "ingest", chats["group"])
        _fails(1, "ingest", chats["group"], chats["adventure"])


def test_an_unreachable_endpoint_is_a_provider_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    point_chat_at_nothing(monkeypatch)
    _fails(4, "--no-cache", "ingest", copy_samples(tmp_path, ("group",))["group"])


def test_bad_settings_are_configuration_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fails(5, "--config", tmp_path / "nope.toml", "config", "show")
    monkeypatch.setenv("BME_RECALL_TOP_K", "lots")
    _fails(5, "config", "show")


def test_unusable_replies_exit_6(ingested: dict[str, Path], openai_stub, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"BME_CHAT_BASE_URL": openai_stub.base_url, "BME_CHAT_MAX_RETRIES": "0",
                        "BME_EMBEDDING_OFFLINE": "true"}.items():
        monkeypatch.setenv(name, value)
    openai_stub.chat_content = lambda rec: json.dumps({"summary": "The story continues. " * 40})
    _fails(6, "--no-cache", "synopsis", ingested["adventure"])
