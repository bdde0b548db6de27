"""One stored character per person: which stored node a new name is, and folding the partial
forms a full name reveals to be one person.

A chat names a person many ways: "Nell" in one batch, "Miss Carter" in another, and only
later "Nell Carter". Each form alone fits only itself, so two nodes were made. When a full
name arrives that the first name of one node and the titled surname of another both fit,
they are one person: the node with the first name takes the full name (its old name and the
other's become aliases, through the ordinary update, so history and vectors follow) and the
other is archived, its links moved to the one kept. Only a
name of two words or more bridges, only forms without a first name of their own ("Miss
Carter", "Brother Mercer") are folded, and never when another stored person has that surname.
"""
from __future__ import annotations

from typing import Any, Callable

from ..graph.model import Graph, Node
from ..graph.ops import add_edge, archive_node
from ..text import PERSON_TITLES, same_person_name

ALIASES = "aliases"  # a free-form column: other names of a character or place, comma-separated


def norm_name(v: Any) -> str:
    return " ".join(str(v).split()).casefold() if v is not None else ""


def aliases_of(node: Node) -> set[str]:
    """The node's other names (its `aliases` field), normalised as names are compared."""
    raw = node.fields.get(ALIASES)
    return {norm_name(a) for a in str(raw).split(",") if a.strip()} if raw else set()


def person_forms(a: str, b: str) -> bool:
    """Whether two normalised names may be one person (either a form of the other)."""
    return same_person_name(a, b) or same_person_name(b, a)


def first_name(name: str) -> str:
    """The first word that is no title: "harlan" of "harlan kessler", "kessler" of "sheriff kessler"."""
    words = [w for w in name.replace(".", " ").split() if w not in PERSON_TITLES]
    return words[0] if words else ""


def names_more(new: str, old: str) -> bool:
    """Whether normalised `new` names more of the person than `old`: more words that are no
    titles ("ike mercer" / "ike"; not "elena reyes" / "captain elena reyes"), or a Chinese
    name that is no form of the old one's (沈砚秋 for 砚秋, 韩铮 for 韩主管; not 唐队长 for 唐队)."""
    if new.isascii():
        return len([w for w in new.replace(".", " ").split() if w not in PERSON_TITLES]) > \
            len([w for w in old.replace(".", " ").split() if w not in PERSON_TITLES])
    return not same_person_name(new, old)


def person_fits(name: str, candidates: list[Node]) -> list[Node]:
    """Every stored character that `name` is a shorter or longer form of."""
    return [n for n in candidates if person_forms(name, norm_name(n.fields.get("name")))]


def one_person(name: str, candidates: list[Node]) -> list[Node]:
    """The one stored character that `name` is a shorter or longer form of ("Reyes" / "Elena
    Reyes", 砚秋 / 沈砚秋); where two fit, the one with the same first name, else the one whose
    first name is a form of it ("winifred harker": "Winnie", not "Mr. Harker"); none when that
    does not decide (a surname a family shares)."""
    fits = person_fits(name, candidates)
    if len(fits) > 1:   # "harlan kessler": "harlan" before "sheriff kessler", whom a surname alone fits
        given = first_name(name)
        firsts = [(n, first_name(norm_name(n.fields.get("name")))) for n in fits]
        fits = [n for n, first in firsts if given and first == given] or \
            [n for n, first in firsts if given and first != given and person_forms(first, given)]   # "winnie"
    return fits if len(fits) == 1 else []


def titled_surname_forms(name: str, kept: Node, candidates: list[Node]) -> list[Node]:
    """The other stored characters a full `name` shows to be the person `kept`: a title and the
    surname alone ("miss carter" of "nell carter"), when no other stored name has that surname."""
    words = name.replace(".", " ").split()
    if len(words) < 2 or not name.isascii():
        return []
    surname = words[-1]
    same_surname = [n for n in candidates if n is not kept
                    and norm_name(n.fields.get("name")).replace(".", " ").split()[-1:] == [surname]]
    titled = [n for n in same_surname if first_name(norm_name(n.fields.get("name"))) == surname
              and norm_name(n.fields.get("name")) != surname]
    return titled if len(titled) == len(same_surname) == 1 else []


def folded_fields(kept: Node, others: list[Node], name: str) -> dict[str, Any]:
    """The fields `kept` takes when it becomes `name` and `others` fold into it: the new name, its
    old name and theirs as aliases, and any field it lacks that they have (their state, say)."""
    aliases = [a.strip() for a in str(kept.fields.get(ALIASES) or "").split(",") if a.strip()]
    for old in (kept.fields.get("name"), *(o.fields.get("name") for o in others)):
        old = str(old or "").strip()
        if old and norm_name(old) != norm_name(name) and norm_name(old) not in {norm_name(a) for a in aliases}:
            aliases.append(old)
    out: dict[str, Any] = {"name": " ".join(name.split())}
    if aliases:
        out[ALIASES] = ", ".join(aliases)
    for other in others:
        for key, value in other.fields.items():
            if key not in ("name", ALIASES) and value not in (None, "") and kept.fields.get(key) in (None, "") \
                    and key not in out:
                out[key] = value
    return out


def fold_into(graph: Graph, kept: Node, others: list[Node], now: int, new_id: Callable[[], str]) -> int:
    """Archive `others` as forms of `kept`, their active links moved to it (their fields go
    through `folded_fields` and the caller's update). Returns how many were archived."""
    for other in others:
        for e in graph.edges_of(other.id):
            a = kept.id if e.from_id == other.id else e.from_id
            b = kept.id if e.to_id == other.id else e.to_id
            add_edge(graph, a, b, e.relation, e.strength, now, valid_at=e.valid_at, new_id=new_id)
        archive_node(graph, other, now)
    return len(others)
