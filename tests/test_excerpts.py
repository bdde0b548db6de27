"""Quotes beside nodes: units of the chat, their vectors, the excerpts section and the shared fill."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bme_cli.graph.model import Graph, Node
from bme_cli.graph.schema import Schema
from bme_cli.memory.budget import fit_to_budget
from bme_cli.memory.excerpt_vectors import VECTORS_KEY, drop_vectors_from, embed_units, stored_vectors
from bme_cli.memory.excerpts import (UNIT_CHARS, ExcerptIndex, Unit, chat_units, message_units,
                                     quote_scores)
from bme_cli.memory.inject import CELL_LIMIT, format_block, query_cell
from bme_cli.memory.quote_block import QuoteSection
from bme_cli.memory.query import Query
from bme_cli.memory.scoring import Weights
from bme_cli.providers.offline import HashEmbedder
from bme_cli.reltime import resolve_dates
from bme_cli.sentences import clip, is_filler, split_sentences, trim_lead
from bme_cli.text import estimate_tokens, token_units

SCHEMA = Schema.default()
DAY = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


@dataclass
class Msg:
    seq: int
    name: str
    text: str
    is_user: bool = False
    is_system: bool = False
    send_date: Any = DAY


# -- sentences ------------------------------------------------------------------------------
def test_sentences_split_on_both_scripts_and_keep_abbreviations_and_quotes():
    assert split_sentences('Dr. Orlov left. "Run!" he said.\nNext line') == \
        ['Dr. Orlov left.', '"Run!"', 'he said.', 'Next line']
    assert split_sentences("她走了。你呢？好") == ["她走了。", "你呢？", "好"]
    assert split_sentences("*She smiles.* Hi there.") == ["She smiles.", "Hi there."]
    assert split_sentences("If a < b > c, then?") == ["If a < b > c, then?"]


def test_filler_is_only_filler_words_and_the_speakers_names():
    names = frozenset({"caroline", "mel"})
    for s in ("Wow, Caroline!", "Thanks, Mel!", "That's great!", "Sounds awesome!", "好的。", "嗯嗯。",
              "36。", "12."):   # a count read out a number at a time: no word at all
        assert is_filler(s, names), s
    for s in ("I went to Paris.", "We met 3 times.", "Wow, love that painting of Gus!", "他走了。", "然后是80。"):
        assert not is_filler(s, names), s


def test_trim_lead_drops_interjections_and_vocatives_but_never_everything():
    names = frozenset({"caroline", "mel"})
    assert trim_lead("Wow, Caroline, sounds like the parade was great!", names) == "Sounds like the parade was great!"
    assert trim_lead("Well, I did.", names) == "I did."
    assert trim_lead("So I went home.", names) == "So I went home."
    assert trim_lead("Yes!", names) == "Yes!"


@given(st.lists(st.sampled_from(["a", "bc", " ", ",", ".", "你好", "。", "长城", "word "]), max_size=120).map("".join),
       st.integers(5, 200))
def test_clip_never_exceeds_its_limit_and_keeps_short_text(text, limit):
    out = clip(text, limit)
    assert len(out) <= max(limit, 1)
    if len(" ".join(text.split())) <= limit:
        assert out == " ".join(text.split())


def test_clip_cuts_at_a_word_or_clause_boundary():
    out = clip("The lantern burns only for those who never lie, and its keeper knows it well", 40)
    assert out.endswith("…") and out[:-1] in "The lantern burns only for those who never lie, and"
    assert not out[:-1].endswith(("lantern b", "kee"))
    zh = clip("藏剑阁里除了太玄经，苏晚晴只要一件东西，到时候再说吧。", 16)
    assert zh.endswith("…") and zh[:-1] == "藏剑阁里除了太玄经"


# -- relative dates -------------------------------------------------------------------------
def test_relative_dates_are_resolved_in_english_and_chinese_once():
    d = date(2023, 5, 8)
    assert resolve_dates("I went yesterday; two days ago too.", d) == \
        "I went yesterday (7 May 2023); two days ago (6 May 2023) too."
    assert resolve_dates("我昨天去了，去年也是，三天前也去了。", d) == \
        "我昨天（2023年5月7日）去了，去年（2022年）也是，三天前（2023年5月5日）也去了。"
    once = resolve_dates("yesterday", d)
    assert resolve_dates(once, d) == once
    assert resolve_dates("last week", d, restate=False) == "last week"
    assert resolve_dates("yesterday", None) == "yesterday"


# -- units ----------------------------------------------------------------------------------
def test_units_are_whole_sentences_without_filler_and_dated():
    m = Msg(3, "Caroline", "Wow, Mel! I went to a support group yesterday. It was powerful. Thanks!")
    units = message_units(m, frozenset({"mel", "caroline"}))
    assert [u.text for u in units] == ["I went to a support group yesterday (7 May 2023). It was powerful."]
    assert units[0].seq == 3 and units[0].parts == 1 and units[0].speaker == "Caroline"
    assert message_units(Msg(4, "A", "Okay!")) == [] and message_units(Msg(5, "A", "x", is_system=True)) == []


def test_long_messages_split_into_units_under_the_limit_and_keys_follow_the_text():
    sentence = "The tide covers the pilgrim path along the cliffs every night at nine. "
    units = message_units(Msg(0, "Mira", sentence * 12))
    assert len(units) > 1 and all(len(u.text) <= UNIT_CHARS for u in units)
    assert [u.part for u in units] == list(range(len(units))) and {u.parts for u in units} == {len(units)}
    same = message_units(Msg(0, "Mira", sentence * 12))
    edited = message_units(Msg(0, "Mira", sentence * 11 + "The Widow lied."))
    assert [u.key for u in same] == [u.key for u in units] and edited[-1].key != units[-1].key
    zh = message_units(Msg(1, "苏晚晴", "藏剑阁一次只能带走一件东西。" * 20))
    assert all(len(u.text) <= 160 and " " not in u.text for u in zh)


# -- vectors --------------------------------------------------------------------------------
def test_unit_vectors_round_trip_in_half_precision_and_follow_the_model():
    graph, emb = Graph(), HashEmbedder(dim=32)
    units = chat_units([Msg(i, "A", f"Fact number {i} about the harbour.") for i in range(5)])
    assert embed_units(graph, units, emb) == 5 and embed_units(graph, units, emb) == 0
    got = stored_vectors(graph, emb.model_id)
    direct = np.asarray(emb.embed([u.text for u in units]), dtype=np.float32)
    assert np.allclose(np.stack([got[u.key] for u in units]), direct, atol=2e-3)
    assert stored_vectors(graph, "another-model") == {}
    assert embed_units(graph, units[:2], emb, keep_others=False) == 0 and len(stored_vectors(graph)) == 2
    drop_vectors_from(graph, 1)
    assert list(stored_vectors(graph)) == [units[0].key]
    graph.meta.extra[VECTORS_KEY]["vectors"] = "not base64!"
    assert stored_vectors(graph) == {}


# -- the excerpts section -------------------------------------------------------------------
def _unit(seq: int, text: str, part: int = 0, parts: int = 1, when=DAY, speaker: str = "Ann") -> Unit:
    return Unit(seq, part, parts, speaker, when, text)


def test_section_groups_messages_by_day_and_marks_gaps():
    section = QuoteSection("en")
    later = datetime(2023, 6, 9, tzinfo=timezone.utc)
    for u in (_unit(9, "Late.", when=later), _unit(2, "B two.", 2, 3), _unit(2, "B zero.", 0, 3),
              _unit(1, "Undated.", when=None), _unit(3, "C.")):
        section.add(u)
    assert section.render() == ["## Excerpts from the chat", "Ann: Undated.", "[8 May 2023]",
                                "Ann: B zero. … B two.", "Ann: C.", "[9 Jun 2023]", "Ann: Late."]
    assert section.whole(3) and not section.whole(2)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2), st.sampled_from([None, 1, 2]),
                          st.text(alphabet=st.sampled_from(list("ab 你好")), min_size=1, max_size=30)),
                max_size=12), st.sampled_from(["en", "zh"]))
def test_section_cost_is_exact(items, lang):
    section = QuoteSection(lang)
    for seq, part, day, text in items:
        when = None if day is None else datetime(2023, 5, day, tzinfo=timezone.utc)
        unit = Unit(seq, part, 3, "Bo", when if seq % 2 else None, text)  # one day per message
        if (seq, part) in {(u.unit.seq, p) for u in section.lines.values() for p in u.parts}:
            continue
        section.add(unit)
    assert section.cost == (token_units("\n".join(section.render())) if section.lines else 0)


# -- the shared fill -------------------------------------------------------------------------
def _event(seq: int, summary: str) -> Node:
    return Node(id=f"e{seq}", type="event", fields={"summary": summary}, seq=seq + 1, seq_range=[seq, seq + 1])


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 8),
                          st.text(alphabet=st.sampled_from(list("abc xyz|你")), min_size=1, max_size=80)),
                max_size=16), st.integers(0, 300), st.sampled_from(["en", "zh"]))
def test_fill_with_quotes_never_exceeds_the_budget_and_prints_what_it_reports(items, budget, lang):
    cands = []
    for i, (is_node, seq, text) in enumerate(items):
        if is_node:
            cands.append((Node(id=f"n{i}", type="event", fields={"summary": text}, seq=seq,
                               seq_range=[seq, seq]), "recalled"))
        elif text.strip():
            cands.append((_unit(seq, text.strip(), part=i, parts=len(items)), "excerpts"))
    units_by_seq: dict[int, int] = {}
    fit = fit_to_budget(cands, SCHEMA, lang, budget, style="query",
                        sources=lambda n: [s for s in units_by_seq if n.seq_range[0] <= s <= n.seq_end])
    assert fit.tokens == estimate_tokens(fit.text) <= budget
    for u in fit.quoted:
        assert u.text.replace("\n", " ") in fit.text


def test_an_event_quoted_whole_leaves_the_block_and_a_quote_repeating_a_row_is_never_printed():
    units = [_unit(4, "I lost the silver compass in the caves under the cliffs."),
             _unit(5, "The sea keeps what it takes.", speaker="Mira")]
    ev = _event(4, "[8 May 2023] Rowan lost a compass.")
    sources = lambda n: [4, 5]  # noqa: E731
    fit = fit_to_budget([(ev, "recalled"), (units[0], "excerpts"), (units[1], "excerpts")], SCHEMA, "en",
                        1000, sources=sources)
    assert fit.recalled == [] and fit.replaced == [ev] and fit.quoted == units
    assert "silver compass" in fit.text and "event_table" not in fit.text
    repeat = _unit(7, "Rowan lost the compass.")
    fit = fit_to_budget([(ev, "recalled"), (repeat, "excerpts")], SCHEMA, "en", 1000, sources=lambda n: [4, 5])
    assert fit.recalled == [ev] and fit.quoted == [] and fit.repeats == [repeat]


def test_query_cells_keep_the_asked_sentences_and_never_cut_a_word():
    text = ("Mira guided Rowan through the wood. " * 3 + "The silver compass was lost in the caves. "
            + "They rested at the chapel. " * 4)
    assert len(text) > CELL_LIMIT
    cell = query_cell(text, frozenset({"compass", "cave"}))
    assert "The silver compass was lost in the caves." in cell and len(cell) <= CELL_LIMIT
    plain = query_cell(text)
    assert plain.startswith("Mira guided Rowan") and len(plain) <= CELL_LIMIT
    assert all(w in text.split() or w in ("…",) for w in plain.replace("…", " … ").split())
    block = format_block([], [Node(id="x", type="event", fields={"summary": text})], SCHEMA, "en",
                         style="query", terms=frozenset({"compass"}))
    assert "silver compass" in block


# -- scores ---------------------------------------------------------------------------------
def test_scores_rank_the_matching_line_first_lift_its_neighbour_and_skip_the_query_itself():
    msgs = [Msg(0, "Ann", "What did you paint last week?", is_user=True),
            Msg(1, "Bo", "A lake at sunrise, all orange and pink."),
            Msg(2, "Ann", "I bought new running shoes.", is_user=True),
            Msg(3, "Bo", "We adopted a grey kitten named Pip.")]
    index = ExcerptIndex.build(chat_units(msgs))
    query = Query.from_text("What did Bo paint?")
    scores, quotable = quote_scores(index, query, None, Weights())
    final = scores.final
    question, answer, kitten = (final[index.row_of[(s, 0)]] for s in (0, 1, 3))
    # the answer by the person asked about, lifted by the matching question before it, comes first
    assert answer == final.max() and answer > question > kitten
    assert scores.lexical[index.row_of[(0, 0)]] > scores.lexical[index.row_of[(1, 0)]]
    assert quotable.all()
    asked = Query(text="x", user_message="What did Bo paint?", seqs=(0,))
    _, quotable = quote_scores(index, asked, None, Weights(), context_window=1, chat_length=4)
    assert not quotable[index.row_of[(0, 0)]] and not quotable[index.row_of[(3, 0)]]
    assert quotable[index.row_of[(1, 0)]]


def test_named_speakers_match_whole_names_only():
    index = ExcerptIndex.build(chat_units([Msg(0, "Bo", "Fact one."), Msg(1, "Ann Lee", "Fact two.")]))
    assert index.named_speakers("what did bo say").tolist() == [True, False]
    assert index.named_speakers("Bob and Ann").tolist() == [False, False]
    assert index.named_speakers("Ann Lee said").tolist() == [False, True]


def test_cosine_ignores_units_without_vectors_and_other_dimensions():
    units = chat_units([Msg(0, "A", "One fact."), Msg(1, "A", "Two facts.")])
    vec = np.ones(4, dtype=np.float32)
    index = ExcerptIndex.build(units, {units[0].key: vec})
    assert index.cosine(vec).tolist() == pytest.approx([1.0, 0.0])
    assert index.cosine(np.ones(3)).tolist() == [0.0, 0.0] and index.cosine(None).tolist() == [0.0, 0.0]
