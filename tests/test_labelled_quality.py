"""Extraction quality on the labelled set holds its floor (issue 10, item 3).

One run of benchmarks/labelled_quality.py over every labelled chat (dev, heldout and the
three samples) through the real `bme` commands with the offline providers. It uses the
hashing embedder because it is fast and the graphs do not depend on it: with the USE model
every node of all the graphs comes out the same (only vector-made edges differ), so every
node metric is the USE run's; the recall-block fact coverage is the hash run's (the USE
figures are in docs/quality.md). The floors are today's numbers minus FLOOR_MARGIN;
raise them when the extractor gets better, never lower them to make a change pass.
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LABELLED = REPO / "tests" / "data" / "labelled"
sys.path.insert(0, str(REPO / "benchmarks"))

import labelled_quality as lq  # noqa: E402
from labelled_scoring import (ChatLabels, Fact, load_manifest, markers_in, name_key, norm,  # noqa: E402
                              score_chat)

# Today's numbers (hash embedder; docs/quality.md), per split: characters and places
# (precision, recall), facts found in one active node, facts found in the recall block.
# Since story text (docs/story-text.md) they count only what the story says: facts that were
# found in a model's status panel, summary or plot plan no longer count (dev graph 0.506 ->
# 0.456, all of it hushang_1946), while junk fell from 59 nodes to 10 and leaks to none.
# Raised after the offline extractor's evidence rules and dictionary place names, and again after
# common-noun places (scene_places.py), Chinese places and names the dictionary hid, and place
# names merged by form. The recall-block figures were left where they were (dev 0.949 and
# dev+heldout 0.940 now: one meridian_deep fact lost its place in the block to the new places),
# and so was the samples' place precision (0.933 now: two sample places the labels do not list).
# Raised again after scene headings, Chinese building and room words, kin before a name, titled
# surnames and one node per person written two ways; the held-out facts in the graph stayed at
# 0.425 (0.414 now: one fact), the samples' place precision at 0.952 (0.938 now).
# Re-based when the dev split grew from 6 to 14 chats (eight new ones written by people who had
# not read the extractor: they scored 0.72 / 0.65 characters and 0.52 / 0.34 places at first),
# after the rules those chats taught (status-panel locations, more surnames, titles and place
# nouns, four places and seven people a batch, every stored name as evidence); held-out went
# from 0.771 / 0.712 and 0.789 / 0.492 to 0.792 / 0.731 and 0.829 / 0.557; a panel's location
# read as a path of places (3 Dec) moved held-out places to 0.800 / 0.590; the second round of
# 3 Dec (panel cast entries, the cap on new names, segmenter fixes, places by their last
# words, a room gone to across a batch's edge) to the figures below (samples' place precision
# 0.970 -> 0.943: cliffs, a market square the labels do not list). Re-based when four dev chats
# were added (18 dev chats; written by someone who had not read the extractor, they first read
# 0.74 / 0.89 characters and 0.85 / 0.76 places) and after the rules they taught; and again
# when four more were added (22 dev chats; they first read 0.70 / 0.85 and 0.74 / 0.59); and when
# four more came (26 dev chats; they first read 0.72 / 0.87 characters and 0.81 / 0.78 places,
# and their facts are harder: dev graph 0.346 -> 0.315, recall block 0.867 -> 0.853); and when
# four more came (30 dev chats; first read 0.758 / 0.855 characters, 0.672 / 0.705 places).
# Held-out place precision fell 0.804 -> 0.787 with the landscape place words (one wrong place).
# Again with 34 dev chats (the last four first read 0.771 / 0.787 and 0.800 / 0.771, 2 leaks).
# Again with 42 dev chats (the last eight first read 0.610 / 0.664 characters and 0.694 / 0.608
# places, 21 junk nodes: the dev split fell to 0.808 / 0.821 and 0.812 / 0.739), and after the
# lists of real places and the rules those chats taught; held-out places 0.787 / 0.607 ->
# 0.784 / 0.656, the samples' place precision 0.943 -> 0.917 (东海 of 东海归墟岛, which the labels
# do not list), held-out junk 3 -> 4; the dev graph's facts 0.229 -> 0.224 (about three facts,
# two of them jiangnan_silk's, no longer held whole by one node since names are found differently).
# Again with 50 dev chats (4 Dec; the last eight, written blind, first read 0.722 / 0.768
# characters and 0.762 / 0.713 places, 22 junk nodes and one leak: the dev split fell from
# 0.845 / 0.834 and 0.819 / 0.780 to 0.820 / 0.821 and 0.809 / 0.768, its facts to 0.193 / 0.757),
# and raised after the rules they taught (the eight now 0.748 / 0.784 and 0.816 / 0.764, 17 junk
# nodes, no leak); held-out characters 0.826 / 0.731 -> 0.830 / 0.750 with them. A story that
# keeps its own calendar is no longer dated by the send dates (7 dev chats): the dev facts moved
# 0.194 / 0.762 -> 0.193 / 0.755 (a few facts each way; the metric does not see a wrong date).
# Again with 58 dev chats (4 Dec, eighth round; the last eight, written blind, first read 0.625 /
# 0.772 characters and 0.705 / 0.700 places, 28 junk nodes: the dev split fell to 0.797 / 0.821
# and 0.807 / 0.770), and after the rules they taught (the eight now 0.705 / 0.797 and 0.750 /
# 0.720, 18 junk nodes); held out unchanged.
TODAY = {
    "dev":         {"characters": (0.808, 0.824), "places": (0.815, 0.777), "graph": 0.179, "recall": 0.737},
    "heldout":     {"characters": (0.830, 0.750), "places": (0.784, 0.656), "graph": 0.448, "recall": 0.943},
    "samples":     {"characters": (1.000, 0.905), "places": (0.917, 0.917), "graph": 0.780, "recall": 1.000},
    "dev+heldout": {"characters": (0.809, 0.819), "places": (0.813, 0.770), "graph": 0.205, "recall": 0.757},
}
FLOOR_MARGIN = 0.03          # a floor is today's number minus this
# Junk today (dev+heldout / samples): nodes carrying non-story text, junk-named entities,
# leak phrases found. A ceiling is today's count plus JUNK_SLACK (18 with 22 dev chats, 22 with 26, 29 with 30, 33 with 34,
# 51 with 42: the eight newest brought 21 at first, 17 now; 72 and a leak with 50, the eight newest
# bringing 22 at first, 18 and no leak now: 67; 94 with 58, the eight newest bringing 28 at
# first, 18 now: 84).
TODAY_JUNK = {"dev+heldout": {"junk_nodes": 84, "junk_entities": 82, "leaks": 0},
              "samples": {"junk_nodes": 0, "junk_entities": 0, "leaks": 0}}
JUNK_SLACK = 2


@pytest.fixture(scope="module")
def report() -> lq.Report:
    return lq.measure(embedder="hash")


def _drops(report: lq.Report) -> list[str]:
    drops = []
    for split, want in TODAY.items():
        got = report.totals[split]
        pairs = [(f"{k} precision", want[k][0], got[k]["precision"]) for k in ("characters", "places")]
        pairs += [(f"{k} recall", want[k][1], got[k]["recall"]) for k in ("characters", "places")]
        pairs += [("facts in graph", want["graph"], got["fact_coverage_graph"]),
                  ("facts in recall", want["recall"], got["fact_coverage_recall"])]
        drops += [f"{split} {what}: {now} < floor {round(today - FLOOR_MARGIN, 3)} (today {today})"
                  for what, today, now in pairs if now is None or now < today - FLOOR_MARGIN]
    return drops


def test_labelled_quality_stays_above_its_floors(report: lq.Report) -> None:
    drops = _drops(report)
    assert not drops, "extraction quality dropped:\n" + "\n".join(drops) + "\n\n" + lq.format_table(report)


def test_labelled_junk_stays_under_its_ceilings(report: lq.Report) -> None:
    over = [f"{split} {k}: {report.totals[split][k]} > {v + JUNK_SLACK}"
            for split, counts in TODAY_JUNK.items() for k, v in counts.items()
            if report.totals[split][k] > v + JUNK_SLACK]
    assert not over, "more junk in the graphs:\n" + "\n".join(over) + "\n\n" + lq.format_table(report)


def test_report_names_each_chats_failures(report: lq.Report) -> None:
    table = lq.format_table(report)
    assert all(f"## {s.name} (" in table for s in report.scores)
    data = json.loads(json.dumps(report.as_json(), ensure_ascii=False))
    assert {c["name"] for c in data["chats"]} == {s.name for s in report.scores}
    assert set(data["totals"]) == {"dev", "heldout", "samples", "dev+heldout"}


# ------------------------------------------------------------------ the set itself

CHATS = load_manifest(LABELLED / "manifest.json")


def _messages(cl: ChatLabels) -> list[dict]:
    objs = [json.loads(line) for line in cl.chat_path.read_text(encoding="utf-8").split("\n")]
    return [o for o in objs if "mes" in o]


def _strings(obj: object) -> list[str]:
    """Every string in a message: mes, swipes, extra.reasoning, ..."""
    if isinstance(obj, str):
        return [obj]
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else []
    return [s for item in items for s in _strings(item)]


def test_chats_are_built_from_their_sources() -> None:
    spec = importlib.util.spec_from_file_location("build_chats", LABELLED / "build_chats.py")
    build = importlib.util.module_from_spec(spec)
    sys.modules["build_chats"] = build          # dataclasses look their module up
    spec.loader.exec_module(build)
    assert build.main(["--check"]) == 0


@pytest.mark.parametrize("cl", [c for c in CHATS if c.split != "samples"], ids=lambda c: c.name)
def test_labelled_chats_are_written_as_sillytavern_writes_them(cl: ChatLabels) -> None:
    text = cl.chat_path.read_text(encoding="utf-8")
    assert not text.endswith("\n")
    for line in text.split("\n"):
        assert json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")) == line
    msgs = _messages(cl)
    assert 20 <= len(msgs) <= 60
    for m in msgs:
        assert m["mes"].strip() or not m.get("is_user")   # a failed generation leaves a reply empty
        if "swipes" in m:
            assert m["mes"] == m["swipes"][m["swipe_id"]] and all(s.strip() for s in m["swipes"] if m["mes"].strip())


def test_splits_are_balanced_by_language() -> None:
    langs = {split: sorted(c.language for c in CHATS if c.split == split) for split in ("dev", "heldout")}
    for split, found in langs.items():   # as many English as Chinese chats, three at least
        assert found.count("en") == found.count("zh") >= 3 and set(found) == {"en", "zh"}, split


@pytest.mark.parametrize("cl", CHATS, ids=lambda c: c.name)
def test_labels_agree_with_their_chat(cl: ChatLabels) -> None:
    msgs = _messages(cl)
    shown = norm("\n".join(m["mes"] for m in msgs))
    everything = norm("\n".join(_strings(msgs)))
    for kind, labels in cl.entities.items():
        keys = [k for lab in labels for k in lab.keys]
        assert len(keys) == len(set(keys)), f"{kind}: an alias is listed twice"
        assert not set(keys) & (cl.not_entities | cl.also_ok[kind]), f"{kind}: label also junk or tolerated"
        assert all(any(k in shown for k in lab.keys) for lab in labels), f"{kind}: label not in chat"
    assert 5 <= len(cl.facts) <= 15
    for fact in cl.facts:   # each fact can be found in one message of the story
        assert any(fact.found_in(norm(m["mes"])) for m in msgs), fact.text
    for phrase in cl.leaks:  # a leak is in the file, never inside the story's <content>
        assert norm(phrase) in everything, phrase
        stories = [s for m in msgs for s in re.findall(r"<content>(.*?)</content>", m["mes"], re.S)]
        assert not any(norm(phrase) in norm(s) for s in stories), phrase


# ------------------------------------------------------------------ the scorer

def _node(kind: str, archived: bool = False, **fields: str) -> dict:
    return {"type": kind, "archived": archived, "fields": fields}


def test_markers_name_each_kind_of_non_story_text() -> None:
    assert markers_in("Mira walks to the ford at dawn.") == []
    assert markers_in("{{user}} nods") == ["macro"]
    assert markers_in("<BOT> smiles") == ["macro"]
    assert "markup" in markers_in("<StatusBlock>HP</StatusBlock>")
    assert markers_in("Harassment: none") == ["policy"]
    assert markers_in("根据要求，本轮推进主线") == ["planning"]
    assert markers_in("📅 时间：三月 📍 地点：码头") == ["panel"]
    assert markers_in("Time: 11 pm, the clock says") == []          # one key alone is prose


def test_scoring_counts_duplicates_as_false_positives_and_skips_tolerated_names() -> None:
    raw = {"characters": [{"name": "苏晚晴", "aliases": ["苏姑娘"]}, {"name": "Tobin", "minor": True}],
           "places": [{"name": "Saltmere"}]}
    from labelled_scoring import _labels  # the loader's own converter
    cl = ChatLabels("t", "dev", "zh", Path("x"), {k: _labels(v) for k, v in raw.items()},
                    {"characters": {name_key("the Gray Hand")}, "places": set()}, {name_key("Hate")},
                    [Fact("poisoned", (("苏晚晴",), ("毒", "poison")), "q")], ["plan: 1."])
    graph = {"nodes": [_node("character", name="苏晚晴"), _node("character", name="苏姑娘"),
                       _node("character", name="Gray Hand"), _node("character", name="Hate"),
                       _node("location", name="Saltmere"), _node("character", name="Gull", archived=True),
                       _node("event", summary="苏晚晴 was poisoned. Plan: 1. go")]}
    s = score_chat(cl, graph, ["苏晚晴 中毒"])
    chars = s.entities["characters"]
    assert chars.found == ["苏晚晴"] and chars.nodes == 3 and chars.neutral == ["Gray Hand"]
    assert chars.duplicates == ["苏姑娘 (again 苏晚晴)"] and chars.false_positives == ["Hate [junk]"]
    assert chars.precision == pytest.approx(1 / 3) and chars.recall == 0.5 and chars.recall_main == 1.0
    assert s.entities["places"].precision == 1.0
    assert s.leaks == ["plan: 1."] and s.facts_graph == [True] and s.facts_recall == [True]
    assert [k for items in s.junk_nodes.values() for k in items] == [
        "Hate [junk entity]", "苏晚晴 was poisoned. Plan: 1. go [planning, leak]"]
