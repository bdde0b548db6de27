"""Who witnessed what in a group chat: each memory's `fields.visibility`, from who was there.

SillyTavern's group chat files do not say who is in a scene, only who spoke. bme counts a
member as present for a memory when they speak within its messages or in the
PRESENCE_WINDOW messages before it (someone who spoke a few turns ago is still in the
room; someone silent for longer may have left). The user is always present. Events,
threads and rules get the list, as ST-BME's `visibility` field holds it (a list of names),
so recall with a viewer (`--viewer NAME`, or ST-BME's own visibility filter on the
speaking character) gives each member only what they witnessed. Characters, places, the
synopsis and reflections stay visible to all, and so do memories that already carry a
visibility and those seeded from lorebooks and cards. PRESENCE_WINDOW is a judgement, not
a measurement: no labelled presence data was at hand (docs/sillytavern.md).
"""
from __future__ import annotations

from ..chat import Chat
from ..graph.model import Graph, Node
from .seed import SEED_KEY

PRESENCE_WINDOW = 6
WITNESSED_TYPES = frozenset({"event", "thread", "rule"})


def members(chat: Chat) -> list[str]:
    """The group's characters: every person who speaks that is not the user, in order of first line."""
    return list(dict.fromkeys(m.name for m in chat.messages if m.name and not m.is_user and not m.narrator))


def present(chat: Chat, start: int, end: int, window: int = PRESENCE_WINDOW) -> list[str]:
    """Who was there for messages start..end: their speakers, those of the `window` before, the user."""
    shown = chat.messages[max(0, start - window):max(0, end + 1)]
    names = [m.name for m in shown if m.name and not m.is_user and not m.narrator]
    user = [chat.user_name] if chat.user_name else []
    return list(dict.fromkeys([*names, *user]))


def mark_witnesses(graph: Graph, chat: Chat) -> int:
    """Give every witnessed-type memory of a group chat without a visibility its witnesses; returns how many."""
    if not chat.is_group:
        return 0
    marked = 0
    for node in graph.nodes:
        if _needs_witnesses(node):
            node.fields["visibility"] = present(chat, node.seq_range[0], node.seq_range[-1])
            marked += 1
    return marked


def _needs_witnesses(node: Node) -> bool:
    return (node.type in WITNESSED_TYPES and not node.archived and "visibility" not in node.fields
            and SEED_KEY not in node.extra)
