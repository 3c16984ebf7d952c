"""run_search: one search, stage by stage, in three statements.

1. plan (_plan): the query's terms and their weights from the kept statistics (fulltext: the
   first statement), the query vector, dates the query names (timehints; a month named without a
   year is read over the years the tenant's memories span: one more statement for such a query),
   and the candidate subqueries: the best text matches and nearest vectors in scope, and the best
   of those written within the named dates;
2. candidates (sql.fetch_candidates: the second statement): every candidate scored on full text,
   with its embedding. Hybrid search, when no other search is running in the process, embeds the
   query in a thread meanwhile and fetches the text side's candidates first, the vector side's in
   a statement of their own once the vector is in, on a second connection at once where a pool
   gives one (_candidates; weights.EMBED_ALONGSIDE);
3. scores (_rank): vector scores (a candidate split into sentences scores the higher of its own
   cosine and its best sentence's: sql.best_sentences, a statement when some candidate is split),
   fusion (fusion; against the feedback-moved query vector for
   hybrid search), the time-hint bonus, the order; summaries give their place to their messages,
   and hybrid search re-ranks (rerank: MMR when on), on the vectors
   in hand (vectors);
4. hits: near-duplicates dropped, the last places to conversations not yet listed (rerank), their
   result rows read (sql.load_rows: the third statement); what it returns is reinforced (access
   counts, written in batches).
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.utils import timezone

from retrieval.embedders import get_embedder
from retrieval.query_embedding import embed_query, embed_query_soon, query_model_ready
from retrieval.search import ranking, weights
from retrieval.search import sql as search_sql
from retrieval.search.current import facts_first
from retrieval.search.explain import Trace
from retrieval.search.fulltext import TextQuery, build_text_query, text_source
from retrieval.search.plan import plan_search
from retrieval.search.regex import regex_source
from retrieval.search.relevance import Floor, floor_of, with_ranked_query
from retrieval.search.request import (
    DEFAULT_HITS_PER_SESSION,
    LITERAL_MODES,
    TEXT_MODES,
    Candidate,
    SearchHit,
    SearchPlan,
    SearchRequest,
    validate,
)
from retrieval.search.rerank import (
    conversation_evidence,
    conversation_words,
    cover_conversations,
    dedup,
    newer_first,
    top_sessions,
    with_words,
)
from retrieval.search.sql import (
    CandidatePool,
    Source,
    best_sentences,
    exact_source,
    fetch_candidates,
    load_rows,
    reinforce,
    vector_source,
)
from retrieval.search.statements import apart, apart_possible
from retrieval.search.timehints import TimeHint, data_years, hint_where, time_hints
from retrieval.search.vectors import as_halfvec
from retrieval.vectors import halfvec_text


@dataclass
class Plan:
    """The candidate subqueries and what the ranking needs of the query."""

    sources: list[Source]
    vector: np.ndarray | None = None  # the query vector as halfvec holds it (float16 precision)
    text_query: TextQuery | None = None
    hints: list[TimeHint] = field(default_factory=list)
    pending: Future[list[float]] | None = None  # the query vector while it is being computed
    limit: int = 0  # candidates per subquery
    narrow: Source | None = None  # the condition the named dates put on a chunk (hint_where)
    apart: bool = False  # the vector side on a connection of its own (statements.apart_possible)


def hybrid_search(*, tenant_id: int, query: str = "", **options: Any) -> list[SearchHit]:
    """Search one tenant's memory without HTTP. Options are SearchRequest's fields."""
    return run_search(SearchRequest(tenant_id=tenant_id, query=query, **options))


class _InFlight:
    """Searches running in this process (web threads): the query is embedded beside the text
    side's SQL only when no other search is running here. Under load the cores are busy anyway,
    and the split costs a statement (about a millisecond of CPU, client and server)."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> int:
        with self._lock:
            self.count += 1
            return self.count

    def __exit__(self, *_: object) -> None:
        with self._lock:
            self.count -= 1


in_flight = _InFlight()


def run_search(req: SearchRequest, search_plan: SearchPlan | None = None) -> list[SearchHit]:
    """One search. `search_plan` is the request's, when the caller already made it (context
    assembly reads the same scope); otherwise it is made here, once."""
    with in_flight as running:
        return _run_search(req, search_plan, alone=running == 1)


def _run_search(
    req: SearchRequest, search_plan: SearchPlan | None, *, alone: bool
) -> list[SearchHit]:
    validate(req)
    req = with_ranked_query(req)
    search_plan = search_plan or plan_search(req)
    model = get_embedder().name
    plan = _plan(req, search_plan, model, alone)
    pool = _candidates(req, plan, search_plan, model)
    if pool is None or not pool.candidates:
        return []
    if plan.vector is not None and weights.SENTENCES:
        pool.vectors.sentences = best_sentences(
            list(pool.candidates.values()), pool.vectors, plan.vector
        )
    vec = pool.vectors.cosines(plan.vector) if plan.vector is not None else {}
    trace = Trace(req) if req.explain else Trace.off()
    order, ranked, similarities = ranking.rank(req, plan.vector, plan.hints, pool, vec, trace)
    floor = floor_of(plan.text_query, vec, order, pool.said)
    unfloored, ranked = ranked, above_floor(req, ranked, vec, pool.txt, floor)
    trace.ranks("floor", unfloored, ranked)
    if req.group_by == "session":
        return _by_session(req, pool, plan, order, ranked, vec, trace, model, floor)
    # Dedup and coverage choose among every candidate, as with no floor, and the floor then takes
    # out what is not about the query, its places going to admitted candidates in rank order
    # (unless the admitted fill the page: Floor.listed): on
    # the floored list alone, coverage measured the conversations' evidence over fewer results
    # and moved up others, pushing out an admitted answer (cosine 0.67) that ranked ninth.
    head = unfloored[: 3 * req.top_k]
    kept = dedup(unfloored, ranking.near_pairs(head, pool, similarities), 3 * req.top_k)
    trace.ranks("dedup", unfloored, kept)
    coverage = weights.COVERAGE if ranking.reranks(req) else 1.0
    evidence, words = (
        _evidence(unfloored, order, pool, plan.text_query if _weighs_words(req) else None)
        if coverage < 1.0
        else (None, False)
    )
    covered = cover_conversations(
        kept, req.top_k, coverage, order, weights.COVERAGE_FLOOR, evidence
    )
    if len(ranked) < len(unfloored):
        floored = admitted_first(covered, kept, ranked, req.top_k)
        covered = floored if req.min_cosine is not None else floor.listed(covered, floored)
    trace.ranks("coverage", kept, covered, evidence, words)
    if ranking.reranks(req) and weights.NEWER_FIRST > 0.0:  # knowledge updates (off by default)
        before, (covered, order) = (
            covered,
            newer_first(
                covered,
                dict(order),
                pool.vectors.pairs([c.pk for c in covered]),
                weights.NEWER_FIRST,
                weights.NEWER_FIRST_COSINE,
            ),
        )
        trace.ranks("newer_first", before, covered)
    worded = {c.pk for c in covered if pool.txt.get(c.pk, 0.0) > 0.0}
    relevant = {c.pk for c in covered if floor.admits(c.pk, pool.txt.get(c.pk), vec.get(c.pk))}
    before, covered = covered, facts_first(covered, order, relevant, worded)
    trace.ranks("facts_first", before, covered)
    return _hits(req, covered, order, pool, vec, trace, model, floor)


def above_floor(
    req: SearchRequest,
    ranked: list[Candidate],
    vec: dict[int, float],
    txt: dict[int, float],
    floor: Floor,
) -> list[Candidate]:
    """What search lists of the ranked candidates: a request's min_cosine is its own floor as
    written (nothing less close in meaning, words or not); otherwise a query's results are those
    that the relevance floor admits (retrieval.search.relevance, one rule for search and context),
    so that a query about nothing stored lists nothing rather than the least unrelated memories.
    Only hybrid search weighs both: text modes list word matches anyway, vector mode the nearest
    in meaning as asked (its floor is min_cosine), and a search without query text (a query
    vector alone) has no words to match."""
    if req.min_cosine is not None:
        return [c for c in ranked if vec.get(c.pk, -1.0) >= req.min_cosine]
    if req.mode != "hybrid" or not req.query.strip() or weights.RELEVANCE_MIN_COSINE <= -1.0:
        return ranked
    return [c for c in ranked if floor.admits(c.pk, txt.get(c.pk), vec.get(c.pk))]


def admitted_first(
    covered: list[Candidate], kept: list[Candidate], admitted: list[Candidate], top_k: int
) -> list[Candidate]:
    """What coverage chose that the floor admits, then the other admitted candidates of `kept`
    in rank order, up to top_k."""
    ok = {c.pk for c in admitted}
    chosen = [c for c in covered if c.pk in ok]
    taken = {c.pk for c in chosen}
    return chosen + [c for c in kept if c.pk in ok and c.pk not in taken][: top_k - len(chosen)]


def _hits(
    req: SearchRequest,
    kept: list[Candidate],
    order: dict[int, float],
    pool: CandidatePool,
    vec: dict[int, float],
    trace: Trace,
    model: str,
    floor: Floor,
    session_scores: dict[int, float] | None = None,
) -> list[SearchHit]:
    """The kept candidates as hits, with their result rows (one statement), explained when asked
    and reinforced unless an operator is looking. Each says whether the relevance floor admits it
    (what context injects)."""
    rows = load_rows(kept, model)
    hits = [
        SearchHit(
            rows[c.pk],
            order[c.pk],
            vec.get(c.pk),
            pool.txt.get(c.pk),
            session_score=None if session_scores is None else session_scores[c.session_id or 0],
            relevant=floor.admits(c.pk, pool.txt.get(c.pk), vec.get(c.pk)),
        )
        for c in kept
        if c.pk in rows
    ]
    for rank, hit in enumerate(hits, start=1):
        hit.explain = trace.explain(hit.chunk.pk, hit.score, rank)
    if req.counts_as_use:
        reinforce([h.chunk.pk for h in hits])
    return hits


def _by_session(
    req: SearchRequest,
    pool: CandidatePool,
    plan: Plan,
    order: dict[int, float],
    ranked: list[Candidate],
    vec: dict[int, float],
    trace: Trace,
    model: str,
    floor: Floor,
) -> list[SearchHit]:
    """group_by "session": the top_k conversations in coverage's order of evidence, each with its
    best hits_per_session results (rerank.top_sessions), session by session."""
    evidence, _ = _evidence(ranked, order, pool, plan.text_query if _weighs_words(req) else None)
    groups = top_sessions(
        ranked, order, evidence, req.top_k, req.hits_per_session or DEFAULT_HITS_PER_SESSION
    )
    kept = [c for _, _, members in groups for c in members]
    return _hits(
        req,
        kept,
        order,
        pool,
        vec,
        trace,
        model,
        floor,
        {session: score for session, score, _ in groups},
    )


def _evidence(
    ranked: list[Candidate], order: dict[int, float], pool: CandidatePool, tq: TextQuery | None
) -> tuple[dict[int, float] | None, bool]:
    """The order coverage lists unlisted conversations in: the p-norm of their messages' scores,
    blended with the query words they say across messages when the candidate statement reported
    them (_weighs_words), and whether it was; None (by their best result) when the norm is 0."""
    norm = weights.COVERAGE_NORM
    if norm <= 0.0:
        return None, False
    evidence = conversation_evidence(ranked, order, norm)
    if not pool.said or tq is None:
        return evidence, False
    words = conversation_words(ranked, pool.said, [idf for _, idf in tq.terms])
    return with_words(evidence, words, weights.COVERAGE_WORDS), True


def _plan(req: SearchRequest, search_plan: SearchPlan, model: str, alone: bool) -> Plan:
    where, params = search_plan.where
    # the newest matches (grouped: enough of them for top_k conversations)
    if req.mode in LITERAL_MODES:
        rows = (
            req.top_k
            if req.group_by is None
            else 3 * req.top_k * (req.hits_per_session or DEFAULT_HITS_PER_SESSION)
        )
        if req.mode == "exact":
            return Plan([exact_source(req, where, params, rows)])
        return Plan(regex_source(req, where, params, rows))
    limit = max(weights.CANDIDATES, req.top_k * 3)
    has_text = bool(req.query.strip())
    wants_text = has_text and req.mode in (*TEXT_MODES, "hybrid")
    vector: np.ndarray | None = None
    pending: Future[list[float]] | None = None
    # While the query model is being made (a first start), a hybrid search goes by its words.
    words_only = (
        req.mode == "hybrid"
        and wants_text
        and req.query_embedding is None
        and not query_model_ready()
    )
    apart = False
    if req.mode in ("vector", "hybrid") and not words_only:
        apart = wants_text and alone and apart_possible()
        if req.query_embedding is not None and apart:
            # the vector is in: its side runs beside the text side's at once (_candidates)
            pending = Future()
            pending.set_result(list(req.query_embedding))
        elif req.query_embedding is not None:
            vector = as_halfvec(req.query_embedding)
        elif wants_text and alone and weights.EMBED_ALONGSIDE:
            pending = embed_query_soon(req.query)  # computed while the text side's SQL runs
        else:
            vector = as_halfvec(embed_query(req.query))
    tq = (
        build_text_query(req, search_plan, with_vectors=vector is not None or pending is not None)
        if wants_text
        else None
    )
    hints = _query_time_hints(req) if has_text else []
    narrow = _hint_narrow(req, hints)
    sources = _text_sources(req, tq, search_plan, limit, narrow) if tq is not None else []
    if vector is not None:
        sources = _vector_sources(vector, model, search_plan, limit, narrow) + sources
    return Plan(sources, vector, tq, hints, pending, limit, narrow, apart)


def _hint_narrow(req: SearchRequest, hints: list[TimeHint]) -> Source | None:
    """The condition the dates a query names put on a chunk; None when it names none, or names
    a month without a year in a tenant with no memories yet. Such a month is read as ranges over
    the years the tenant's memories span (TimeHint.sql)."""
    if not hints:
        return None
    if all(hint.start is not None for hint in hints):
        return hint_where(hints)
    years = data_years(req.tenant_id)
    return hint_where(hints, years) if years is not None else None


def _candidates(
    req: SearchRequest, plan: Plan, search_plan: SearchPlan, model: str
) -> CandidatePool | None:
    """The candidate statement. While the query vector is still being computed, the text side's
    candidates are fetched, and the vector side's once it is in: two statements, the same
    candidates and scores as one, the query embedding's time no longer added to the SQL's. Where
    a pool gives a second connection (statements.apart_possible), the vector side's statement runs
    on it as soon as the vector is in, while the text side's runs on this thread's: the search
    waits for the slower of the two, not for both."""
    early = None
    options = {"relevance": _relevance_term(req), "now": req.as_of, "with_said": _says_words(req)}
    if plan.pending is not None:
        pending = plan.pending

        def vector_side() -> tuple[np.ndarray, CandidatePool]:
            vector = as_halfvec(pending.result())
            sources = _vector_sources(vector, model, search_plan, plan.limit, plan.narrow)
            return vector, fetch_candidates(
                sources, model, plan.text_query, vector_search=True, **options
            )

        side = apart(vector_side) if plan.apart else None
        if plan.sources:
            early = fetch_candidates(plan.sources, model, plan.text_query, **options)
        plan.vector, pool = side.result() if side is not None else vector_side()
        return pool if early is None else early.merged(pool)
    if not plan.sources:
        return early
    pool = fetch_candidates(
        plan.sources, model, plan.text_query, vector_search=plan.vector is not None, **options
    )
    return pool if early is None else early.merged(pool)


def _vector_sources(
    vector: np.ndarray, model: str, search_plan: SearchPlan, limit: int, narrow: Source | None
) -> list[Source]:
    """The nearest vectors in the plan's scope and, when the query
    names dates, the nearest written within them (`narrow`): the preference for those dates
    (timehints) can only lift what was fetched. Each is searched exactly when it holds few rows
    (sql.vector_source): the scope by its kept size, the dates by a count that stops at the
    threshold. A filtered HNSW walk for dates that few memories have (or none: "in June" when
    nothing was said in June) visits thousands of rows to find them (~95 ms at 100k chunks)."""
    text = halfvec_text(vector)
    scope = search_plan.where
    sources = [
        vector_source(text, model, *scope, limit, search_plan.scope_size, owner_parts(search_plan))
    ]
    if narrow is not None:
        within = _and(scope, narrow)
        sources.append(
            vector_source(
                text,
                model,
                *within,
                limit // 2,
                _bounded_count(within),
                owner_parts(search_plan, narrow),
            )
        )
    return sources


def _bounded_count(scope: Source) -> Source:
    """A scalar subquery: the chunks in `scope`, counted up to the exact-search threshold only
    (the index on (tenant, created_at) reads a range of dates)."""
    where, params = scope
    return (
        f"SELECT count(*) FROM (SELECT 1 FROM retrieval_chunk c WHERE {where} LIMIT %s) n",
        [*params, search_sql.exact_below()],
    )


def _text_sources(
    req: SearchRequest, tq: TextQuery, search_plan: SearchPlan, limit: int, narrow: Source | None
) -> list[Source]:
    """The best text matches in the plan's scope and, when the query names dates, within them
    (`narrow`, half as many)."""
    scope = search_plan.where
    found = [text_source(req, tq, *scope, limit, owner_parts(search_plan))]
    if narrow is not None:
        found.append(
            text_source(req, tq, *_and(scope, narrow), limit // 2, owner_parts(search_plan, narrow))
        )
    return [source for source in found if source is not None]


def owner_parts(search_plan: SearchPlan, narrow: Source | None = None) -> list[Source] | None:
    """A user's view, searched exactly, as its two halves (SearchPlan.halves): theirs, and the
    shared memories, read only when the kept statistics say the scope has any."""
    if search_plan.halves is None:
        return None
    return [_and(half, narrow) for half in search_plan.halves]


def _and(scope: Source, narrow: Source | None) -> Source:
    if narrow is None:
        return scope
    return f"{scope[0]} AND {narrow[0]}", [*scope[1], *narrow[1]]


def _relevance_term(req: SearchRequest) -> str | None:
    """What the candidate statement computes beside the scores: the decayed relevance (the
    memory profile, or the default profile with a decay_weight), the temporal score, or nothing."""
    if req.profile == "seed002":
        return "seed002"
    if req.profile == "memory" or req.decay_weight > 0.0:
        return "decay"
    return None


def _query_time_hints(req: SearchRequest) -> list[TimeHint]:
    if req.profile != "default" or weights.TIME_WEIGHT <= 0.0:
        return []
    return time_hints(req.query, as_of=req.as_of or timezone.now())


def _says_words(req: SearchRequest) -> bool:
    """Whether the candidate statement reports which query words each candidate says: for the
    relevance floor (hybrid search with query text) and for coverage's order."""
    return _weighs_words(req) or (req.mode == "hybrid" and bool(req.query.strip()))


def _weighs_words(req: SearchRequest) -> bool:
    """Whether coverage orders conversations by the query words they say (so the candidate
    statement must report them)."""
    return (
        ranking.reranks(req)
        and weights.COVERAGE < 1.0
        and weights.COVERAGE_NORM > 0.0
        and weights.COVERAGE_WORDS > 0.0
    )
