"""Faster ways of writing and reading a sidecar that must give exactly what the plain ones give.

Base64 through pybase64 is binascii's (the same bytes written, the same accepted and refused);
the node dicts built in bulk are `node_dict`'s, key order included.
"""
from __future__ import annotations

import binascii
import os
import sys

import numpy as np
import pytest

from fakes import NOW
from bme_cli.graph import sidecar, v3
from bme_cli.graph.model import EVOLUTION_HISTORY_KEY
from bme_cli.graph.store import load_graph, save_graph
from test_fuzz_graph import _graph

CASES = [b"", b"AAAA", b"AB==", b"ABC=", b"ab=c", b"abc", b"a===", b"ab==ab==", b" abc", b"abcd\n", b"ab===",
         b"AB=A", b"====", b"ab\x00d", b"\xff\xfe\xfd\xfc", b"abcd" * 1000 + b"ab", b"-_ab", b"+/ab"]


def _decoded(value: bytes) -> object:
    try:
        return sidecar._b64decode(value)
    except binascii.Error:
        return "refused"


@pytest.mark.parametrize("value", CASES + [binascii.b2a_base64(os.urandom(n), newline=False) for n in range(7)])
def test_decoding_accepts_and_refuses_exactly_what_binascii_strict_does(value, monkeypatch):
    fast = _decoded(value)
    monkeypatch.setitem(sys.modules, "pybase64", None)
    assert fast == _decoded(value)
    try:
        expected: object = binascii.a2b_base64(value, strict_mode=True)
    except binascii.Error:
        expected = "refused"
    assert fast == expected


def test_a_sidecar_is_written_byte_for_byte_as_binascii_writes_it_and_reads_back(tmp_path, monkeypatch):
    graph = _graph(dim=384)
    rng = np.random.default_rng(5)
    for n in graph.nodes:
        n.embedding = rng.normal(size=384).astype(np.float32)
    fast = b"".join(bytes(c) for c in sidecar.encode_sidecar(graph))
    save_graph(tmp_path / "a.bme.json", graph)
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "pybase64", None)
        assert b"".join(bytes(c) for c in sidecar.encode_sidecar(graph)) == fast
        plain = load_graph(tmp_path / "a.bme.json", NOW)
    loaded = load_graph(tmp_path / "a.bme.json", NOW)
    assert (tmp_path / "a.bme.json").read_bytes() == fast
    for a, b, c in zip(graph.nodes, loaded.nodes, plain.nodes):
        assert a.embedding.tobytes() == b.embedding.tobytes() == c.embedding.tobytes()


def test_node_dicts_in_bulk_are_node_dict_key_for_key():
    graph = _graph(dim=4)
    graph.nodes[0].evolution_history = [{"at": 3}]
    graph.nodes[1].extra = {"stBmeKey": [1, 2], "embeddingNote": "x"}
    bulk = v3.node_dicts(graph.nodes)
    one_by_one = [v3.node_dict(n) for n in graph.nodes]
    assert bulk == one_by_one and [list(d) for d in bulk] == [list(d) for d in one_by_one]
    assert all(d["embedding"] is None for d in bulk) and EVOLUTION_HISTORY_KEY in bulk[0]
