"""A summary built from some of a message's sentences never shows a quote mark whose partner
was in a sentence left out; quotes that pair, and apostrophes, stay as written."""
from __future__ import annotations

from pathlib import Path

import pytest

from bme_cli.chat import read_chat
from bme_cli.graph.model import Graph
from bme_cli.memory.context import MemoryContext
from bme_cli.memory.ingest import ingest_chat
from bme_cli.providers.offline import OfflineChatModel
from bme_cli.sentences import balance_quotes
from fakes import Clock, WordHashEmbedder, counter_ids

CHINESE_EXPORT = Path(__file__).parent / "data" / "deepseek_zh.jsonl"


@pytest.mark.parametrize("text, expected", [
    ("“撑住，”他说，“我带你去找老周。船夫一言不发。", "“撑住，”他说，我带你去找老周。船夫一言不发。"),
    ("他说：“好。”", "他说：“好。”"),
    ("「走吧。", "走吧。"),
    ("Mira: 'Brannoch sold us. The Widow wanted Tobin's blood.",
     "Mira: Brannoch sold us. The Widow wanted Tobin's blood."),
    ("'Go,' she said.", "'Go,' she said."),
    ("It's the Widows' map, isn't it?", "It's the Widows' map, isn't it?"),
    ('He said "go now.', "He said go now."),
    ('She read "The Tower" aloud.', 'She read "The Tower" aloud.'),
    ("A ” stray closer", "A stray closer"),
    ("“a” and “b", "“a” and b"),
])
def test_unpaired_quote_marks_go_and_pairs_stay(text: str, expected: str) -> None:
    assert balance_quotes(text) == expected


def test_offline_event_summaries_of_a_chinese_export_pair_every_quote() -> None:
    graph = Graph()
    ctx = MemoryContext(chat=OfflineChatModel(), embedder=WordHashEmbedder(), new_id=counter_ids("q"), now=Clock())
    ingest_chat(read_chat(CHINESE_EXPORT), graph, ctx, save=lambda g: None)
    summaries = [n.fields.get("summary") or "" for n in graph.nodes if n.type == "event"]
    assert summaries
    for s in summaries:
        assert s.count("“") == s.count("”") and s.count('"') % 2 == 0, s
