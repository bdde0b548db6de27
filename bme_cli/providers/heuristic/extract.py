"""The offline extraction heuristic: a deterministic stand-in for the extraction model.

From the batch's new messages only (its assistant turns and the user turn before them;
older context lines are not re-extracted) it makes:
* one event whose summary is the batch condensed into one table cell (condense.py: filler
  dropped, the sentences with the most content that fit SUMMARY_CHARS, 200, the block's
  cell limit; SUMMARY_CHARS_ZH for Chinese), first person turned into the speaker's name
  (then "they"/"their"), relative dates resolved against the message date ("yesterday
  (7 May 2023)"), prefixed with the date when the chat has one; participants (the speakers
  who said something and the names found) only when the summary does not name them all;
  importance 5, raised by strong cues (death, betrayal, secrets, marriage ...);
* characters for the speakers and for recurring or speaking proper names (Latin
  capitalised words seen mid-sentence, or twice; Chinese surname + name before a speech
  verb, or with an honorific): a create for a new name, an update of the listed node
  when a state change is stated ("Mira was injured", "林风受了重伤");
* locations from place phrases ("the Silver Harbor", "in Paris", "来到青云山", "悦来客栈");
* links: the event involved_in each character, occurred_at the first place.

Limits: no coreference (he/she are not resolved), no abstraction (sentences are kept,
not rewritten), no translation (the memory language follows the text), English and
Chinese only, names by surface patterns (a capitalised common noun that recurs can pass
for a name; a Chinese name without a known surname or cue is missed), no rules, threads
or deletions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...prompts.extract import CreateOp, DialogueMessage, ExtractInput, ExtractReply, LinkSpec, UpdateOp
from .condense import Piece, assemble, compact, short_forms, value
from .nlp import (HONORIFIC_RE, TITLES, clip, cjk_names, ends_quoted, titled_names, informativeness, is_cjk, latin_names, parse_day, places,
                  resolve_dates, split_sentences, state_changes, third_person)

SUMMARY_CHARS = 200     # the block's cell limit (spec §5): a longer summary would lose its tail
SUMMARY_CHARS_ZH = 160
MIN_SENTENCE_SCORE = 0.8  # Chinese: sentences below this informativeness are filler ("好。")
MAX_CHARACTERS = 6
MAX_PLACES = 2
EN_CUES = re.compile(r"\b(died|dead|killed|murder\w*|betray\w*|secret\w*|reveal\w*|married|engaged|"
                     r"pregnant|discover\w*|captured|escaped|war|attack\w*|confess\w*|promise\w*|"
                     r"adopt\w*|diagnos\w*|accident|divorce\w*|graduat\w*|born)\b", re.I)
ZH_CUES = re.compile(r"死|杀|背叛|秘密|真相|成亲|结婚|怀孕|发现|被捕|逃|誓|告白|复活|失忆|决战|身世")
SPEECH_EN = re.compile(r"\b([A-Z][a-z]+) (?:said|says|asked|asks|replied|whispered|shouted|smiled|nodded|"
                       r"laughed|sighed|answered|muttered)\b")


@dataclass
class _Sentence:
    index: int
    message: DialogueMessage
    text: str      # as written
    told: str      # third person, dates resolved
    score: float


def _new_messages(data: ExtractInput) -> list[DialogueMessage]:
    new = [m for m in data.messages if m.new and m.text.strip()]
    return new or [m for m in data.messages if m.seq >= data.start_seq and m.text.strip()]


def _sentences(new: list[DialogueMessage], names: list[str], dated: str | None = None) -> list[_Sentence]:
    out = []
    for m in new:
        day = parse_day(m.date)
        quoted = False
        for s in split_sentences(m.text):
            cjk = is_cjk(s)
            # The summary is prefixed with `dated`: "last week" needs no "(the week before <that day>)".
            told = resolve_dates(third_person(s, m.name, cjk, quoted, pronouns=True), day,
                                 restate=m.date != dated)
            quoted = cjk and ends_quoted(s, quoted)
            out.append(_Sentence(len(out), m, s, told, informativeness(told, names)))
    return out


def _people(sentences: list[_Sentence], speakers: list[str], known: dict[str, str],
            labels: list[str]) -> list[str]:
    """Speakers, then recurring / speaking / titled names; short forms folded into full ones."""
    texts = [s.text for s in sentences]
    latin = latin_names(texts, [*speakers, *labels])
    joined = "\n".join(texts)
    speaking = {m.group(1) for m in SPEECH_EN.finditer(joined)}
    titled = titled_names(joined)
    found = [n for n, c in latin.most_common()
             if (c >= 2 or n in speaking or n in titled or n.casefold() in known) and n.split()[0] not in TITLES]
    found += [n for n in titled if n not in found]
    found += [n for n, _ in cjk_names(joined).most_common()]
    out: list[str] = []
    for name in [*speakers, *found]:
        full = _full_name(name, [*speakers, *found, *labels]) or name
        if full.casefold() not in {o.casefold() for o in out}:
            out.append(full)
    return out[:MAX_CHARACTERS]


def _full_name(name: str, names: list[str]) -> str | None:
    """The longer name a short form stands for: '苏姑娘' -> '苏晚晴', 'Orlov' / 'Inspector' ->
    'Dr. Nadia Orlov' / 'Inspector Calloway'; None when it is not a short form."""
    for other in names:
        if other == name or not other:
            continue
        if is_cjk(name):
            if (re.fullmatch(f".{HONORIFIC_RE}", name) and other[0] == name[0] and len(other) > 1
                    and not re.fullmatch(f".{HONORIFIC_RE}", other)):
                return other
        elif set(name.split()) < set(other.replace(".", " ").split()):
            return other
    return None


def _summary(sentences: list[_Sentence], speakers: list[str], zh: bool, date: str | None) -> str:
    """A dense summary (condense.py): each message's facts, filler dropped, date first, one cell long."""
    limit = SUMMARY_CHARS_ZH if zh else SUMMARY_CHARS
    prefix = f"[{date}] " if date else ""
    order = {m: i for i, m in enumerate(dict.fromkeys(id(s.message) for s in sentences))}
    pieces = []
    for s in sentences:
        others = short_forms([n for n in speakers if n != s.message.name])
        text = s.told if zh else compact(s.told, others)
        if text:
            worth = (s.score if s.score >= MIN_SENTENCE_SCORE else 0.0) if zh else value(text, speakers)
            pieces.append(Piece(order[id(s.message)], s.index, s.message.name, text, worth))
    return prefix + assemble(pieces, limit - len(prefix), zh)


def _type_columns(data: ExtractInput) -> dict[str, set[str]]:
    return {t.id: {c.name for c in t.columns} for t in data.types}


def _known(data: ExtractInput, type_id: str) -> dict[str, str]:
    """casefolded name -> id of the nodes of a type the overview lists."""
    return {n.label.casefold(): n.id for g in data.overview if g.type == type_id for n in g.nodes}


def answer(data: ExtractInput) -> ExtractReply:
    """One event, its characters and places, from the batch's new messages."""
    new = _new_messages(data)
    if not new:
        return ExtractReply(thought="no new text", operations=[])
    columns = _type_columns(data)
    zh = data.language == "zh"
    chars, locs = _known(data, "character"), _known(data, "location")
    labels = [n.label for g in data.overview if g.type == "character" for n in g.nodes]
    speakers = list(dict.fromkeys(m.name for m in new if m.name))
    date = next((m.date for m in new if m.date), None)
    sentences = _sentences(new, speakers, date)
    people = _people(sentences, speakers, chars, labels)
    place_names = places("\n".join(s.text for s in sentences), people=[*people, *chars])[:MAX_PLACES]
    blocked = {p.casefold() for p in place_names} | set(locs)
    people = [p for p in people if p.casefold() not in blocked] if "name" in columns.get("character", ()) else []
    ops: list[CreateOp | UpdateOp] = []
    links: list[LinkSpec] = []
    for i, name in enumerate(people):
        links.append(_character_op(ops, i, name, sentences, chars))
    for i, place in enumerate(place_names if "name" in columns.get("location", ()) else []):
        links.append(_place_op(ops, i, place, locs))
    if "summary" in columns.get("event", ()):
        ops.insert(0, _event_op(data, new, sentences, people, links, zh, columns["event"]))
    thought = (f"heuristic: {len(sentences)} sentence(s) from #{new[0].seq}-#{new[-1].seq}; "
               f"people: {', '.join(people) or '-'}; places: {', '.join(place_names) or '-'}")
    return ExtractReply(thought=thought, operations=ops)


def _character_op(ops: list, i: int, name: str, sentences: list[_Sentence], known: dict[str, str]) -> LinkSpec:
    state = None
    for s in sentences:
        for who, what in state_changes(s.text, s.message.name):
            if who.casefold() == name.casefold():
                state = third_person(what, s.message.name, is_cjk(what), pronouns=True)
    node_id = known.get(name.casefold())
    if node_id:
        if state:
            ops.append(UpdateOp(node_id=node_id, fields={"state": state}))
        return LinkSpec(target_node_id=node_id, relation="involved_in", strength=0.9)
    fields = {"name": name, **({"state": state} if state else {})}
    ops.append(CreateOp(type="character", fields=fields, ref=f"char{i}", importance=5))
    return LinkSpec(target_ref=f"char{i}", relation="involved_in", strength=0.9)


def _place_op(ops: list, i: int, place: str, known: dict[str, str]) -> LinkSpec:
    relation = "occurred_at" if i == 0 else "related"
    node_id = known.get(place.casefold())
    if node_id:
        return LinkSpec(target_node_id=node_id, relation=relation)
    ops.append(CreateOp(type="location", fields={"name": place}, ref=f"loc{i}", importance=4))
    return LinkSpec(target_ref=f"loc{i}", relation=relation)


def _event_op(data: ExtractInput, new: list[DialogueMessage], sentences: list[_Sentence],
              people: list[str], links: list[LinkSpec], zh: bool, columns: set[str]) -> CreateOp:
    date = next((m.date for m in new if m.date), None)
    summary = _summary(sentences, list(dict.fromkeys(m.name for m in new if m.name)), zh, date)
    text = "\n".join(m.text for m in new)
    cues = len(set((ZH_CUES if zh else EN_CUES).findall(text)))
    importance = min(8, 5 + cues) if cues else (4 if len(summary) < 60 else 5)
    fields = {"summary": summary}
    # Participants all named in the summary would only repeat it in every row of the block; a
    # speaker whose lines were all filler ("Wow, cool!") is not involved in what it tells.
    speakers = {m.name for m in new if m.name}
    involved = [p for p in people if p in summary or p not in speakers]
    if "participants" in columns and any(p not in summary for p in involved):
        fields["participants"] = ("、" if zh else ", ").join(involved)
    return CreateOp(type="event", fields=fields, ref="event", importance=importance, links=links)
