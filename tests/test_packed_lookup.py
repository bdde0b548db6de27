"""The packed index's string lookups (a bisection over UTF-8 bytes) agree with Python's str order."""
from __future__ import annotations

from hypothesis import given, settings as hsettings, strategies as st

from bme_cli.memory.packed import _pack_strings, _Strings, _Vocab

texts = st.text(alphabet=st.one_of(st.characters(), st.sampled_from(["a", "é", "中", "\ud800", "\udfff", "😀"])),
                max_size=6)


@hsettings(max_examples=150, deadline=None)
@given(st.lists(texts, max_size=30, unique=True), st.lists(texts, max_size=10))
def test_find_and_vocab_lookups_match_a_dict(words, probes):
    words = sorted(words)
    strings = _Strings(_pack_strings(words, "w"), "w")
    vocab = _Vocab(strings, __import__("numpy").arange(len(words)) * 7)
    for probe in [*words, *probes]:
        want = words.index(probe) if probe in words else -1
        assert strings.find(probe) == want
        assert vocab.get(probe) == (want * 7 if want >= 0 else None)
        assert vocab.get(probe) == (want * 7 if want >= 0 else None)  # the remembered answer too
