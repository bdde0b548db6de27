"""The extraction task's input as typed data: the dialogue, the graph overview, the node types.

Its own module so the reply schema (extract_schema.py) and the prompt (extract.py) both read
these models without importing each other.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..graph.schema import Schema


class DialogueMessage(BaseModel):
    """One dialogue line: seq, role, speaker, text; `new` marks the batch's own messages."""

    seq: int
    role: Literal["user", "assistant"]
    name: str = ""
    text: str = ""
    date: str | None = None  # e.g. "8 May 2023" when the chat has send dates
    new: bool = True
    # The location entries of its status panels, each the path of places it names as written
    # (story/scene.py): evidence for the offline heuristic; a model reads the story text only.
    panel_places: list[list[str]] = Field(default_factory=list)
    # The names its panels list as the story's people (好感度：青黛 60, story/cast.py): evidence too.
    panel_people: list[str] = Field(default_factory=list)


class OverviewNode(BaseModel):
    id: str
    label: str
    detail: str = ""  # other fields, compact, so a model can tell what an update would change


class OverviewGroup(BaseModel):
    type: str
    label: str
    count: int
    nodes: list[OverviewNode] = Field(default_factory=list)  # the last 10 active, seq ascending


class SchemaColumn(BaseModel):
    name: str
    hint: str = ""
    required: bool = False


class SchemaType(BaseModel):
    id: str
    label: str
    latest_only: bool = False
    columns: list[SchemaColumn]


class ExtractInput(BaseModel):
    """Everything the extraction prompt shows, as data (what the offline heuristic reads)."""

    messages: list[DialogueMessage]
    start_seq: int
    end_seq: int
    overview: list[OverviewGroup] = Field(default_factory=list)
    types: list[SchemaType] = Field(default_factory=list)
    language: Literal["en", "zh"] = "en"
    # Every active character's and place's name (the overview lists only the last 10 of a
    # type): evidence for the offline heuristic (who is a person, which place is known);
    # a model reads the overview.
    names: dict[str, list[str]] = Field(default_factory=dict)
    user_name: str | None = None
    character_name: str | None = None


def schema_types(schema: Schema) -> list[SchemaType]:
    """The schema as typed data for ExtractInput."""
    return [SchemaType(id=t["id"], label=t["label"], latest_only=bool(t.get("latestOnly")),
                       columns=[SchemaColumn(name=c["name"], hint=str(c.get("hint") or ""),
                                             required=bool(c.get("required")))
                                for c in t["columns"]])
            for t in schema.types]
