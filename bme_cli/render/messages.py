"""What `bme show CHAT` prints: the messages bme reads, and one message's story text."""
from __future__ import annotations

from .fit import Fitted
from .tables import cell, new_table


def messages_table(title: str, views: list) -> Fitted:  # noqa: ANN001 - workflow.MessageView list
    """`bme show CHAT`: every message with its length in the file and as story text."""
    # In a terminal the preview takes the width the other columns leave (expand + ratio), one
    # line a message; elsewhere the table is as wide as its content.
    t = new_table(title=cell(title), title_justify="left", expand=True)
    for col, justify in (("#", "right"), ("role", "left"), ("speaker", "left"), ("raw", "right"),
                         ("story", "right")):
        t.add_column(col, justify=justify, no_wrap=True, max_width=12 if col == "speaker" else None,
                     overflow="ellipsis")
    t.add_column("story text", no_wrap=True, overflow="ellipsis", ratio=1, min_width=10)
    for v in views:
        m = v.message
        role = "hidden" if m.is_system else m.role
        preview = " ".join(m.text[:400].split())[:120]
        t.add_row(str(m.seq), role, cell(m.name or "-"), str(len(m.raw)), str(len(m.text)), cell(preview))
    return Fitted(t, drop=("raw", "story"))
def message_text(view, *, raw: bool = False) -> str:  # noqa: ANN001 - workflow.MessageView
    """`bme show CHAT --message N`: a header line, what was dropped, the story text."""
    m = view.message
    speaker = m.name or "(no speaker)"
    if m.raw_name and m.raw_name != m.name:
        speaker += f" (the file says {m.raw_name!r})"
    head = (f"#{m.seq} · {'hidden ' if m.is_system else ''}{m.role} · {speaker} · line {m.line_no}"
            f" · {len(m.raw)} -> {len(m.text)} chars")
    lines = [head, "dropped: " + (", ".join(view.dropped) or "nothing")]
    if raw:
        lines += ["", "--- raw mes ---", m.raw, "", "--- story text ---"]
    lines += [m.text if m.text else "(no story text)"]
    return "\n".join(lines)
