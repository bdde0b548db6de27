"""One stored place per place: which stored place a new name is when a text goes on naming it
by its last words ("the Gap" of Shiloh Gap, "the assay office" of the Galena Territorial
Assay Office), and the fields that give a short form stored first its full name.

Like a surname for a person, the last words are only a hint: a chat's "the station" may be
any of its stations, so a short form names a stored place only when one alone fits.
"""
from __future__ import annotations

from typing import Any

from ..graph.model import Node
from ..text import place_short_form
from .people import aliases_of, folded_fields, norm_name


def one_place(name: str, candidates: list[Node]) -> list[Node]:
    """The one stored place that normalised `name` is the short or full form of; none when
    several fit."""
    fits = [n for n in candidates if (other := norm_name(n.fields.get("name")))
            and (place_short_form(name, other) or place_short_form(other, name))]
    return fits if len(fits) == 1 else []


def fuller_place(existing: Node, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that make `existing` the place's full name ("Gap" -> "Shiloh Gap", the old
    one an alias); {} when the name is no fuller."""
    new, old = norm_name(fields["name"]), norm_name(existing.fields.get("name"))
    if not old or new in aliases_of(existing) or not place_short_form(old, new):
        return {}
    return folded_fields(existing, [], str(fields["name"]))
