"""The excerpts section of the block: quoted units grouped by day, one line per message.

    ## Excerpts from the chat            (## 对话原文摘录 for Chinese memories)
    [8 May 2023]
    Caroline: I went to the support group yesterday. … It was powerful.
    Melanie: That's wonderful, I'm painting a sunrise for the show.

Messages in chat order under a line per day (messages without a date come first, under
none); a message's units in their order, joined by a space (nothing for Chinese) when
they follow each other and by " … " across a gap. The section's size in quarter-tokens is
kept exactly as units are added, so the fill never formats the block to price a quote.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..text import token_units as units_of_text
from .excerpts import Unit
from ..reltime import render_date

HEADINGS = {"zh": "对话原文摘录", "en": "Excerpts from the chat"}
GAP = " … "


@dataclass
class _Line:
    unit: Unit
    parts: dict[int, str] = field(default_factory=dict)

    def text(self, zh: bool) -> str:
        out, prev = [], None
        for part in sorted(self.parts):
            if prev is not None:
                out.append(("" if zh else " ") if part == prev + 1 else (GAP.strip() if zh else GAP))
            out.append(self.parts[part])
            prev = part
        body = "".join(out)
        return f"{self.unit.speaker}: {body}" if self.unit.speaker else body


@dataclass
class QuoteSection:
    """The quoted units of one block, with the section's exact size."""

    language: str
    lines: dict[int, _Line] = field(default_factory=dict)   # seq -> line
    days: dict[str, int] = field(default_factory=dict)      # day label -> messages under it
    cost: int = 0   # quarter-tokens of the section's lines plus the newlines between them

    @property
    def zh(self) -> bool:
        return self.language == "zh"

    def heading(self) -> str:
        return f"## {HEADINGS['zh' if self.zh else 'en']}"

    def _day(self, when: datetime | None) -> str | None:
        return render_date(when, self.language)

    def price(self, unit: Unit) -> int:
        """The section's cost with this unit added."""
        line = self.lines.get(unit.seq)
        if line is not None:
            if unit.part in line.parts:
                return self.cost
            grown = _Line(line.unit, {**line.parts, unit.part: unit.text})
            return self.cost + units_of_text(grown.text(self.zh)) - units_of_text(line.text(self.zh))
        cost = self.cost if self.lines else units_of_text(self.heading())
        cost += 1 + units_of_text(_Line(unit, {unit.part: unit.text}).text(self.zh))
        day = self._day(unit.when)
        if day is not None and day not in self.days:
            cost += 1 + units_of_text(f"[{day}]")
        return cost

    def add(self, unit: Unit) -> None:
        """Quote the unit (its message's line grows, or a new line and maybe a new day appear)."""
        self.cost = self.price(unit)
        line = self.lines.get(unit.seq)
        if line is None:
            self.lines[unit.seq] = _Line(unit, {unit.part: unit.text})
            day = self._day(unit.when)
            if day is not None:
                self.days[day] = self.days.get(day, 0) + 1
        else:
            line.parts[unit.part] = unit.text

    def whole(self, seq: int) -> bool:
        """Is every unit of message `seq` quoted?"""
        line = self.lines.get(seq)
        return line is not None and len(line.parts) == line.unit.parts

    def render(self) -> list[str]:
        """The section's lines (none when nothing is quoted)."""
        if not self.lines:
            return []
        groups: dict[str | None, list[int]] = {None: []}
        for seq in sorted(self.lines):  # each day once, days in order of their first message
            groups.setdefault(self._day(self.lines[seq].unit.when), []).append(seq)
        out = [self.heading()]
        for day, seqs in groups.items():
            if day is not None:
                out.append(f"[{day}]")
            out.extend(self.lines[s].text(self.zh) for s in seqs)
        return out
