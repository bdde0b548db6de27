"""Every reply schema bme sends is bounded, fits its reply model, and sizes max_tokens;
a reply cut off inside its list keeps its complete items."""
from __future__ import annotations

import json
from typing import Any

import pytest

import openai_stub as st
from bme_cli.doctor import PING_TASK
from bme_cli.graph.schema import RELATION_TYPES, Schema
from bme_cli.prompts.compress import ColumnSpec, CompressInput, CompressNodeView, build_compress_task
from bme_cli.prompts.conflict import ConflictInput, ConflictMatch, build_conflict_task
from bme_cli.prompts.evolve import EvolveInput, EvolveNodeView, build_evolve_task
from bme_cli.prompts.extract import (ExtractInput, ExtractReply, OverviewGroup, OverviewNode,
                                     build_extract_task)
from bme_cli.prompts.recall import RecallCandidate, RecallInput, build_recall_task
from bme_cli.prompts.reflect import ReflectEvent, ReflectInput, build_reflect_task
from bme_cli.prompts.replyschema import items, record, text, token_bound, unbounded
from bme_cli.prompts.synopsis import SynopsisEvent, SynopsisInput, build_synopsis_task
from bme_cli.providers.jsonreply import check_reply
from bme_cli.providers.openai import OpenAIChatModel, reply_schema, task_max_tokens
from bme_cli.providers.salvage import salvage
from bme_cli.settings import ChatEndpoint


def _extract(known: bool = True):
    overview = [OverviewGroup(type="character", label="角色", count=1,
                              nodes=[OverviewNode(id="char-1", label="Alice")])] if known else []
    return build_extract_task(ExtractInput(messages=[], start_seq=1, end_seq=2, overview=overview),
                              Schema.default())


TASKS = {
    "extract": _extract(),
    "extract-empty-graph": _extract(known=False),
    "conflict": build_conflict_task(ConflictInput(
        type="character", fields={"name": "Alice", "state": "tired"}, text="Alice, tired",
        matches=[ConflictMatch(id="c1", type="character", fields={"name": "Alice", "goal": "rest"},
                               text="Alice", similarity=0.9)])),
    "recall": build_recall_task(RecallInput(candidates=[RecallCandidate(id=f"n{i}", type_label="事件")
                                                        for i in range(5)], max_nodes=3)),
    "compress": build_compress_task(CompressInput(
        type_id="event", type_label="事件", columns=[ColumnSpec(name="summary", required=True),
                                                    ColumnSpec(name="participants")],
        nodes=[CompressNodeView(seq=1, seq_range=(1, 2), fields={"summary": "a"})])),
    "synopsis": build_synopsis_task(SynopsisInput(current_seq=9, events=[SynopsisEvent(seq=1, summary="a")])),
    "reflect": build_reflect_task(ReflectInput(events=[ReflectEvent(seq=1, summary="a")])),
    "evolve": build_evolve_task(EvolveInput(new=EvolveNodeView(ref="new", type="event"),
                                            neighbours=[EvolveNodeView(ref="n1", type="event"),
                                                        EvolveNodeView(ref="n2", type="character")])),
    "doctor": PING_TASK,
}


def maximal(schema: dict[str, Any], root: dict[str, Any], pick: int = 0) -> Any:
    """The largest value the schema allows: every key, every string and list at its limit."""
    if "$ref" in schema:
        return maximal(root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root, pick)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return max(schema["enum"], key=lambda v: len(str(v)))
    if "anyOf" in schema:
        options = [o for o in schema["anyOf"] if o.get("type") != "null"]
        return maximal(options[pick % len(options)], root)
    kind = schema["type"]
    if kind == "string":
        return "字" * schema["maxLength"]
    if kind == "integer":
        return schema["maximum"]
    if kind == "boolean":
        return True
    if kind == "array":
        return [maximal(schema["items"], root, i) for i in range(schema["maxItems"])]
    return {k: maximal(v, root) for k, v in schema["properties"].items()}


@pytest.mark.parametrize("name", TASKS)
def test_every_reply_schema_is_bounded(name):
    assert unbounded(reply_schema(TASKS[name])) == []


@pytest.mark.parametrize("name", TASKS)
def test_the_largest_reply_a_schema_allows_is_accepted_by_the_reply_model(name):
    task = TASKS[name]
    schema = reply_schema(task)
    check = check_reply(json.dumps(maximal(schema, schema), ensure_ascii=False), task.response_model)
    assert check.ok, check.problem


def test_extract_schema_names_the_node_types_relations_and_known_ids():
    schema = json.dumps(reply_schema(TASKS["extract"]))
    for t in Schema.default().types:
        assert json.dumps({"type": "string", "const": t["id"]}) in schema
    assert json.dumps(list(RELATION_TYPES)) in schema and '"enum": ["char-1"]' in schema
    # with nothing in the graph there is nothing to update or delete
    empty = json.dumps(reply_schema(TASKS["extract-empty-graph"]))
    assert '"update"' not in empty and '"delete"' not in empty


def test_schema_ids_are_the_shown_candidates_only():
    recall = reply_schema(TASKS["recall"])["properties"]["selected_ids"]
    assert recall["maxItems"] == 3 and recall["items"]["enum"] == [f"n{i}" for i in range(5)]
    evolve = reply_schema(TASKS["evolve"])["properties"]["neighbor_updates"]
    assert evolve["items"]["properties"]["nodeId"]["enum"] == ["n1", "n2"]


def test_unbounded_schemas_are_found():
    assert unbounded({"type": "array", "items": text(5)}) == ["$: array without maxItems"]
    assert unbounded(record({"a": {"type": "string"}})) == ["$.a: string without maxLength"]
    assert unbounded({"type": "object", "properties": {}}) == ["$: object that admits other keys"]
    assert token_bound({"type": "number"}) is None
    assert token_bound(items(text(10), 3)) < token_bound(items(text(10), 30))


def test_max_tokens_follow_the_schema_and_the_setting_caps_them():
    assert task_max_tokens(PING_TASK, 2048) < 32
    assert task_max_tokens(TASKS["recall"], 2048) < 300
    assert task_max_tokens(TASKS["extract"], 2048) == 2048      # a full batch may need the cap
    assert task_max_tokens(TASKS["synopsis"], 100) == 100


def test_requests_carry_the_task_max_tokens_and_bounded_schema(openai_stub):
    model = OpenAIChatModel(ChatEndpoint(base_url=openai_stub.base_url, max_tokens=2048), json_modes={})
    model.complete_json(TASKS["recall"])
    body = openai_stub.requests[0].body
    assert body["max_tokens"] == task_max_tokens(TASKS["recall"], 2048)
    assert body["response_format"]["json_schema"]["schema"] == reply_schema(TASKS["recall"])
    model.close()


def test_a_long_schema_stays_out_of_the_prompt_in_plain_mode(openai_stub):
    model = OpenAIChatModel(ChatEndpoint(base_url=openai_stub.base_url, json_mode="plain"), json_modes={})
    for name in ("recall", "extract"):
        try:
            model.complete_json(TASKS[name])
        except Exception:  # noqa: BLE001 - only the request matters here
            pass
    recall, extract = openai_stub.requests[0], openai_stub.requests[-1]
    assert "JSON Schema" in recall.messages[0]["content"]
    assert "JSON Schema" not in extract.messages[0]["content"]   # its prompt spells out the shape
    model.close()


# ------------------------------------------------------------------ salvage

OPS = [{"action": "create", "type": "event", "fields": {"summary": "Alice met Bob"}},
       {"action": "create", "type": "character", "fields": {"name": "Bob"}, "links": [{"relation": "related"}]}]


def _cut(ops: list[dict], tail: str) -> str:
    return json.dumps({"thought": "t", "operations": ops})[:-2] + ", " + tail


def test_salvage_keeps_the_complete_items_of_the_cut_list():
    kept = salvage(_cut(OPS, '{"action": "create", "type": "ev'))
    assert kept is not None and kept.kept == 2 and kept.value["operations"] == OPS
    assert salvage('{"ids": ["a", "b", "c').value == {"ids": ["a", "b"]}
    assert salvage('[1, 2, 3').value == [1, 2]


@pytest.mark.parametrize("text", ['{"thought": "cut in a str', '{"operations": [{"action": "create", "ty',
                                  '{"operations": [], "thought": "x', "no json"])
def test_salvage_keeps_nothing_when_no_item_is_complete(text):
    assert salvage(text) is None


def test_a_cut_off_extraction_keeps_its_complete_operations_without_a_retry(openai_stub):
    openai_stub.enqueue(st.truncated(_cut(OPS, '{"action": "create", "type": "eve')))
    model = OpenAIChatModel(ChatEndpoint(base_url=openai_stub.base_url), json_modes={})
    reply = model.complete_json(TASKS["extract"])
    assert isinstance(reply, ExtractReply) and len(reply.operations) == 2 and reply.cut_off == 1
    assert len(openai_stub.requests) == 1
    model.close()


def test_a_reply_cut_inside_its_first_item_is_retried(openai_stub):
    openai_stub.enqueue(st.truncated('{"thought": "t", "operations": [{"action": "crea'),
                        st.reply_json({"thought": "t", "operations": OPS}))
    model = OpenAIChatModel(ChatEndpoint(base_url=openai_stub.base_url), json_modes={})
    reply = model.complete_json(TASKS["extract"])
    assert len(reply.operations) == 2 and reply.cut_off == 0 and len(openai_stub.requests) == 2
    model.close()
