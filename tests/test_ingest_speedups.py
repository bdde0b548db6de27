"""Ingest's speed-ups change no result: each cached or indexed path against the plain one.

(benchmarks/same_graph.py checks whole graphs against another version of bme; these pin the
pieces in this one.)
"""
from __future__ import annotations

import hashlib
import json
import random
from datetime import date
from pathlib import Path

import numpy as np

from bme_cli import reltime
from bme_cli.graph.model import Edge, Graph, Node
from bme_cli.graph.ops import add_edge
from bme_cli.memory import guard
from bme_cli.memory.excerpts import chat_units, message_units
from bme_cli.memory.excerpt_vectors import VECTORS_KEY, embed_units, stored_vectors
from bme_cli.memory.lexical import search_terms, tokenize
from bme_cli.providers.base import normalise_rows
from bme_cli.providers.offline import HashEmbedder, _features
from bme_cli.task import JsonTask
from bme_cli.text import detect_language

from fakes import FakeMessage

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "sample_chats").glob("*.jsonl"))
ODD = ["", "x", "İstanbul ĞÜŞ straße", "混合 text 中文abc日本語カタカナ한국어", "a_b__c", "ſo laſt week", "Σ ΟΔΟΣ",
       "yesterday yesterday YESTERDAY", "3 days ago and 两天前, 昨天, 下个月", "wee\u212a ago"]


def _texts() -> list[str]:
    out = list(ODD)
    for path in SAMPLES:
        for line in path.read_text(encoding="utf-8").splitlines():
            mes = json.loads(line).get("mes")
            if isinstance(mes, str):
                out.append(mes)
    return out


def _hash_vector(text: str, dim: int) -> np.ndarray:
    """The hash embedder as it was: every feature hashed anew, summed in numpy."""
    vec = np.zeros(dim, dtype=np.float64)
    for feat, weight in _features(text):
        h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
        vec[h % dim] += weight if (h >> 63) & 1 else -weight
    return np.sign(vec) * np.log1p(np.abs(vec))


def test_the_hash_embedder_gives_the_vectors_of_hashing_every_feature_anew():
    texts = _texts()
    for dim in (8, 256):
        embedder = HashEmbedder(dim)
        want = normalise_rows(np.stack([_hash_vector(t, dim) for t in texts]))
        assert np.array_equal(embedder.embed(texts), want)
        assert np.array_equal(embedder.embed(texts[::-1]), want[::-1])   # from the caches now


def test_a_full_hash_embedder_cache_starts_over_with_the_same_vectors(monkeypatch):
    monkeypatch.setattr(HashEmbedder, "CACHE", 3)
    texts = _texts()[:40]
    assert np.array_equal(HashEmbedder().embed(texts), normalise_rows(np.stack([_hash_vector(t, 256) for t in texts])))


def _resolve_plain(sentence: str, day: date, restate: bool = True) -> str:
    for pattern, fn, restates, zh in reltime._relative():
        if restates and not restate:
            continue
        left, right = ("（", "）") if zh else (" (", ")")
        for m in pattern.finditer(sentence):
            if sentence.startswith(("（", " ("), m.end()):
                continue
            sentence = f"{sentence[:m.start()]}{m.group(1)}{left}{fn(day, m)}{right}{sentence[m.end():]}"
            break
    return sentence


def test_resolve_dates_skips_only_sentences_no_pattern_matches():
    day = date(2023, 5, 8)
    samples = ["I went yesterday", "Last Night was fun", "today", "TONIGHT", "this morning", "tomorrow",
               "last week", "last weekend", "last Friday", "next week", "next month", "last month",
               "this month", "last year", "this year", "next year", "two days ago", "a couple of weeks ago",
               "12 months ago", "昨天", "昨晚", "前天", "今天", "明天", "后天", "上周", "上个星期", "下周",
               "上个月", "下月", "去年", "今年", "明年", "三天前", "两个月前", "10年前"]
    for s in samples:
        assert reltime._CUE.search(s), s
    for text in samples + _texts():
        for restate in (True, False):
            assert reltime.resolve_dates(text, day, restate=restate) == _resolve_plain(text, day, restate), text


def test_the_guards_cached_tokens_give_the_scaffold_and_overlap_of_tokenizing_anew():
    rng = random.Random(3)
    texts = _texts()
    short = ["", "one", "one two", "one two three", "a b c d e", "一二三四"]
    pairs = [(a, b) for a in short for b in short] + [(rng.choice(texts), rng.choice(texts)) for _ in range(30)]
    for system, user in pairs:
        sources = rng.sample(texts, 4)
        task = JsonTask(kind="compress", system=system, user=user, response_model=dict, data=None)  # type: ignore[arg-type]
        prompt = tokenize(f"{system}\n{user}", stopwords=False)
        grams: set = set()
        words: set = set()
        for s in sources:
            toks = tokenize(s, stopwords=False)
            grams.update(guard._ngrams(toks, guard.COPY_NGRAM))
            words.update(toks)
        want = guard.Scaffold(frozenset(set(guard._ngrams(prompt, guard.COPY_NGRAM)) - grams),
                              frozenset(set(prompt) - words))
        assert guard.scaffold_of(task, iter(sources)) == want
        text = rng.choice(texts)
        terms = {t for t in search_terms(text) if not guard._NUMBER.fullmatch(t) and t not in guard._DATE_WORDS}
        known = {t for s in sources for t in search_terms(s)}
        assert guard.overlap(text, sources) == ((len(terms), len(terms & known) / len(terms)) if terms else (0, 1.0))


def test_detect_language_is_unchanged():
    import re
    cjk, latin = re.compile(r"[\u4e00-\u9fff]"), re.compile(r"[A-Za-z]")
    for text in _texts():
        c, lat = len(cjk.findall(text)), len(latin.findall(text))
        assert detect_language(text) == ("zh" if c and c * 4 >= lat else "en")


def _graph(n_nodes: int = 6) -> Graph:
    return Graph(nodes=[Node(id=f"n{i}", type="event", fields={"summary": f"e{i}"}, seq=i) for i in range(n_nodes)])


def _first_active(graph: Graph, a: str, b: str, rel: str) -> Edge | None:
    return next((e for e in graph.edges if e.from_id == a and e.to_id == b and e.relation == rel
                 and not e.invalid_at and not e.expired_at), None)


def test_the_edge_index_answers_as_a_scan_of_every_edge_through_appends_replacements_and_expiries():
    rng = random.Random(5)
    graph = _graph()
    ids = [n.id for n in graph.nodes]
    for step in range(400):
        a, b, rel = rng.choice(ids), rng.choice(ids), rng.choice(["related", "involved_in"])
        want = _first_active(graph, a, b, rel)
        assert graph.active_edge(a, b, rel) is want
        for node in ids:
            assert graph.edges_of(node) == [e for e in graph.edges if node in (e.from_id, e.to_id) and e.is_active()]
            assert graph.edges_of(node, active_only=False) == [e for e in graph.edges if node in (e.from_id, e.to_id)]
        some = set(rng.sample(ids, rng.randint(0, 4)))
        assert graph.active_edges_touching(some) == [e for e in graph.edges if e.is_active()
                                                     and (e.from_id in some or e.to_id in some)]
        roll = rng.random()
        if roll < 0.5:
            add_edge(graph, a, b, rel, rng.random(), step)
        elif roll < 0.65 and graph.edges:
            rng.choice(graph.edges).expired_at = step       # changed in place: the index still holds it
        elif roll < 0.75:
            graph.edges = [e for e in graph.edges if rng.random() < 0.8]   # a new list
        elif roll < 0.85:
            graph.edges.append(Edge(id=f"x{step}", from_id=a, to_id=b, relation=rel))   # appended directly
        elif graph.edges:
            graph.edges[rng.randrange(len(graph.edges))].invalid_at = step


def test_message_units_are_cut_again_when_anything_they_are_made_of_changed():
    m = FakeMessage(seq=3, name="Mira", is_user=False, text="I went to the harbour yesterday. Wow! It was grey and cold.",
                    send_date=None)
    first = message_units(m)
    assert message_units(m) == first and message_units(m) is not message_units(m)
    m.text = "I went to the market instead."
    assert [u.text for u in message_units(m)] == ["I went to the market instead."]
    m.name = "Rowan"
    assert message_units(m)[0].speaker == "Rowan"
    assert message_units(m, frozenset({"rowan"})) == message_units(m)   # names only drop filler
    assert chat_units([m]) == message_units(m, frozenset({"rowan"}))


class _Counting(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(16)
        self.asked: list[str] = []

    def embed(self, texts):  # type: ignore[override]
        self.asked += list(texts)
        return super().embed(texts)


def test_embed_units_appends_only_new_rows_and_the_document_reads_back_the_same():
    messages = [FakeMessage(seq=i, name="A" if i % 2 else "B", is_user=bool(i % 2), text=f"Sentence number {i} about the {i * 7} boats. "
                            f"Another one, {i}.", send_date=None) for i in range(30)]
    graph, embedder = Graph(), _Counting()
    for end in range(1, 32, 3):   # batches with overlapping windows, as ingest has
        embed_units(graph, chat_units(messages[max(0, end - 6):end]), embedder)
    units = chat_units(messages)
    assert sorted(embedder.asked) == sorted(u.text for u in units)   # each unit embedded once
    doc = graph.meta.extra[VECTORS_KEY]
    plain = dict(doc)   # as a reload would see it: decoded from the base64 alone
    graph2 = Graph()
    graph2.meta.extra[VECTORS_KEY] = plain
    assert stored_vectors(graph2).keys() == stored_vectors(graph).keys() == {u.key for u in units}
    for key, vec in stored_vectors(graph).items():
        assert np.array_equal(vec, stored_vectors(graph2)[key])
    before = len(embedder.asked)
    assert embed_units(graph, chat_units(messages[3:9]), embedder) == 0 and len(embedder.asked) == before


_RUN_REGEX = r"(.{3,40}?)\1{3,}"   # what guard.has_run replaced


def _run_texts() -> list[str]:
    rng = random.Random(11)
    out = [" ".join(t.split()) for t in _texts()]
    for _ in range(4000):
        alphabet = rng.choice(["ab", "abc", "ab ", "xyz12 ", "aaab", "的了 a"])
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 70)))
        if rng.random() < 0.4:   # a run of some unit, 2-5 times over, somewhere inside
            unit = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 43)))
            cut = rng.randint(0, len(text))
            text = text[:cut] + unit * rng.randint(2, 5) + text[cut:]
        out.append(text)
    return out


def test_has_run_finds_what_the_backtracking_regex_finds():
    import re
    pattern = re.compile(_RUN_REGEX, re.S)
    texts = _run_texts()
    found = [bool(pattern.search(t)) for t in texts]
    assert [guard.has_run(t) for t in texts] == found
    assert 100 < sum(found) < len(texts) - 100   # both kinds well represented


def test_guard_ngrams_are_the_slices_of_every_position():
    rng = random.Random(2)
    for _ in range(300):
        tokens = [rng.choice("abcde") for _ in range(rng.randint(0, 12))]
        for n in (1, 2, 4, 5):
            assert guard._ngrams(tokens, n) == [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
            assert guard._ngrams(tuple(tokens), n) == guard._ngrams(tokens, n)


def test_the_extraction_screen_sees_the_prompt_terms_and_language_of_the_plain_computation():
    from bme_cli.memory import extract_guard
    from bme_cli.prompts.extract import DialogueMessage, ExtractInput, OverviewGroup, OverviewNode
    rng = random.Random(4)
    texts = _texts()
    pieces = ["", " ", "\n", "  x  ", "Ab\u00a0CD", "Straße\u2003ẞ", "ΣΑΣ end", "\u3000中文\u3000"] + texts[:20]
    for _ in range(60):
        system, user = rng.choice(pieces), rng.choice(pieces)
        lines = rng.sample(texts, 3)
        data = ExtractInput(messages=[DialogueMessage(seq=i, role="user", name="A", text=t) for i, t in enumerate(lines)],
                            start_seq=0, end_seq=2, user_name="A",
                            overview=[OverviewGroup(type="event", label="Event", count=1,
                                                    nodes=[OverviewNode(id="n1", label=rng.choice(texts)[:80], detail="")])])
        task = JsonTask(kind="extract", system=system, user=user, response_model=dict, data=data)  # type: ignore[arg-type]
        shown = extract_guard._Shown.of(task, data)
        assert shown.prompt == " ".join(f"{system}\n{user}".casefold().split())
        assert shown.language == detect_language(shown.joined)
        assert shown.input_terms == {t for s in shown.inputs for t in search_terms(s)}
        assert shown.message_terms == {t for s in shown.messages for t in search_terms(s)}
        text = rng.choice(texts)
        assert guard.overlap_in(text, shown.input_terms) == guard.overlap(text, shown.inputs)


def test_the_prompt_keeps_panel_places_and_people_as_the_panel_readers_find_them():
    from types import SimpleNamespace

    from bme_cli.memory import extract
    from bme_cli.story.cast import panel_people
    from bme_cli.story.scene import panel_locations
    raws = [json.loads(line).get("mes") for path in [*SAMPLES, *sorted((ROOT / "tests" / "data" / "labelled").glob("*.jsonl"))]
            for line in path.read_text(encoding="utf-8").splitlines()]
    raws = [r for r in raws if isinstance(r, str)] + ["[Location: the harbour | Time: dusk]", "", "地点：长安城"]
    assert any(panel_locations(r) for r in raws) and any(panel_people(r) for r in raws)
    for raw in raws + raws:   # the second time from the cache
        m = SimpleNamespace(seq=1, role="assistant", name="N", text="t", raw=raw)
        got = extract.dialogue_message(m, "en")
        assert got.panel_places == [list(p) for p in panel_locations(raw)] and got.panel_people == panel_people(raw)
        got.panel_people.append("changed")   # a caller's change stays its own
        assert extract.dialogue_message(m, "en").panel_people == panel_people(raw)


def test_the_type_index_and_the_touched_nodes_answer_as_a_scan_through_appends_replacements_and_edits():
    from bme_cli.memory.edits import pin, touched_nodes, is_protected, is_user_archived
    rng = random.Random(9)
    graph = _graph()
    types = ["event", "character", "location"]
    for step in range(300):
        for t in types:
            assert graph.nodes_of_type(t) == [n for n in graph.nodes if n.type == t]
            assert graph.active_nodes(t) == [n for n in graph.nodes if n.type == t and not n.archived]
        assert touched_nodes(graph) == [n for n in graph.nodes if "bmeUser" in n.extra
                                        and (is_protected(n) or is_user_archived(n))]
        roll = rng.random()
        if roll < 0.5:
            graph.append_node(Node(id=f"a{step}", type=rng.choice(types), fields={"name": f"x{step}"}, seq=step))
        elif roll < 0.6:
            graph.nodes.append(Node(id=f"d{step}", type=rng.choice(types), fields={}, seq=step))   # appended directly
            graph.reindex()
        elif roll < 0.7:
            graph.nodes = [n for n in graph.nodes if rng.random() < 0.9]   # a new list
            graph.reindex()
        elif roll < 0.85 and any(not n.archived for n in graph.nodes):
            pin(graph, rng.choice([n for n in graph.nodes if not n.archived]).id, step)   # a record given in place
        elif graph.nodes:
            rng.choice(graph.nodes).archived = True
