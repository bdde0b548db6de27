"""When to extract, and which messages each extraction batch reads (spec §3.1, §3.2).

ST-BME extracts once per generation: when `extract_every` assistant turns are pending, or
earlier when the smart trigger fires. A CLI run instead *drains* a backlog, so
`plan_batches` replays that rule turn by turn, as if the chat were being played live:

* after each assistant turn t (with the messages up to the next assistant turn, i.e. the
  user message ST-BME would also see when its hook fires), the turns pending since the last
  batch form a batch when there are `extract_every` of them, or - smart trigger enabled -
  when the pending messages trigger (§3.2). A triggered batch therefore holds *all* pending
  turns (§3.1.7) but never more than `extract_every`: it cuts a batch short at an eventful
  moment instead of merging a whole backlog into one huge prompt;
* the turns left at the end (fewer than `extract_every`, untriggered) are drained as a
  short last batch (`flush_tail=True`, the CLI default) or left pending for a later run
  (`flush_tail=False`, ST-BME's waiting behaviour).

Fixes: custom trigger patterns are split on newlines only, so `a{1,3}` works (§10.20);
the greeting (seq 0) is skipped unless asked for (§10.18).
bme addition: an English keyword list beside ST-BME's 20 Chinese keywords, matched on
word boundaries, both feeding the same `min(2, hits)` keyword score.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from ..settings import MemorySettings

# ST-BME's default keywords: suddenly, unexpectedly, it turns out, actually, discover, betray,
# death, revive, regain memory, amnesia, confession, exposed, secret, plan, rule, contract,
# position, location, leave, arrive.
ZH_KEYWORDS: tuple[str, ...] = (
    "突然", "没想到", "原来", "其实", "发现", "背叛", "死亡", "复活", "恢复记忆", "失忆",
    "告白", "暴露", "秘密", "计划", "规则", "契约", "位置", "地点", "离开", "来到",
)
# bme's English equivalents (whole words / phrases, case-insensitive).
EN_KEYWORDS: tuple[str, ...] = (
    "suddenly", "unexpectedly", "turns out", "actually", "discovered", "betrayed", "died",
    "revived", "remembered", "amnesia", "confessed", "exposed", "secret", "plan", "rule",
    "contract", "location", "left", "arrived", "revealed",
)
_EN_KEYWORD_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in EN_KEYWORDS) + r")\b", re.I)
_PUNCT_RE = re.compile(r"[!?！？]")
_ENTITY_RE = re.compile(
    r"[A-Z][a-z]{2,}|[\u4e00-\u9fff]{2,6}(?:先生|小姐|王国|城|镇|村|学院|组织|公司|小队|军团)")


class MessageLike(Protocol):
    """What the write path reads of a chat message (bme_cli.chat.Message has all of it)."""

    seq: int
    name: str
    is_user: bool
    is_system: bool
    text: str
    raw: str
    swipe_id: int | None
    send_date: Any

    @property
    def role(self) -> str: ...


class ChatLike(Protocol):
    """What the write path reads of a chat (bme_cli.chat.Chat has all of it)."""

    messages: list[Any]
    user_name: str | None
    character_name: str | None

    @property
    def assistant_turns(self) -> list[int]: ...


@dataclass(frozen=True)
class TriggerDecision:
    """The smart trigger's verdict on the pending messages."""

    triggered: bool
    score: int
    reasons: list[str] = field(default_factory=list)


@dataclass
class Batch:
    """One extraction: the assistant turns it covers and the messages the prompt shows."""

    start_seq: int
    end_seq: int
    turns: list[int]
    context: list[Any]  # MessageLike, non-system, seq order, contextStart..end_seq
    triggered: bool = False  # cut short by the smart trigger

    @property
    def context_start(self) -> int:
        """The first seq of the context window (start_seq when the window is empty)."""
        return self.context[0].seq if self.context else self.start_seq


def split_patterns(patterns: str) -> list[re.Pattern[str]]:
    """Custom trigger regexes, one per line (never split on commas); invalid ones skipped."""
    out: list[re.Pattern[str]] = []
    for line in (patterns or "").splitlines():
        piece = line.strip()
        if not piece:
            continue
        try:
            out.append(re.compile(piece, re.I))
        except re.error:
            continue  # ST-BME skips invalid patterns silently; so do we
    return out


def smart_trigger(messages: Sequence[MessageLike], last_processed: int,
                  settings: MemorySettings) -> TriggerDecision:
    """ST-BME's smart-trigger score over the messages after last_processed (spec §3.2)."""
    pending = [m for m in messages
               if m.seq >= max(0, last_processed + 1) and not m.is_system and (m.text or "").strip()]
    if not pending:
        return TriggerDecision(False, 0, [])
    combined = "\n".join(m.text or "" for m in pending)
    score, reasons = 0, []
    hits = [k for k in ZH_KEYWORDS if k in combined]
    hits += list(dict.fromkeys(h.lower() for h in _EN_KEYWORD_RE.findall(combined)))
    if hits:
        score += min(2, len(hits))
        reasons.append("keyword: " + ", ".join(hits[:3]))
    for pattern in split_patterns(settings.trigger_patterns):
        if pattern.search(combined):
            score += 2
            reasons.append(f"custom trigger: {pattern.pattern}")
            break
    switches = sum(1 for a, b in zip(pending, pending[1:]) if a.role != b.role)
    if switches >= 2:
        score += 1
        reasons.append(f"role switch: {switches}")
    punct = len(_PUNCT_RE.findall(combined))
    if punct >= 2:
        score += 1
        reasons.append(f"punctuation: {punct}")
    if _ENTITY_RE.search(combined):
        score += 1
        reasons.append("entity")
    threshold = max(1, settings.smart_trigger_threshold or 2)
    return TriggerDecision(score >= threshold, score, reasons)


def context_window(messages: Sequence[MessageLike], start_seq: int, end_seq: int,
                   context_turns: int) -> list[MessageLike]:
    """Non-system messages from max(0, start - 2*context_turns) to end inclusive (spec §3.1.8)."""
    first = max(0, start_seq - 2 * context_turns)
    return [m for m in messages if first <= m.seq <= end_seq and not m.is_system]


def _make_batch(messages: Sequence[MessageLike], seqs: list[int], turns: list[int],
                settings: MemorySettings, triggered: bool) -> Batch:
    first = max(0, turns[0] - 2 * settings.extract_context_turns)
    lo, hi = bisect.bisect_left(seqs, first), bisect.bisect_right(seqs, turns[-1])
    ctx = [m for m in messages[lo:hi] if not m.is_system]
    return Batch(turns[0], turns[-1], list(turns), ctx, triggered)


def plan_batches(chat: ChatLike, last_processed_seq: int, settings: MemorySettings, *,
                 include_greeting: bool = False, until: int | None = None,
                 flush_tail: bool = True) -> list[Batch]:
    """Every batch a drain of the chat's pending assistant turns runs, in order (see module doc)."""
    messages = sorted(chat.messages, key=lambda m: m.seq)
    seqs = [m.seq for m in messages]
    all_turns = sorted(chat.assistant_turns)
    turns = [t for t in all_turns
             if t > last_processed_seq and (include_greeting or t != 0)
             and (until is None or t <= until)]
    every = settings.extract_every
    batches: list[Batch] = []
    pending: list[int] = []
    lp = last_processed_seq
    for t in turns:
        pending.append(t)
        triggered = False
        if len(pending) < every and settings.enable_smart_trigger:
            # What ST-BME's hook would see: everything up to the next assistant turn.
            i = bisect.bisect_right(all_turns, t)
            stop = all_turns[i] if i < len(all_turns) else None
            lo = bisect.bisect_left(seqs, max(0, lp + 1))
            hi = bisect.bisect_left(seqs, stop) if stop is not None else len(seqs)
            triggered = smart_trigger(messages[lo:hi], lp, settings).triggered
        if len(pending) >= every or triggered:
            batches.append(_make_batch(messages, seqs, pending, settings, triggered))
            lp, pending = pending[-1], []
    if pending and flush_tail:
        batches.append(_make_batch(messages, seqs, pending, settings, False))
    return batches
