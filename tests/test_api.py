"""The Python API: the names bme_cli exports, and ingest / recall / open_graph doing the job."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import bme_cli
from cli_support import cli_env  # noqa: F401

pytestmark = pytest.mark.usefixtures("cli_env")
SAMPLE = Path(__file__).resolve().parent.parent / "sample_chats" / "adventure.jsonl"


def test_the_exported_names_are_exactly_these():
    assert sorted(bme_cli.__all__) == sorted(["__version__", "ingest", "recall", "open_graph", "load_settings",
                                              "Settings", "BmeError", "IngestFailed"])
    for name in bme_cli.__all__:
        assert getattr(bme_cli, name) is not None
        assert name == "__version__" or getattr(bme_cli, name).__doc__, f"{name} has no docstring"
    with pytest.raises(AttributeError):
        bme_cli.workflow_internals  # noqa: B018


def test_importing_the_package_loads_none_of_the_work():
    code = "import sys, bme_cli; print(','.join(m for m in ('numpy', 'bme_cli.api', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == ""


def test_ingest_recall_and_open_graph(tmp_path: Path):
    from bme_cli import BmeError, IngestFailed, ingest, load_settings, open_graph, recall
    chat = tmp_path / SAMPLE.name
    shutil.copy(SAMPLE, chat)
    assert open_graph(chat).nodes == []
    settings = load_settings().model_copy(update={"embedding": load_settings().embedding.model_copy(
        update={"offline_model": "hash"})})
    report = ingest(chat, settings=settings)
    assert report.batches_done > 0 and report.last_processed_seq > 0
    graph = open_graph(chat)
    assert graph.last_processed_seq == report.last_processed_seq and graph.active_nodes()
    block = recall(chat, "What did they find in the ruins?", settings=settings, budget=300)
    assert block.text.strip() and block.tokens <= 300 and block.nodes + block.quotes
    assert ingest(chat, settings=settings).batches_done == 0   # up to date
    chancy = settings.model_copy(update={"memory": settings.memory.model_copy(
        update={"enable_prob_recall": True, "prob_recall_chance": 0.5})})

    def picked(seed: int) -> list[str]:
        return [n.node.id for n in recall(chat, "What did they find in the ruins?", settings=chancy, seed=seed).nodes]
    assert picked(7) == picked(7) and len({tuple(picked(s)) for s in range(6)}) > 1   # drawn, and repeatable
    with pytest.raises(BmeError) as failed:
        ingest(tmp_path / "missing.jsonl", settings=settings)
    assert isinstance(failed.value, IngestFailed) and failed.value.exit_code != 0
