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

Fixes: custom trigger patterns are split on newlines only, so `a{1,3}` works (§10.20).
The greeting (an assistant turn at seq 0) is extracted when `include_greeting` (bme's default;
upstream ST-BME skips it, §10.18), but only once a later assistant turn follows it: until then
the user may still swipe to an alternate greeting (`first_turn`).
bme addition: an English keyword list beside ST-BME's 20 Chinese keywords, matched on
word boundaries, both feeding the same `min(2, hits)` keyword score. It leaves out the
everyday words among the glosses (actually, plan, rule, left): calm narration is full of
them, and "i actually left the plan on the table" would fire at the default threshold 2
where ST-BME, whose keywords are all Chinese, scores an English chat 0.
"""
from __future__ import annotations

import bisect
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Protocol, Sequence

from ..settings import MemorySettings

# ST-BME's default keywords: suddenly, unexpectedly, it turns out, actually, discover, betray,
# death, revive, regain memory, amnesia, confession, exposed, secret, plan, rule, contract,
# position, location, leave, arrive.
ZH_KEYWORDS: tuple[str, ...] = (
    "突然", "没想到", "原来", "其实", "发现", "背叛", "死亡", "复活", "恢复记忆", "失忆",
    "告白", "暴露", "秘密", "计划", "规则", "契约", "位置", "地点", "离开", "来到",
)
# bme's English equivalents (whole words / phrases, case-insensitive), without the everyday
# words "actually", "plan", "rule" and "left" (see the module docstring).
EN_KEYWORDS: tuple[str, ...] = (
    "suddenly", "unexpectedly", "turns out", "discovered", "betrayed", "died", "revived",
    "remembered", "amnesia", "confessed", "exposed", "secret", "contract", "location",
    "arrived", "revealed",
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
    narrators: frozenset[str]   # character-side speakers that narrate (chat.Chat.narrators)

    @property
    def assistant_turns(self) -> list[int]: ...


def story_character(chat: ChatLike) -> str | None:
    """The character's name where it is someone in the story, not a narrating card's: "The
    Velnara Accord" narrates, and its story's "Velnara" is a station, not that card."""
    return None if chat.character_name in chat.narrators else chat.character_name


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


class _Window:
    """The messages of a seq-ordered stream a plan still needs: read ahead only as far as a
    batch asks, let go once every later batch starts after them (system messages never held:
    neither the trigger nor a context window shows them)."""

    def __init__(self, messages: Iterable[MessageLike]):
        self._source = iter(messages)
        self._held: deque[MessageLike] = deque()
        self._last: int | None = None  # the seq read last
        self._floor = 0                # messages before it are not needed any more

    def read_to(self, stop: int | None) -> None:
        """Read on until every message before seq `stop` is held (to the end when None)."""
        while stop is None or self._last is None or self._last < stop:
            m = next(self._source, None)
            if m is None:
                return
            self._last = m.seq
            if m.seq >= self._floor and not m.is_system:
                self._held.append(m)

    def between(self, first: int, stop: int | None) -> list[MessageLike]:
        """The held messages first <= seq < stop (to the last one held when stop is None)."""
        return [m for m in self._held if m.seq >= first and (stop is None or m.seq < stop)]

    def drop_before(self, seq: int) -> None:
        """Let go of the messages before seq; none of them is read again."""
        self._floor = max(self._floor, seq)
        while self._held and self._held[0].seq < seq:
            self._held.popleft()


def first_turn(assistant_turns: Sequence[int], include_greeting: bool) -> int:
    """The first seq whose assistant turn may be extracted: 0 when the greeting is included and
    a reply follows it (a greeting alone may still be swiped), else 1."""
    return 0 if include_greeting and len(assistant_turns) > 1 else 1


def plan_batches(chat: ChatLike, last_processed_seq: int, settings: MemorySettings, *,
                 include_greeting: bool | None = None, until: int | None = None,
                 flush_tail: bool = True) -> list[Batch]:
    """Every batch a drain of the chat's pending assistant turns runs, in order (see module doc);
    include_greeting None = the setting's."""
    return list(plan_stream(sorted(chat.messages, key=lambda m: m.seq), chat.assistant_turns,
                            last_processed_seq, settings, include_greeting=include_greeting,
                            until=until, flush_tail=flush_tail))


def plan_stream(messages: Iterable[MessageLike], assistant_turns: Sequence[int], last_processed_seq: int,
                settings: MemorySettings, *, include_greeting: bool | None = None, until: int | None = None,
                flush_tail: bool = True) -> Iterator[Batch]:
    """plan_batches over messages in seq order read as the batches need them, so a chat of any
    length is planned holding about one batch of it (`ingest --dry-run` of a huge chat)."""
    all_turns = sorted(assistant_turns)
    greeting = settings.include_greeting if include_greeting is None else include_greeting
    first = first_turn(all_turns, greeting)
    turns = [t for t in all_turns if t > last_processed_seq and t >= first and (until is None or t <= until)]
    every, reach = settings.extract_every, 2 * settings.extract_context_turns
    window, pending, lp = _Window(messages), [], last_processed_seq
    window.drop_before(max(0, lp + 1 - reach))  # before every trigger span and context window ahead
    for t in turns:
        pending.append(t)
        triggered = False
        if len(pending) < every and settings.enable_smart_trigger:
            # What ST-BME's hook would see: everything up to the next assistant turn.
            i = bisect.bisect_right(all_turns, t)
            stop = all_turns[i] if i < len(all_turns) else None
            window.read_to(stop)
            triggered = smart_trigger(window.between(max(0, lp + 1), stop), lp, settings).triggered
        if len(pending) >= every or triggered:
            yield _make_batch(window, pending, reach, triggered)
            lp, pending = pending[-1], []
            window.drop_before(lp + 1 - reach)
    if pending and flush_tail:
        yield _make_batch(window, pending, reach, False)


def _make_batch(window: _Window, turns: list[int], reach: int, triggered: bool) -> Batch:
    window.read_to(turns[-1] + 1)
    return Batch(turns[0], turns[-1], list(turns), window.between(max(0, turns[0] - reach), turns[-1] + 1),
                 triggered)
