"""CJK-aware tokens and the BM25 index (spec §10.14)."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from bme_cli.memory.lexical import B, K1, Bm25Index, search_terms, stem, tokenize, weighted_terms


def test_latin_words_are_lowercased_stopwords_dropped_and_numbers_kept():
    assert tokenize("The 3 Dogs ran to Harbor-Keep at 7pm, didn't they?") == \
        ["3", "dogs", "ran", "harbor", "keep", "7pm", "didn"]
    assert tokenize("The dogs", stopwords=False) == ["the", "dogs"]


def test_cjk_runs_become_bigrams_and_a_lone_character_a_unigram():
    assert tokenize("小明去了北京") == ["小明", "明去", "去了", "了北", "北京"]
    assert tokenize("我 and 你") == ["我", "你"]
    assert tokenize("Alpha城发生了什么？！") == ["alpha", "城发", "发生", "生了", "了什", "什么"]


def _postings_by_doc(index: Bm25Index) -> dict[int, Counter]:
    inv = {v: k for k, v in index.vocab.items()}
    out: dict[int, Counter] = {}
    for t in range(len(index.vocab)):
        for d in index.post_doc[index.post_ptr[t]:index.post_ptr[t + 1]].tolist():
            out.setdefault(d, Counter())[inv[t]] += 1
    return out


_TEXT = st.text(alphabet=st.sampled_from(list("ab cZ9_-|.,\n'’“”。，小明北京the ")), max_size=40)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.none(), _TEXT), min_size=1, max_size=8))
def test_bulk_index_tokenises_every_document_exactly_like_search_terms(texts):
    index = Bm25Index.build(texts)
    got = _postings_by_doc(index)
    for d, text in enumerate(texts):
        want = set(search_terms(text)) if text else set()
        assert set(got.get(d, Counter())) == want


def test_bm25_weights_follow_the_formula():
    texts = ["red apple red", "green apple", "blue sky", ""]
    index = Bm25Index.build(texts)
    scores = index.scores({"red": 1.0})
    avgdl = (3 + 2 + 2) / 3
    idf = math.log1p((4 - 1 + 0.5) / (1 + 0.5))
    want = idf * 2 * (K1 + 1) / (2 + K1 * (1 - B + B * 3 / avgdl))
    assert scores[0] == pytest.approx(want, rel=1e-5)
    assert scores[1:].tolist() == [0, 0, 0]


def test_rare_terms_outweigh_common_ones_and_unknown_words_score_nothing():
    texts = ["apple pie", "apple tart", "apple cider", "quince pie"]
    index = Bm25Index.build(texts)
    s = index.scores(weighted_terms([("apple quince", 1.0)]))
    assert int(np.argmax(s)) == 3
    assert not index.scores({"durian": 1.0}).any()
    assert not index.normalised_scores({}).any()


def test_normalised_scores_are_the_share_of_query_idf_mass_a_node_holds():
    index = Bm25Index.build(["alice harbor", "carol sailed", "dave slept", "alice ate"])
    s = index.normalised_scores(weighted_terms([("Alice harbor", 1.0)]))
    assert s[0] == pytest.approx(1.0)          # both terms once, average length
    assert 0 < s[3] < 0.5                      # only the commoner term
    assert s[1:3].tolist() == [0, 0]
    assert index.normalised_scores({"alice": 1.0, "harbor": 1.0}).max() <= 1.0


def test_weighted_terms_keep_the_largest_weight_per_term():
    w = weighted_terms([("Alice sails", 1.0), ("alice rests", 0.35)])
    assert w == {"alic": 1.0, "sail": 1.0, "rest": 0.35}


def test_light_stemming_joins_the_forms_of_a_word_and_leaves_the_rest_alone():
    for forms in (("painted", "painting", "paints", "paint"), ("stories", "story"), ("pots", "pot"),
                  ("running", "run"), ("camped", "camping", "camps"), ("loved", "love", "loves")):
        assert len({stem(f) for f in forms}) == 1, forms
    for word in ("class", "bus", "need", "speed", "sing", "bed", "2023", "北京", "naïve"):
        assert stem(word) == word


def test_an_inflected_query_finds_the_other_form_of_its_word():
    index = Bm25Index.build(["Melanie painted a sunrise", "Caroline went hiking"])
    s = index.scores(weighted_terms([("What is Melanie painting?", 1.0)]))
    assert s[0] > 0 and s[1] == 0


def test_empty_documents_never_match():
    index = Bm25Index.build([None, "", "word"])
    assert index.scores({"word": 1.0}).tolist()[:2] == [0, 0]
