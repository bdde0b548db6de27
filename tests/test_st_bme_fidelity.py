"""Where bme must count and score as ST-BME (JavaScript) does: UTF-16 lengths (spec §5.3, §5.4)
and the smart trigger on plain English text (spec §3.2). Diffusion's tie order is pinned in
tests/test_diffusion.py beside its plain reference algorithm."""
from __future__ import annotations

from fakes import FakeMessage

from bme_cli.memory.inject import CELL_LIMIT, escape_cell, query_cell
from bme_cli.memory.trigger import smart_trigger
from bme_cli.settings import MemorySettings
from bme_cli.text import estimate_tokens, token_units, utf16_len, utf16_prefix

EMOJI = "\U0001F600"  # 😀, beyond U+FFFF: two UTF-16 units, one Python character


# -- token estimate: JavaScript's length counts UTF-16 units -----------------------------------
def test_four_emoji_are_two_tokens_as_in_st_bme():
    # ceil(cjk/2 + other/4) with other = 8 units ("😀".length is 2 in JavaScript)
    assert estimate_tokens(EMOJI * 4) == 2
    assert estimate_tokens(EMOJI) == 1 and estimate_tokens(EMOJI * 3) == 2 and estimate_tokens(EMOJI * 5) == 3


def test_estimate_counts_cjk_halves_and_other_units_quarters():
    assert estimate_tokens("中文" + EMOJI * 2) == 2      # 2/2 + 4/4
    assert estimate_tokens("中文" + EMOJI * 3) == 3      # 1 + 6/4 = 2.5
    assert estimate_tokens("abcd") == 1 and estimate_tokens("") == 0
    assert estimate_tokens("é" * 4) == 1               # BMP letters stay one unit each


def test_token_units_stay_the_estimate_times_four_and_additive():
    for text in ("plain", "中文" + EMOJI, EMOJI * 7 + "x", "𠀀 astral CJK-B"):
        assert estimate_tokens(text) == -(-token_units(text) // 4)
    a, b = "a" + EMOJI, "中" + EMOJI * 2
    assert token_units(a + b) == token_units(a) + token_units(b)


def test_utf16_length_and_prefix_never_split_a_pair():
    assert utf16_len(EMOJI * 3 + "ab") == 8 and utf16_len("\ud83d") == 1  # a lone surrogate is one
    assert utf16_prefix("a" + EMOJI * 2, 2) == "a"     # one unit short of the emoji: it goes whole
    assert utf16_prefix("a" + EMOJI * 2, 3) == "a" + EMOJI
    assert utf16_prefix(EMOJI + "a" * 10, 5) == EMOJI + "aaa"
    assert utf16_prefix("short", 200) == "short"


# -- the 200-unit cell cut -------------------------------------------------------------------
def test_cell_cut_is_200_utf16_units():
    assert escape_cell(EMOJI * 150) == EMOJI * 100                     # 200 units, not 150 characters
    assert escape_cell("x" + EMOJI * 150) == "x" + EMOJI * 99          # 199: the next emoji would split
    assert escape_cell("x" * 300) == "x" * 200
    assert utf16_len(escape_cell("a|" * 50 + EMOJI * 100)) == CELL_LIMIT  # cut after escaping


def test_query_cell_measures_its_200_in_utf16_units_and_keeps_whole_words():
    short = EMOJI * 100  # 100 characters, exactly 200 units: kept whole
    assert query_cell(short) == short
    words = " ".join(["word" + EMOJI] * 40)  # 40 x 7 units with spaces: 279 units, 239 characters
    cell = query_cell(words)
    assert utf16_len(cell) <= CELL_LIMIT and cell.endswith("…")
    assert all(w == "word" + EMOJI for w in cell.removesuffix("…").split())
    sentences = " ".join(f"Fact {i} {EMOJI * 20}." for i in range(6))  # 6 x 49 units
    kept = query_cell(sentences, frozenset({"5"}))
    assert utf16_len(kept) <= CELL_LIMIT and "Fact 5" in kept


# -- smart trigger on calm English ---------------------------------------------------------------
def _one(text: str) -> list[FakeMessage]:
    return [FakeMessage(seq=0, name="U", is_user=True, text=text)]


def test_calm_english_with_everyday_words_scores_zero_as_in_st_bme():
    d = smart_trigger(_one("i actually left the plan on the table"), -1, MemorySettings())
    assert (d.triggered, d.score, d.reasons) == (False, 0, [])
    d = smart_trigger(_one("the rule was left as planned, actually"), -1, MemorySettings())
    assert not d.triggered and d.score == 0


def test_english_event_words_still_count_like_chinese_keywords():
    d = smart_trigger(_one("she suddenly discovered the secret"), -1, MemorySettings())
    assert d.triggered and d.score == 2 and d.reasons == ["keyword: suddenly, discovered, secret"]
