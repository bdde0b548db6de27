"""What a pipeline step asks a chat model: a `JsonTask` and the kinds of task there are.

A neutral base layer (pydantic and the standard library only): prompts/ builds tasks,
providers/ answer them and memory/ hands them over, so none of the three need import
another to agree on the shape of a request.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)

# Every kind of task the pipeline asks a chat model. The offline provider answers each.
TASK_KINDS = ("extract", "conflict", "recall", "compress", "synopsis", "reflect", "evolve")


@dataclass(frozen=True)
class JsonTask(Generic[T]):
    """One JSON-producing request: prompts, the reply model, and the typed input behind them."""

    kind: str
    system: str
    user: str
    response_model: type[T]
    data: Any = None
    max_retries: int = 1
    # The bounded JSON schema sent to the server (prompts/replyschema.py); None sends the
    # reply model's own. It constrains what the model writes; response_model still validates.
    json_schema: dict[str, Any] | None = field(default=None, compare=False)
    label: str = ""   # what the call log names this task (default: kind), e.g. "doctor"
    # A plausibility check of a reply that validated: a problem it names makes the reply
    # unusable like an invalid one (asked again with the problem as the note, never cached).
    # Remote models only: the offline heuristics are bme's own answers.
    plausible: Callable[[Any], str | None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise ValueError(f"unknown task kind {self.kind!r}")
