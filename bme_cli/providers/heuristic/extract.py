"""The offline extraction heuristic: a deterministic stand-in for the extraction model.

From the batch's new messages (its assistant turns and the user turn before them; the older
context lines only give evidence: who recurs, who is "she") it makes:
* one event whose summary is the batch condensed into one table cell (condense.py: filler
  dropped, the sentences with the most content that fit SUMMARY_CHARS, 200, the block's
  cell limit; SUMMARY_CHARS_ZH for Chinese), first person turned into the speaker's name
  with agreement (person.py: "Rowan shakes her hand"; then "they"), a quote's first person
  into its owner's, relative dates resolved against the message date ("yesterday
  (7 May 2023)"), prefixed with the date when the chat has one; participants only when the
  summary does not name them all; importance 5, raised by strong cues (death, betrayal ...);
* characters for the speakers and for names with evidence (names.py; a name a status
  panel's cast entry lists, story/cast.py), a create for a new name (at most MAX_CHARACTERS
  new ones a batch), an update of the listed node when a state change is stated about that person
  (states.py: "Mira was injured", "林风受了重伤"; he/she resolved, or no state);
* locations from place phrases (places.py: "the Silver Harbor", "in Paris", "来到青云山"), up to
  MAX_PLACES, and the place a status panel gives as the scene's (story/scene.py), first;
* rules and plot threads where a sentence states them (rules.py), a thread completed when
  a later batch says its object was reached;
* links: the event involved_in each character, occurred_at the first place.

Limits: no abstraction (sentences are kept, not rewritten), no translation, English and
Chinese only, names by surface evidence (a name used once with no cue is missed).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ...prompts.extract import CreateOp, DialogueMessage, ExtractInput, ExtractReply, LinkSpec, UpdateOp
from ...sentences import balance_quotes
from .condense import Piece, assemble, compact, short_forms, value
from .gazetteer import is_known_place
from .names import TITLES, is_person_speaker, latin_people, with_title
from .zh_names import HONORIFIC, NAME_CHAR, SURNAME_RE, cjk_names, inside_dotted, ja_family_of
from .nlp import EN_STOPWORDS, clean_text, informativeness, is_cjk, parse_day, resolve_dates, split_sentences
from .person import Quote, local_quotes, message_tense, quotes_of, spoken_to, third_person
from .places import path_places, places
from .zh_places import zh_building
from .rules import completes, is_rule, rule_title, threads
from .states import Referents, state_changes

SUMMARY_CHARS = 200     # the block's cell limit (spec §5): a longer summary would lose its tail
SUMMARY_CHARS_ZH = 160
MIN_SENTENCE_SCORE = 0.8  # Chinese: sentences below this informativeness are filler ("好。")
MAX_CHARACTERS = 7         # new characters a batch may add
MAX_LINKED_CHARACTERS = 9  # characters one event is linked to, stored ones included
MAX_PLACES = 6
MAX_RULES = 2
MAX_THREADS = 1
SAME_RULE = 0.3  # overlap above which a rule restates one already kept (unrelated ones stay under 0.2)
EN_CUES = re.compile(r"\b(died|dead|killed|murder\w*|betray\w*|secret\w*|reveal\w*|married|engaged|"
                     r"pregnant|discover\w*|captured|escaped|war|attack\w*|confess\w*|promise\w*|"
                     r"adopt\w*|diagnos\w*|accident|divorce\w*|graduat\w*|born)\b", re.I)
ZH_CUES = re.compile(r"死|杀|背叛|秘密|真相|成亲|结婚|怀孕|发现|被捕|逃|誓|告白|复活|失忆|决战|身世")


@dataclass
class _Sentence:
    index: int
    message: DialogueMessage
    text: str      # as written
    told: str      # third person, dates resolved
    score: float
    quotes: list[Quote]
    new: bool = True


def addressees(messages: list[DialogueMessage], user_name: str | None) -> dict[str, str | None]:
    """Whom each role's "you" names in a memory: the character's is the user (the header's user
    name, else the one user speaker). The user's "you" is the character, the model the memory is
    injected into, who reads it as itself: it stays."""
    users = {m.name for m in messages if m.role == "user" and is_person_speaker(m.name)}
    user = user_name if user_name and is_person_speaker(user_name) else (next(iter(users)) if len(users) == 1 else None)
    return {"assistant": user, "user": None}


def _sentences(messages: list[DialogueMessage], names: list[str], dated: str | None = None,
               you_of: dict[str, str | None] | None = None) -> list[_Sentence]:
    out: list[_Sentence] = []
    for m in messages:
        if not m.new:
            # Context lines are read for who recurs and whom "she" means (`_states`, places'
            # context): their text alone; only the new ones are told, scored and quoted.
            out.extend(_Sentence(len(out) + i, m, s, s, 0.0, [], False) for i, s in enumerate(split_sentences(m.text)))
            continue
        to = (you_of or {}).get(m.role)
        day = parse_day(m.date)
        clean = clean_text(m.text)
        quotes = quotes_of(clean, [*names, m.name])
        tense = message_tense(clean)
        me = m.name if is_person_speaker(m.name) else None   # a narrator's "my Bess" is no one's yet
        pos = 0
        for s in split_sentences(m.text):
            at = clean.find(s, pos)
            local = local_quotes(quotes, at, len(s)) if at >= 0 else []
            pos = at + len(s) if at >= 0 else pos
            # The summary is prefixed with `dated`: "last week" needs no "(the week before <that day>)".
            told = resolve_dates(third_person(s, me, is_cjk(s), pronouns=True, tense=tense, quotes=local,
                                              addressee=spoken_to(s, names, to)), day, restate=m.date != dated)
            out.append(_Sentence(len(out), m, s, told, informativeness(told, names), local, m.new))
    return out


def _people(batch: list[DialogueMessage], speakers: list[str], labels: list[str],
            chat_names: list[str] = ()) -> list[str]:
    """Speakers, then names with evidence; short forms folded into full ones (also into the
    chat's user and character names: 江老师 is the user 江予安 before the user has spoken).
    A name a status panel lists as one of the story's people (好感度：青黛 60) is evidence where
    the new story text names it."""
    texts = [t for m in batch for t in split_sentences(m.text)]
    new_text = "\n".join(m.text for m in batch if m.new)
    listed = list(dict.fromkeys(n for m in batch for n in m.panel_people if is_person_speaker(n)))
    found = [n for n in latin_people(texts, new_text, [*labels, *speakers, *(n for n in listed if not is_cjk(n))])
             if n.split()[0] not in TITLES]
    if re.search(r"[\u4e00-\u9fff]", new_text):
        # most named in the new text first: the cap below keeps who this batch is about
        named = [n for n, _ in cjk_names("\n".join(texts)).most_common() if n in new_text and not zh_building(n)]
        found += sorted(named, key=lambda n: -new_text.count(n))
        for n in (_listed_name(n) for n in listed if is_cjk(n)):
            # 老太太 listed, 沈老太太 stored: the stored one, not a second person
            if n and n in new_text and not any(n in f or f in n for f in found) \
                    and not any(n in f and n != f for f in [*labels, *chat_names]):
                found.append(n)
    # 雷斯 of 加雷斯团长, where the story knows 加雷斯·布莱克伍德: a piece of a foreign name
    dotted = [n for n in [*labels, *chat_names, *found] if "·" in n]
    found = [n for n in found if not (dotted and is_cjk(n) and inside_dotted(n, dotted, new_text))]
    out: list[str] = []
    everyone = [*speakers, *found, *labels, *chat_names]
    for name in [*speakers, *found]:
        # a surname the text only titles, and no fuller name has: as the text titles it ("Miss Carter")
        full = _full_name(name, everyone) or (
            with_title(name, new_text) if name not in speakers and name not in labels else name)
        if "·" in full and full != name:
            full = _full_name(full, everyone) or full   # 格林 -> 伊芙·格林 -> the 伊芙 who speaks
        if full.casefold() not in {o.casefold() for o in out}:
            out.append(full)
    # The cap is on names not yet stored (the weakest evidence comes last); a court scene may
    # well name more stored characters than that, and each is linked to the event.
    stored = {n.casefold() for n in [*labels, *chat_names]}
    new = [n for n in out if n.casefold() not in stored][:MAX_CHARACTERS]
    return [n for n in out if n.casefold() in stored or n in new][:MAX_LINKED_CHARACTERS]


# A rank in a household: an order of birth, then young master, young mistress, concubine.
_RANK = re.compile(r"[大二三四五六七八九十](?:少爷|少奶奶|少|小姐|姨太|姨娘|太太|奶奶)")


def _listed_name(entry: str) -> str | None:
    """The name in a panel's cast entry: 马赛尔探长 is 马赛尔, 二姨太金凤仪 and 少帅段承霖 are 金凤仪 and
    段承霖 (a title before a surname and a given name); None when no name of two to four
    characters is left."""
    if _RANK.fullmatch(entry):
        return None   # 二少爷, 大少奶奶, 三姨太: a rank in the household, no name inside it
    titled = re.fullmatch(f"(.{{2,4}}?){HONORIFIC}", entry)
    if titled:
        return titled.group(1)
    if len(entry) <= 4:
        return entry
    named = re.search(f"(?:{SURNAME_RE}){NAME_CHAR}{{1,2}}$", entry)
    return named.group(0) if named else None


def _full_name(name: str, names: list[str]) -> str | None:
    """The longer name a short form stands for: '苏姑娘' -> '苏晚晴', '小夏' / '老陆' -> '闻知夏' /
    '陆沉' (when one name alone fits), 'Orlov' / 'Mel' -> 'Dr. Nadia Orlov' / 'Melanie'; None
    when it is not a short form."""
    if is_cjk(name):
        return _full_cjk(name, [n for n in names if n and n != name and is_cjk(n)])
    for other in names:
        if other and other != name and (_untitled(name) < _untitled(other)
                                        or name in short_forms([other])[1:]):
            return other
    return None


def _untitled(name: str) -> set[str]:
    """A Latin name's words without its titles: "Brother Mercer" is {"Mercer"}, a form of "Ike Mercer"."""
    words = set(name.replace(".", " ").split())
    return (words - TITLES) or words


def _full_cjk(name: str, others: list[str]) -> str | None:
    # 伊芙·格林 where 伊芙 speaks or is stored: that person (by the given name: a surname is a family's)
    if "·" in name:
        return next((o for o in others if o == name.split("·")[0]), None)
    family = ja_family_of(name, others)   # 神崎 alone, where the story knows 神崎莲
    if family:
        return family
    # 莱昂哈德 or 布朗 alone: the one dotted name it is a part of (瓦尔登, shared by two, is no one's)
    dotted = [o for o in others if "·" in o and name in o.split("·")]
    if len(dotted) == 1:
        return dotted[0]
    short = re.fullmatch(f"((?:{SURNAME_RE})){HONORIFIC}", name)
    if short:
        return next((o for o in others if o.startswith(short.group(1)) and len(o) > len(short.group(1))
                     and not re.fullmatch(f"(?:{SURNAME_RE}){HONORIFIC}", o)), None)
    familiar = re.fullmatch(f"[小阿老]({NAME_CHAR})", name)
    if not familiar:
        return None
    # 老陆: the surname; 小夏, 阿鸢: the last character of the given name
    x = familiar.group(1)
    fits = [o for o in dict.fromkeys(others) if 2 <= len(o) <= 4 and not re.match("[小阿老]", o)
            and (o[0] == x and name[0] == "老" or o[-1] == x and o[0] != x)]
    return fits[0] if len(fits) == 1 else None


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
            # A narrator or system speaker is no one who said it: "Narrator: The gate is shut." misleads.
            speaker = s.message.name if is_person_speaker(s.message.name) else None
            pieces.append(Piece(order[id(s.message)], s.index, speaker, text, worth))
    return prefix + balance_quotes(assemble(pieces, limit - len(prefix), zh))


def _known(data: ExtractInput, type_id: str) -> dict[str, str]:
    """casefolded label -> id of the nodes of a type the overview lists."""
    return {n.label.casefold(): n.id for g in data.overview if g.type == type_id for n in g.nodes}


def answer(data: ExtractInput) -> ExtractReply:
    """One event, its characters, places, rules and threads, from the batch's new messages."""
    new = [m for m in data.messages if m.new and m.text.strip()] or \
        [m for m in data.messages if m.seq >= data.start_seq and m.text.strip()]
    if not new:
        return ExtractReply(thought="no new text", operations=[])
    new_ids = {id(m) for m in new}
    # Older context lines give evidence (who recurs, who "she" is); only the new ones are extracted.
    batch = [m.model_copy(update={"new": id(m) in new_ids}) for m in data.messages
             if m.text.strip() and (id(m) in new_ids or m.seq < new[0].seq)]
    columns = {t.id: {c.name for c in t.columns} for t in data.types}
    zh = data.language == "zh"
    chars, locs = _known(data, "character"), _known(data, "location")
    # Every stored name, not only the overview's last 10: who is a person, which place is known.
    labels = list(dict.fromkeys([*data.names.get("character", ()),
                                 *(n.label for g in data.overview if g.type == "character" for n in g.nodes)]))
    speakers = list(dict.fromkeys(m.name for m in new if is_person_speaker(m.name)))
    date = next((m.date for m in new if m.date), None)
    # Everyone who speaks in the batch's context too: "Lady Ashcombe" is the Lady Cecily Ashcombe who spoke.
    voices = list(dict.fromkeys(m.name for m in batch if is_person_speaker(m.name)))
    chat_names = [n for n in (data.user_name, data.character_name) if n and is_person_speaker(n)]
    people = _people(batch, speakers, [*labels, *voices], chat_names)
    every = _sentences(batch, [*people, *labels], date, addressees(data.messages, data.user_name))
    sentences = [s for s in every if s.new]
    known_places = list(dict.fromkeys([*data.names.get("location", ()),
                                       *(n.label for g in data.overview if g.type == "location" for n in g.nodes)]))
    place_names = places("\n".join(s.text for s in sentences), people=[*people, *labels], known=known_places,
                         context="\n".join(s.text for s in every if not s.new))[:MAX_PLACES]
    # Where a status panel says the scene now is: the event's place, beside those the text names.
    paths = [path for m in new for path in m.panel_places]
    stated = path_places(paths[-1], [*people, *labels]) if paths else []
    scene = places("", people=[*people, *labels], known=[*known_places, *place_names], stated=stated) if stated else []
    place_names = [*scene, *(p for p in place_names if p not in scene)]
    blocked = {p.casefold() for p in [*place_names, *known_places]}
    seen = "\n".join(s.text for s in every)
    # A listed place ("Boston people always think") is no one, unless someone of that name speaks.
    people = [p for p in people if p.casefold() not in blocked and not _inside_places(p, place_names, seen)
              and (p in speakers or p in voices or p in labels or not is_known_place(p))] \
        if "name" in columns.get("character", ()) else []
    ops: list[CreateOp | UpdateOp] = []
    links: list[LinkSpec] = []
    states = _states(every, people, addressees(data.messages, data.user_name))
    for i, name in enumerate(people):
        links.append(_character_op(ops, i, name, states.get(name), chars))
    for i, place in enumerate(place_names if "name" in columns.get("location", ()) else []):
        links.append(_place_op(ops, i, place, locs))
    _rule_ops(ops, data, sentences, place_names, zh, columns)
    if "summary" in columns.get("event", ()):
        ops.insert(0, _event_op(new, sentences, people, links, zh, columns["event"]))
    thought = (f"heuristic: {len(sentences)} sentence(s) from #{new[0].seq}-#{new[-1].seq}; "
               f"people: {', '.join(people) or '-'}; places: {', '.join(place_names) or '-'}")
    return ExtractReply(thought=thought, operations=ops)


def _inside_places(name: str, place_names: list[str], text: str) -> bool:
    """Whether every mention of `name` in the text is part of a place's name: "Natural
    Philosophy" of the Ravensworth Museum of Natural Philosophy is no one."""
    longer = [p for p in place_names if name in p and name != p]
    if not longer:
        return False
    inside = {m.start() + p.index(name) for p in longer for m in re.finditer(re.escape(p), text)}
    return all(m.start() in inside for m in re.finditer(re.escape(name), text))


def _states(sentences: list[_Sentence], people: list[str], you_of: dict[str, str | None]) -> dict[str, str]:
    """The latest state each person is given in the new sentences (he/she resolved on all of them;
    "you" is whom the sentence speaks to, see `addressees`)."""
    refs = Referents(people)
    out: dict[str, str] = {}
    last = None
    for s in sentences:
        speaker = s.message.name
        if s.message is not last:
            refs.start_message()
            last = s.message
        if s.new:
            owners = {q.start: q.owner for q in s.quotes if q.owner}
            to = spoken_to(s.text, people, you_of.get(s.message.role))
            for who, what in state_changes(s.text, speaker, people, refs, owners, to):
                match = next((p for p in people if p.casefold() == who.casefold()), None)
                if match:
                    out[match] = third_person(what, speaker, is_cjk(what))
        refs.read(s.text, speaker, narrator=s.message.role == "assistant")
    return out


def _character_op(ops: list, i: int, name: str, state: str | None, known: dict[str, str]) -> LinkSpec:
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


def _overlap(a: str, b: str) -> float:
    """Shared content (English words, Chinese character pairs) over the smaller text's."""
    def terms(x: str) -> set[str]:
        cjk = re.findall(r"[\u4e00-\u9fff]", x)
        return {w for w in re.findall(r"[a-z0-9']+", x.lower()) if w not in EN_STOPWORDS} | \
            {p + q for p, q in zip(cjk, cjk[1:])}
    ta, tb = terms(a), terms(b)
    return len(ta & tb) / min(len(ta), len(tb)) if ta and tb else 0.0


def _rule_ops(ops: list, data: ExtractInput, sentences: list[_Sentence], place_names: list[str],
              zh: bool, columns: dict[str, set[str]]) -> None:
    """Rules and threads stated in the new sentences; threads of the overview completed."""
    seen = [f"{n.label} {n.detail}" for g in data.overview if g.type in ("rule", "thread") for n in g.nodes]
    rules = 0
    if {"title", "constraint"} <= columns.get("rule", set()):
        for s in sentences:
            if rules < MAX_RULES and is_rule(s.text, zh) and not any(_overlap(s.told, x) >= SAME_RULE for x in seen):
                scope = next((p for p in place_names if p in s.text), "")
                fields = {"title": rule_title(s.told, zh), "constraint": s.told[:300], "status": "active",
                          **({"scope": scope} if scope else {})}
                ops.append(CreateOp(type="rule", fields=fields, ref=f"rule{rules}", importance=6))
                seen.append(s.told)
                rules += 1
    if "title" not in columns.get("thread", set()):
        return
    open_threads = [n for g in data.overview if g.type == "thread" for n in g.nodes
                    if not re.search(r"completed|abandoned|完成|放弃", n.detail)]
    for n in open_threads:
        key = re.sub(r"^(?:find|reach|rescue|save|free|bring|get|recover|retrieve|stop|open)\s+|^[去找救寻夺取拿查前]+", "", n.label)
        done = next((s for s in sentences for k in _keys(key) if completes(s.text, k, zh)), None)
        if done:
            ops.append(UpdateOp(node_id=n.id, fields={"status": "completed", "summary": done.told[:300]}))
    made = 0
    for s in sentences:
        for t in threads(s.text, zh):
            if made < MAX_THREADS and not any(t.key.casefold() in x.casefold() for x in seen):
                ops.append(CreateOp(type="thread", fields={"title": t.title, "summary": s.told[:300],
                                                           "status": "active"}, ref=f"thread{made}", importance=6))
                seen.append(t.title)
                made += 1


def _keys(label: str) -> list[str]:
    """The words a thread's completion must name: its capitalised run, else its object."""
    m = re.findall(r"[A-Z][a-z'’]+(?: (?:of )?[A-Z][a-z'’]+)*", label)
    return m or [label]


def _event_op(new: list[DialogueMessage], sentences: list[_Sentence], people: list[str],
              links: list[LinkSpec], zh: bool, columns: set[str]) -> CreateOp:
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
