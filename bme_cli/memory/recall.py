"""The read path (spec §4, with the §10 fixes): pick the memories that matter and build the block.

For one query on a prebuilt RecallIndex:
 1. masks: recallable (active, plus compressed-away detail, see index.py), visible to the
    viewer (`enable_visibility`; applied everywhere: Core, hits, diffusion, scene, cross
    recall), Core (alwaysInject types and the user's pins, active; state-update events only with
    `update_events_core`), echoes (nodes whose messages all lie in the last `context_window`
    messages of the chat, which the model already sees: never injected again);
 2. retrieval: cosine against every vector (the query embedded unless given) and BM25 (user
    message weight 1, recent context 0.35); the top K of each seed the diffusion (energy =
    cosine / normalised BM25), with entity anchors from the user message (2.0) and the recent
    context (1.0), scaled by specificity, and cross recall (1.5 x strength, a hub's best K);
 3. diffusion (§4.3, over the hub-damped adjacency) and the fused score for every row;
 4. selection: the top K, or the LLM's pick (`recall_enable_llm`, a chat model that is not
    offline, and ST-BME's N < 20 or N > 200), capped at `recall_max_nodes`, the ranking used
    when the reply is empty or invalid (§10.8). Offline, the heuristic pick is skipped: on
    LoCoMo it changed answer recall by +0.002/+0.004/0.000 at 500/1000/2000 tokens, noise;
 5. scene reconstruction (limit K + 6, only injectable rows count), probabilistic recall;
 6. the block, filled by `_priority` within the budget, past the selection in order of
    `scoring.fill_scores` (the fused score without the top-K seeding cliff), quotes of the chat
    among the nodes by their own score on the same scale (excerpts.py), compressed summaries
    after their detail, rows that add no word to the query and the block last
    (budget.fit_to_budget; cells over 200 characters keep the sentences the query asks about,
    inject.query_cell), the best candidates first reranked by `[rerank]` when it is
    configured (memory/rerank.py; on failure bme's order, with a warning); reinforcement of
    the injected Recalled nodes (capped,
    index.reinforce); `graph.last_recall_result`.

What it returns (the block, its nodes and quotes, and --explain's candidates) is in recall_result.py.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Any, Iterator, Union

import numpy as np

from ..errors import InvalidReplyError, ProviderError
from ..graph.model import Graph, Node
from .context import MemoryContext
from .budget import fit_to_budget
from .diffusion import diffuse
from .excerpts import ExcerptIndex, ExcerptScores, Unit, quote_scores, ranked
from .fused import fused_scores
from .explain import explain_candidates
from .gaps import gaps as failed_ranges
from .index import RecallIndex
from .inject import bucket_of
from .lexical import search_terms, sorted_unique, tokenize, weighted_terms
from .masks import Masks, row_masks
from .query import Query
from .recall_result import Injected, Quoted, RecallResult
from .rerank import RerankNote, reranked
from .scene import reconstruct_scene
from .scoring import ScoreParts, Weights

ANCHOR_ENERGY = 2.0
CONTEXT_ANCHOR_ENERGY = 1.0
CROSS_RECALL_FACTOR = 1.5
LLM_CANDIDATES = 30
SMALL_GRAPH, MEDIUM_GRAPH = 20, 200
SCENE_EXTRA = 6
PROB_TOP, PROB_MIN_IMPORTANCE = 3, 6.0
CHUNK = 256

# Priority tiers of the budget fill (lower first); inside a tier: scoring.fill_scores descending.
TIER_PINNED, TIER_CHOSEN, TIER_REST, TIER_SUMMARY = 0, 1, 2, 3
# Quotes compete with nodes in the fill at this share of their score (tuned on LoCoMo conv-26 and
# conv-30, checked on conv-44 and conv-49: docs/quality.md).
EXCERPT_WEIGHT = 1.0


@dataclass
class _Pass:
    """The state of one recall: masks, scores, and where each row came from."""

    index: RecallIndex
    ctx: MemoryContext
    query: Query
    allowed: np.ndarray
    core: np.ndarray
    echo: np.ndarray
    parts: ScoreParts | None = None
    candidates: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    origin: dict[int, str] = field(default_factory=dict)  # row -> why it entered the selection
    dropped: dict[int, str] = field(default_factory=dict)  # row -> why it was left out
    warnings: list[str] = field(default_factory=list)
    explain: bool = False
    fill: np.ndarray | None = None  # the budget fill's order key per row (scoring.fill_scores)
    quotes: ExcerptScores | None = None
    quotable: np.ndarray | None = None  # bool per excerpt unit: may be quoted
    masks: Masks | None = None  # allowed, core, echo and what is derived from them (masks.py)

    @property
    def k(self) -> int:
        """K = max(1, recall_top_k)."""
        return max(1, self.ctx.settings.recall_top_k)


def recall(graph: Graph, index: RecallIndex, query: Query, ctx: MemoryContext, *,
           query_embedding: Any = None, budget: int, context_window: int = 0, chat_length: int | None = None,
           reinforce: bool = True, explain: bool = False,
           excerpts: ExcerptIndex | None = None) -> RecallResult:
    """Recall for one query: the block within `budget` tokens, the injected nodes and quotes
    (from `excerpts`, when given) and (explain) why.

    With reinforce=False nothing in the graph changes (batch mode, --no-reinforce). The
    probabilistic extras draw from `ctx.rng`: seed it to repeat a recall.
    """
    p = _start(graph, index, query, ctx, context_window, chat_length)
    p.explain = explain
    qv = _query_vector(p, query_embedding, excerpts)
    energy, vec, lex = _retrieve(p, qv)
    weights, now = Weights.from_settings(ctx.settings), ctx.now()
    p.parts, p.fill = fused_scores(energy, vec, lex, p.allowed, index, now, weights)
    _score_quotes(p, excerpts, qv, weights, context_window, chat_length)
    selected = _select(p)
    ranks_core = _core_exceeds(p, budget)
    counts = p.masks.counting(ranks_core)
    scene = reconstruct_scene(index, selected, limit=p.k + SCENE_EXTRA, allowed=p.allowed, counts=counts)
    for row in scene:
        p.origin.setdefault(row, "scene")
    prob = _probabilistic(p, ctx.rng, set(scene))
    prob_ids = {index.ids[r] for r in prob}
    order, note = _fill_order(p, scene, prob, excerpts)
    style = "query" if ctx.settings.query_cells else "st-bme"
    fit = fit_to_budget(order, ctx.schema, ctx.language, budget,
                        cell_cache=index.cell_cache, known=tokenize(query.text), style=style,
                        terms=frozenset(search_terms(query.text)),
                        sources=excerpts.sources if excerpts is not None else None)
    taken = [(n, "core") for n in fit.core] + [(n, "recalled") for n in fit.recalled]
    injected = [_injected(p, n, s) for n, s in taken]
    quoted = [Quoted(u, float(p.quotes.final[excerpts.row(u)]), p.quotes.of(excerpts.row(u)))
              for u in fit.quoted] if excerpts is not None and p.quotes is not None else []
    if reinforce:
        # Only injected Recalled nodes, and not the random extras (spec §4.8 fixed per §10.10).
        now = ctx.now()
        for i in injected:
            if i.section == "recalled" and i.node.id not in prob_ids:
                index.reinforce(i.node, now)
        graph.last_recall_result = [i.node.id for i in injected]
    cands = explain_candidates(p, fit, injected, scene, prob, excerpts) if explain else []
    return RecallResult(query, fit.text, fit.tokens, budget, injected, cands, p.warnings,
                        failed_ranges(graph), note, quoted)


def _start(graph: Graph, index: RecallIndex, query: Query, ctx: MemoryContext, context_window: int,
           chat_length: int | None) -> _Pass:
    length = chat_length if chat_length is not None else graph.last_processed_seq + 1
    m = row_masks(index, ctx.settings, ctx.viewer, context_window, length)
    return _Pass(index, ctx, query, m.allowed, m.core, m.echo, masks=m)


def _top(scores: np.ndarray, mask: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k highest positive scores within mask, best first (ties: lower row first)."""
    rows = np.flatnonzero(mask & (scores > 0))
    if len(rows) > k:
        rows = rows[np.argpartition(-scores[rows], k - 1)[:k]]
    return rows[np.lexsort((rows, -scores[rows]))]


def _query_vector(p: _Pass, given: Any, excerpts: ExcerptIndex | None) -> np.ndarray | None:
    if given is not None:
        return np.asarray(given, dtype=np.float32)
    emb = p.ctx.embedder
    vectors = len(p.index.emb_rows) or (excerpts is not None and len(excerpts.emb_rows))
    if emb is None or not vectors or not p.query.text:
        return None
    try:
        return np.asarray(emb.embed([p.query.text]), dtype=np.float32)[0]
    except ProviderError as e:  # recall still works from BM25 and names; say why vectors were skipped
        p.warnings.append(f"query embedding failed, vector recall skipped: {e}")
        return None


def _retrieve(p: _Pass, qv: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seeds from vectors, BM25, anchors and cross recall, diffused: (graph energy, cosine, BM25) per row."""
    index = p.index
    vec = index.cosine(qv) if qv is not None else np.zeros(index.n, np.float32)
    if qv is not None and len(index.emb_rows) and qv.shape[-1] != index.emb.shape[1]:
        p.warnings.append(f"query vector has {qv.shape[-1]} dimensions, the graph's {index.emb.shape[1]}: "
                          "vector recall skipped")
    lex = index.bm25.normalised_scores(weighted_terms(p.query.weighted_parts()))
    seeds = _seeds(p, vec, lex)
    diffused = diffuse(seeds, index.relay, blocked=~index.visible(_viewer(p)))
    energy = np.zeros(index.n, dtype=np.float64)
    rows = np.fromiter(diffused.keys(), dtype=np.int64, count=len(diffused))
    rows = rows[p.allowed[rows]] if len(rows) else rows
    energy[rows] = [diffused[r] for r in rows.tolist()]
    if p.masks.n_allowed < SMALL_GRAPH:  # ST-BME's small mode: every node is a candidate
        p.candidates = np.flatnonzero(p.allowed)
    else:
        cand = sorted_unique(np.concatenate([rows, np.fromiter(seeds.keys(), dtype=np.int64, count=len(seeds))]))
        p.candidates = cand[p.allowed[cand]] if len(cand) else cand
    return energy, vec, lex


def _seeds(p: _Pass, vec: np.ndarray, lex: np.ndarray) -> dict[int, float]:
    """Diffusion seeds (largest energy per row): the top K vector and BM25 hits, anchors, cross recall.

    Anchor energy is scaled by the anchor's specificity (index.specificity), as is what any
    node relays: naming a protagonist who is in every event is weak evidence.
    """
    index, k = p.index, p.k
    seeds: dict[int, float] = {}
    for hits, scores in ((_top(vec, p.allowed, k), vec), (_top(lex, p.allowed, k), lex)):
        for r in hits.tolist():
            seeds[r] = max(seeds.get(r, 0.0), float(scores[r]))
    found = index.anchors(p.query.anchor_text)
    anchors = [r for r in found if p.allowed[r]]
    if p.explain:
        _note_hidden(p, vec, lex, found)
    context_text = "\n".join(p.query.context) if p.query.user_message else ""
    for r in (index.anchors(context_text) if context_text else []):
        if p.allowed[r]:
            seeds[r] = max(seeds.get(r, 0.0), CONTEXT_ANCHOR_ENERGY * float(index.specificity[r]))
    for r in anchors:
        seeds[r] = max(seeds.get(r, 0.0), ANCHOR_ENERGY * float(index.specificity[r]))
    if p.ctx.settings.enable_cross_recall:
        for r, e in _cross_recall(p, anchors, vec, lex).items():
            seeds[r] = max(seeds.get(r, 0.0), e)
    return seeds


def _note_hidden(p: _Pass, vec: np.ndarray, lex: np.ndarray, anchors: list[int]) -> None:
    """For --explain: rows that would have been hits or anchors but the viewer may not see."""
    hidden = p.index.recallable & ~p.allowed
    if not hidden.any():
        return
    for r in [*_top(vec, p.index.recallable, p.k).tolist(), *_top(lex, p.index.recallable, p.k).tolist(),
              *anchors]:
        if hidden[r]:
            p.dropped[r] = "visibility"


def _viewer(p: _Pass) -> str | None:
    return p.ctx.viewer if p.ctx.settings.enable_visibility else None


def _cross_recall(p: _Pass, anchors: list[int], vec: np.ndarray, lex: np.ndarray) -> dict[int, float]:
    """Events linked to each anchor as seeds (1.5 x strength); a hub gives only its best K."""
    index, out = p.index, {}
    event_codes = [i for i, t in enumerate(index.type_names) if t == "event"]
    for a in anchors:
        sl = index.csr.row(a)
        nb, strength = index.csr.nbr[sl].astype(np.int64), index.csr.strength[sl]
        ok = np.isin(index.type_code[nb], event_codes) & p.allowed[nb]
        nb, energy = nb[ok], CROSS_RECALL_FACTOR * strength[ok]
        if len(nb) > p.k:
            # A hub's best K only: relevance to the query first (vector + BM25), then energy.
            key = 4.0 * (vec[nb] + lex[nb]) + energy
            top = np.argpartition(-key, p.k - 1)[: p.k]
            nb, energy = nb[top], energy[top]
        for r, e in zip(nb.tolist(), energy.tolist()):
            out[r] = max(out.get(r, 0.0), e)
    return out


def _ranked(p: _Pass, rows: np.ndarray) -> np.ndarray:
    """Rows by final score descending, then latest seqRange end, then row."""
    f = p.parts.final
    return rows[np.lexsort((rows, -p.index.seq_end[rows], -f[rows]))] if len(rows) else rows


def _select(p: _Pass) -> list[int]:
    """The selection before scene reconstruction: the LLM's pick, or the top K of the ranking."""
    ranked = _ranked(p, p.candidates)
    s, n_allowed = p.ctx.settings, p.masks.n_allowed
    use_llm = (s.recall_enable_llm and not getattr(p.ctx.chat, "offline", True) and len(ranked) > 0
               and (n_allowed < SMALL_GRAPH or n_allowed > MEDIUM_GRAPH))
    top = ranked[: p.k].tolist()
    if use_llm:
        picked = _llm_select(p, ranked[:LLM_CANDIDATES].tolist())
        if picked:
            for r in ranked[:LLM_CANDIDATES].tolist():
                p.dropped.setdefault(r, "llm: not chosen")
            for r in picked:
                p.origin[r] = "llm"
                p.dropped.pop(r, None)
            return picked
    for r in top:
        p.origin[r] = "top-k"
    for r in ranked[p.k:].tolist():
        p.dropped.setdefault(r, "below top-k")
    return top


def _llm_select(p: _Pass, rows: list[int]) -> list[int]:
    """The model's choice among the candidates: known ids only, in its order, at most M; [] = fall back."""
    from ..prompts.recall import RecallCandidate, RecallInput, build_recall_task  # only with a model
    index, schema = p.index, p.ctx.schema
    cands = [RecallCandidate(id=index.ids[r], type_label=(schema.get(index.type_of(r)) or {}).get("label", ""),
                             fields={k: str(v) for k, v in index.nodes[r].fields.items()
                                     if k != "visibility" and v not in (None, "")},
                             score=float(p.parts.final[r])) for r in rows]
    inp = RecallInput(recent_messages=p.query.recent_messages, user_message=p.query.user_message,
                      candidates=cands, max_nodes=max(1, p.ctx.settings.recall_max_nodes),
                      language=p.ctx.language)
    try:
        reply = p.ctx.chat.complete_json(build_recall_task(inp))
    except InvalidReplyError as e:
        p.warnings.append(f"LLM recall gave no usable reply, using the ranking: {e}")
        return []
    known = {index.ids[r]: r for r in rows}
    picked = list(dict.fromkeys(known[i] for i in reply.selected_ids if i in known))[: inp.max_nodes]
    if not picked:
        p.warnings.append("LLM recall selected nothing usable, using the ranking")
    return picked


def _core_exceeds(p: _Pass, budget: int) -> bool:
    """Would all injectable Core rows alone overflow the budget? (then Core is ranked, and counts in scenes)"""
    return p.masks.core_units() > 4 * budget


def _probabilistic(p: _Pass, rng: random.Random, selected: set[int]) -> list[int]:
    """ST-BME's random extras: up to 3 important injectable rows, each with chance p."""
    s = p.ctx.settings
    if not s.enable_prob_recall or s.prob_recall_chance <= 0:
        return []
    chance = min(0.5, max(0.01, s.prob_recall_chance))
    index = p.index
    excluded = [i for i, t in enumerate(index.type_names) if t in ("synopsis", "rule")]
    mask = (p.allowed & ~p.core & ~p.echo & (index.importance >= PROB_MIN_IMPORTANCE)
            & ~np.isin(index.type_code, excluded))
    rows = [r for r in np.flatnonzero(mask).tolist() if r not in selected]
    rows.sort(key=lambda r: (-index.importance[r], -index.seq_end[r], r))
    out = [r for r in rows[:PROB_TOP] if rng.random() < chance]
    for r in out:
        p.origin.setdefault(r, "probabilistic")
    return out


def _fill_order(p: _Pass, scene: list[int], prob: list[int], excerpts: ExcerptIndex | None
                ) -> tuple[Iterator[tuple[Union[Node, Unit], str]], RerankNote | None]:
    """The budget fill's order: `_priority`, its best candidates reranked when a reranker is set."""
    order = _priority(p, scene, prob, excerpts)
    if p.ctx.reranker is None:
        return order, None
    order, note = reranked(order, p.query.text, p.ctx.reranker, p.ctx.schema)
    if note.error:
        p.warnings.append(note.line())
    return order, note


def _priority(p: _Pass, scene: list[int], prob: list[int],
              excerpts: ExcerptIndex | None) -> Iterator[tuple[Union[Node, Unit], str]]:
    """(node, section) and (unit, "excerpts") in fill order: what was chosen (the LLM's picks and
    the probabilistic extras), then everything else eligible by fill score alone, quotes among
    them by their own score (excerpts.score, on the same scale, times EXCERPT_WEIGHT), and last
    the compressed summaries whose detail children are recallable: a summary printed in a
    200-character cell mostly repeats its first child, while the children matched on their
    own text are precise (measured on LoCoMo: +0.005 to +0.009 answer recall).

    Eligible: every Core row, and the Recalled rows with a reason to be there: the selection
    after scene reconstruction, the retrieval candidates, and any other BM25, vector or graph
    match, so the room a budget leaves is filled with the next most relevant memories. Relevance
    beats type: under a tight budget a matching event is worth more than an unrelated rule,
    and the synopsis earns its place like any other row (its cell shows the sentences the
    query asks about).
    """
    index, nodes = p.index, p.index.nodes
    injectable = p.masks.injectable
    tier = np.full(index.n, TIER_REST, dtype=np.int8)
    tier[[r for r, why in p.origin.items() if why in ("llm", "probabilistic")]] = TIER_CHOSEN
    tier[index.summary & (tier == TIER_REST)] = TIER_SUMMARY
    tier[index.pinned & p.core] = TIER_PINNED   # the user's pins go in before anything else
    recalled_rows = (p.parts.lexical > 0) | (p.parts.graph > 0) | (p.parts.vector > 0)
    recalled_rows[np.asarray(scene + prob + p.candidates.tolist(), dtype=np.int64)] = True
    eligible = (p.core | recalled_rows) & injectable
    stream = ((key, nodes[row], "core" if p.core[row] else "recalled")
              for key, row in _in_order(p, np.flatnonzero(eligible), tier))
    if excerpts is not None and p.quotes is not None and p.quotable is not None:
        final = p.quotes.final
        quotes = ((TIER_REST * 10.0 - EXCERPT_WEIGHT * float(final[u]), excerpts.units[u], "excerpts")
                  for u in ranked(p.quotes, p.quotable))
        stream = heapq.merge(stream, quotes, key=lambda t: t[0])
    for _, item, section in stream:
        yield item, section


def _in_order(p: _Pass, rows: np.ndarray, tier: np.ndarray) -> Iterator[tuple[float, int]]:
    """(key, row) by (tier, fill score desc, seq_end desc, row), sorted a chunk at a time (Core can
    be 100k rows); key = 10 * tier - fill score (scores < 2, so tiers never mix)."""
    key = tier[rows].astype(np.float64) * 10.0 - p.fill[rows]
    rest = np.arange(len(rows))
    while len(rest):
        if len(rest) > CHUNK:
            part = np.argpartition(key[rest], CHUNK - 1)
            head, rest = rest[part[:CHUNK]], rest[part[CHUNK:]]
        else:
            head, rest = rest, rest[:0]
        order = np.lexsort((rows[head], -p.index.seq_end[rows[head]], key[head]))
        yield from zip(key[head][order].tolist(), rows[head][order].tolist())


def _score_quotes(p: _Pass, excerpts: ExcerptIndex | None, qv: np.ndarray | None, weights: Weights,
                  context_window: int, chat_length: int | None) -> None:
    """Score every excerpt unit for the query (excerpts.quote_scores)."""
    if excerpts is not None and excerpts.n:
        p.quotes, p.quotable = quote_scores(excerpts, p.query, qv, weights, context_window, chat_length)


def _injected(p: _Pass, node: Node, section: str) -> Injected:
    row = p.index.row_of[node.id]
    return Injected(node, section, bucket_of(node.type), float(p.parts.final[row]), p.parts.of(row))
