"""The injection block (spec §5, §9.2) and filling it within a token budget (§10.16)."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from bme_cli.graph.model import Node
from bme_cli.graph.schema import Schema
from bme_cli.memory.budget import BlockCost, fit_to_budget
from bme_cli.memory.inject import (escape_cell, format_block, recall_order,
                                   units)
from bme_cli.text import estimate_tokens

SCHEMA = Schema.default()
_ids = itertools.count(1)


def node(type_id: str, seq: int = 1, importance: float = 5.0, **fields) -> Node:
    return Node(id=f"n{next(_ids)}", type=type_id, fields=fields, seq=seq, importance=importance)


def test_injector_format_test_of_st_bme():
    core = [node("event", 3, summary="Alice found the key", participants="Alice", status="resolved")]
    recalled = [node("character", 2, name="Alice", state="tired"), node("reflection", 2, insight="Keys matter")]
    text = format_block(core, recalled, SCHEMA, "zh")
    for marker in ("[Memory - Core]", "event_table:", "[Memory - Recalled]", "## 当前状态记忆",
                   "## 反思与长期锚点", "character_table:", "reflection_table:"):
        assert marker in text


def test_block_layout_is_exact():
    core = [node("event", 5, summary="A met B", participants="A, B"),
            node("rule", 4, title="No magic", constraint="Never in town")]
    recalled = [node("character", 3, name="A", state="calm")]
    assert format_block(core, recalled, SCHEMA, "en") == "\n".join([
        "[Memory - Core]",
        "event_table:", "| summary | participants |", "| --- | --- |", "| A met B | A, B |",
        "rule_table:", "| title | constraint |", "| --- | --- |", "| No magic | Never in town |",
        "",
        "[Memory - Recalled]",
        "## Current state memory",
        "character_table:", "| name | state |", "| --- | --- |", "| A | calm |",
    ])


def test_recalled_buckets_print_in_fixed_order_whatever_the_input_order():
    recalled = [node("mystery", 9, name="x"), node("rule", 8, title="r", constraint="c"),
                node("reflection", 7, insight="i"), node("event", 6, summary="e"),
                node("location", 5, name="L")]
    schema = Schema(SCHEMA.types + [{"id": "mystery", "label": "m", "tableName": "mystery_table",
                                     "columns": [{"name": "name", "required": True}]}])
    text = format_block([], recalled, schema, "zh")
    order = [text.index(h) for h in ("## 当前状态记忆", "## 情景事件记忆", "## 反思与长期锚点", "## 规则与约束",
                                     "## 其他关联记忆")]
    assert order == sorted(order)
    assert text.startswith("[Memory - Recalled]")


def test_english_headings_for_english_memories():
    text = format_block([], [node("reflection", insight="i"), node("location", name="L")], SCHEMA, "en")
    assert "## Reflections and long-term anchors" in text and "## Current state memory" in text
    assert "当前" not in text


def test_cells_are_escaped_then_cut_at_200_characters():
    assert escape_cell("a|b\nc\rd") == "a\\|b c\rd"
    assert escape_cell("x" * 300) == "x" * 200
    # escaping comes first: the pipe at position 199 becomes "\|", and the cut keeps only "\"
    assert escape_cell("y" * 199 + "|tail") == "y" * 199 + "\\"
    assert escape_cell(None) == "" and escape_cell(5.0) == "5" and escape_cell(["a", "b"]) == "a,b"
    assert escape_cell(True) == "true"


def test_only_columns_with_a_value_print_in_schema_order_and_zero_counts():
    a = node("character", 2, state="ok", name="A", goal="")
    b = node("character", 1, name="B", inventory=0, traits=None)
    text = format_block([], [a, b], SCHEMA, "en")
    assert "| name | state | inventory |" in text
    assert "| A | ok |  |" in text and "| B |  | 0 |" in text


def test_a_node_prints_once_even_when_given_as_core_and_recalled_and_heading_still_prints():
    ev = node("event", summary="once")
    text = format_block([ev], [ev], SCHEMA, "zh")
    assert text.count("| once |") == 1
    assert text.endswith("## 情景事件记忆")


def test_nodes_sort_by_latest_seq_then_importance_and_tables_by_first_appearance():
    old = node("event", 1, 9, summary="old")
    new = node("event", 9, 1, summary="new")
    tie_low = node("rule", 5, 2, title="low", constraint="c")
    tie_high = node("rule", 5, 8, title="high", constraint="c")
    assert [n.fields.get("summary") or n.fields["title"] for n in recall_order([old, tie_low, new, tie_high])] == \
        ["new", "high", "low", "old"]
    text = format_block([old, tie_low, new, tie_high], [], SCHEMA, "en")
    assert text.index("event_table:") < text.index("rule_table:")
    assert text.index("| new |") < text.index("| old |")
    assert text.index("| high |") < text.index("| low |")


def test_unknown_types_and_empty_input_print_nothing():
    assert format_block([node("ghost", name="x")], [], SCHEMA, "en") == "[Memory - Core]"
    assert format_block([], [], SCHEMA, "en") == ""


# -- budget ----------------------------------------------------------------------------

_FIELDS = {
    "event": ["summary", "participants", "status"], "rule": ["title", "constraint"],
    "character": ["name", "state", "goal"], "reflection": ["insight"], "synopsis": ["summary"],
}
_VALUE = st.one_of(st.none(), st.just(""), st.text(alphabet=st.sampled_from(list("ab |\n小明x")), max_size=60),
                   st.text(alphabet="z", min_size=190, max_size=260))


@st.composite
def _nodes(draw):
    out = []
    for i in range(draw(st.integers(0, 14))):
        t = draw(st.sampled_from(sorted(_FIELDS)))
        fields = {c: draw(_VALUE) for c in _FIELDS[t] if draw(st.booleans())}
        out.append((Node(id=f"h{i}", type=t, fields=fields, seq=draw(st.integers(0, 50)),
                         importance=draw(st.floats(0, 10))), draw(st.sampled_from(["core", "recalled"]))))
    return out


@settings(max_examples=150, deadline=None)
@given(_nodes(), st.integers(0, 400), st.sampled_from(["en", "zh"]))
def test_budget_is_never_exceeded_and_the_running_cost_is_exact(cands, budget, lang):
    fit = fit_to_budget(cands, SCHEMA, lang, budget)
    assert fit.tokens == estimate_tokens(fit.text) <= budget
    assert fit.text == format_block(fit.core, fit.recalled, SCHEMA, lang)
    cost = BlockCost(SCHEMA, lang)
    for n, section in cands:
        if cost.cells(n) and (n in fit.core or n in fit.recalled):
            assert cost.try_add(n, section, 10**9)
    assert cost.total() == units(fit.text)


def test_priority_order_decides_what_fits():
    big = node("event", 1, summary="x" * 150)
    small = node("event", 2, summary="tiny")
    fit = fit_to_budget([(big, "core"), (small, "core")], SCHEMA, "en", 52)  # 51 tokens alone, 53 both
    assert fit.core == [big] and fit.rejected == [small]
    fit = fit_to_budget([(small, "core"), (big, "core")], SCHEMA, "en", 52)
    assert fit.core == [small] and fit.rejected == [big]
    assert fit_to_budget([(big, "core")], SCHEMA, "en", 10).text == ""


def test_with_room_for_everything_the_block_is_st_bme_s_unbounded_one():
    core = [node("event", i, summary=f"event {i}") for i in range(5)]
    rec = [node("character", 1, name="Zed")]
    fit = fit_to_budget([(n, "core") for n in core] + [(n, "recalled") for n in rec], SCHEMA, "en", 10_000)
    assert fit.text == format_block(core, rec, SCHEMA, "en")


def test_nodes_without_any_filled_column_are_left_out():
    blank = node("event", summary="")
    fit = fit_to_budget([(blank, "core")], SCHEMA, "en", 100)
    assert fit.core == [] and fit.empty == [blank]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cjk_text_is_priced_at_two_characters_per_token(lang):
    n = node("event", summary="小明" * 40)
    fit = fit_to_budget([(n, "core")], SCHEMA, lang, 200)
    assert fit.tokens == estimate_tokens(fit.text) and fit.core == [n]


def test_near_duplicates_go_last_they_never_displace_new_information():
    a = node("event", 3, summary="Alice found the brass key under the old oak tree")
    dup = node("event", 2, summary="Alice found the brass key under the old oak tree today")
    new = node("event", 1, summary="Bob repaired the broken mill wheel by the river at dawn")
    cands = [(a, "core"), (dup, "core"), (new, "core")]
    tight = fit_to_budget(cands, SCHEMA, "en", estimate_tokens(format_block([a, new], [], SCHEMA, "en")))
    assert tight.core == [a, new]
    assert fit_to_budget(cands, SCHEMA, "en", tight.tokens, redundancy=None).core == [a, dup]  # dup would win
    roomy = fit_to_budget(cands, SCHEMA, "en", 1000)
    assert roomy.core == [a, new, dup]
    assert fit_to_budget(cands, SCHEMA, "en", 1000, redundancy=None).core == [a, dup, new]


def test_a_row_with_no_word_beyond_the_query_and_the_block_is_deferred_like_a_duplicate():
    name_only, fact = node("character", 2, name="Quill"), node("event", 1, summary="Quill hid the map")
    cands = [(name_only, "recalled"), (fact, "recalled")]
    tight = estimate_tokens(format_block([], [fact], SCHEMA, "en"))  # room for one of the two
    assert fit_to_budget(cands, SCHEMA, "en", tight, known=["quill"]).recalled == [fact]
    assert fit_to_budget(cands, SCHEMA, "en", tight).recalled == [name_only]  # without the query: new words
    roomy = fit_to_budget(cands, SCHEMA, "en", 1000, known=["quill"])
    assert roomy.recalled == [fact, name_only] and roomy.deferred == [name_only]
