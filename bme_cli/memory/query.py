"""The recall query (spec §4.1, fixed per §10.15): the latest user message first, then recent context.

ST-BME embeds only the last user message and gives up when none is among the last four
non-system messages. bme's query keeps the user message as the main part (weight 1.0) and
adds the other recent messages as context (weight CONTEXT_WEIGHT for lexical terms), and
still builds a query from the recent messages when no user message is among them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

CONTEXT_WEIGHT = 0.35


class MessageLike(Protocol):
    """What a query needs of a chat message (bme_cli.chat.Message has it)."""

    is_user: bool
    is_system: bool
    text: str


@dataclass(frozen=True)
class Query:
    """One recall query: the full text (embedded), the user message, and the recent context."""

    text: str
    user_message: str
    recent_messages: list[str] = field(default_factory=list)  # "[user]: text", chronological
    context: list[str] = field(default_factory=list)          # plain texts of the other recent messages
    seqs: tuple[int, ...] = ()                                 # the chat messages the query was built from

    @classmethod
    def from_text(cls, text: str) -> "Query":
        """A query given directly (`--query`, batch mode): the text is the user message."""
        text = text.strip()
        return cls(text=text, user_message=text, recent_messages=[f"[user]: {text}"] if text else [])

    def weighted_parts(self) -> list[tuple[str, float]]:
        """(text, weight) parts for lexical matching: user message 1.0, context CONTEXT_WEIGHT."""
        parts = [(self.user_message, 1.0)] if self.user_message else []
        parts.extend((c, CONTEXT_WEIGHT if self.user_message else 1.0) for c in self.context)
        return parts

    @property
    def anchor_text(self) -> str:
        """Where entity names count as anchors: the user message, else the whole query."""
        return self.user_message or self.text


def _role(m: MessageLike) -> str:
    return "user" if m.is_user else "assistant"


def build_query(messages: Sequence[MessageLike], *, recent: int = 4) -> Query:
    """The query for the next reply: the last `recent` non-system messages, the latest user one first."""
    window: list[MessageLike] = []
    for m in reversed(messages):
        if m.is_system or not (m.text or "").strip():
            continue
        window.append(m)
        if len(window) >= max(1, recent):
            break
    window.reverse()
    user = next((m for m in reversed(window) if m.is_user), None)
    user_text = user.text.strip() if user is not None else ""
    context = [m.text.strip() for m in window if m is not user]
    text = "\n".join([user_text, *context] if user_text else context)
    return Query(text=text, user_message=user_text,
                 recent_messages=[f"[{_role(m)}]: {m.text.strip()}" for m in window], context=context,
                 seqs=tuple(s for m in window if isinstance(s := getattr(m, "seq", None), int)))
