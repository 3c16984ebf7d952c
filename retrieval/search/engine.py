"""run_search: one search, stage by stage, in one transaction.

1. candidates (_find): the best text matches (fulltext) and nearest vectors (sql) in scope, plus
   the best of those written within dates the query names (timehints);
2. scores (_rank): both signals for every candidate in one query (sql.fetch_candidates), fused
   (fusion; against the feedback-moved query vector for hybrid search), the time-hint bonus, the
   order; summaries give their place to their messages, and hybrid search re-ranks (rerank: MMR,
   per-conversation diversity and cap);
3. hits: near-duplicates dropped, the last places to conversations not yet listed (rerank), rows
   loaded (sql); what it returns is reinforced (access counts, written in batches).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from pgvector import HalfVector

from retrieval.embedders import get_embedder
from retrieval.search.fulltext import TextQuery, build_text_query, text_candidates
from retrieval.search.fusion import by_score, feedback_documents, fuse
from retrieval.search.request import Candidate, SearchHit, SearchRequest, validate
from retrieval.search.rerank import (
    PairSimilarities,
    cap_per_session,
    cover_conversations,
    dedup,
    diversify,
    expand_summaries,
    mmr,
    near_duplicates,
)
from retrieval.search.sql import (
    exact_candidates,
    feedback_scores,
    fetch_candidates,
    load_hits,
    near_duplicate_pairs,
    pair_similarities,
    reinforce,
    vector_candidates,
    where_clause,
)
from retrieval.search.timehints import TimeHint, hint_where, time_hints, with_time_hints

Similarities = tuple[PairSimilarities, set[int]]  # MMR's pair similarities and the ids they cover


@dataclass
class Found:
    """The candidates' ids (in the order their queries gave them) and what found them."""

    ids: list[int]
    vector: HalfVector | None = None
    text_query: TextQuery | None = None
    hints: list[TimeHint] = field(default_factory=list)


def hybrid_search(*, tenant_id: int, query: str = "", **options: Any) -> list[SearchHit]:
    """Search one tenant's memory without HTTP. Options are SearchRequest's fields."""
    return run_search(SearchRequest(tenant_id=tenant_id, query=query, **options))


def run_search(req: SearchRequest) -> list[SearchHit]:
    validate(req)
    where, params = where_clause(req)
    model = get_embedder().name
    with transaction.atomic():
        found = _find(req, where, params, model)
        if not found.ids:
            return []
        chunks, vec, txt = fetch_candidates(found.ids, found.vector, model, found.text_query,
                                            with_relevance=req.profile == "memory")
        order, ranked, similarities = _rank(req, found, chunks, vec, txt, model)
        kept = dedup(ranked, _near_pairs(ranked[: 3 * req.top_k], model, similarities), 3 * req.top_k)
        coverage = settings.MEMORYHUB_SEARCH_COVERAGE if _reranks(req) else 1.0
        kept = cover_conversations(kept, req.top_k, coverage)
        hits = load_hits(kept, order, vec, txt)
    reinforce([h.chunk.pk for h in hits])
    return hits


def embed_query(query: str) -> list[float]:
    return get_embedder().embed([query])[0]


def _find(req: SearchRequest, where: str, params: list[Any], model: str) -> Found:
    if req.mode == "exact":
        return Found(exact_candidates(req, where, params, req.top_k))
    limit = max(settings.MEMORYHUB_SEARCH_CANDIDATES, req.top_k * 3)
    has_text = bool(req.query.strip())
    tq = build_text_query(req, where, params) if has_text and req.mode in ("text", "hybrid") else None
    vector = None
    if req.mode in ("vector", "hybrid"):
        raw = req.query_embedding if req.query_embedding is not None else embed_query(req.query)
        vector = HalfVector(raw)
    ids = text_candidates(req, tq, where, params, limit) if tq else []
    if vector is not None:
        ids = list(dict.fromkeys([*vector_candidates(vector, model, where, params, limit), *ids]))
    hints = _query_time_hints(req) if has_text else []
    if hints:
        # The best matches written within the named dates join the candidates: the
        # preference below can only lift what was fetched.
        hint_sql, hint_params = hint_where(hints)
        hinted_where, hinted_params = f"{where} AND {hint_sql}", [*params, *hint_params]
        hinted = text_candidates(req, tq, hinted_where, hinted_params, limit // 2) if tq else []
        if vector is not None:
            hinted = [*vector_candidates(vector, model, hinted_where, hinted_params, limit // 2), *hinted]
        ids = list(dict.fromkeys([*ids, *hinted]))
    return Found(ids, vector, tq, hints)


def _query_time_hints(req: SearchRequest) -> list[TimeHint]:
    if req.profile == "memory" or settings.MEMORYHUB_SEARCH_TIME_WEIGHT <= 0.0:
        return []
    return time_hints(req.query)


def _reranks(req: SearchRequest) -> bool:
    """Whether the re-ranking defaults (feedback, MMR, coverage) apply: hybrid, default profile."""
    return req.mode == "hybrid" and req.profile != "memory"


def _rank(req: SearchRequest, found: Found, chunks: dict[int, Candidate], vec: dict[int, float],
          txt: dict[int, float], model: str) -> tuple[dict[int, float], list[Candidate], Similarities | None]:
    """The candidates' scores and order, and MMR's pair similarities when it computed them."""
    if req.mode == "exact":
        return {i: 1.0 for i in chunks}, [chunks[i] for i in found.ids if i in chunks], None
    order = fuse(req, chunks, _with_feedback(req, chunks, vec, txt, found.vector, model), txt)
    if req.profile != "memory":
        order = with_time_hints(order, chunks, found.hints, settings.MEMORYHUB_SEARCH_TIME_WEIGHT)
    ranked = by_score(chunks.values(), order)
    if req.profile != "memory" and settings.MEMORYHUB_SEARCH_EXPAND_SUMMARIES:
        ranked = expand_summaries(ranked)
    if not _reranks(req):
        return order, ranked, None
    ranked, similarities = _rerank(req, ranked, order, model)
    return order, ranked, similarities


def _with_feedback(req: SearchRequest, chunks: dict[int, Candidate], vec: dict[int, float],
                   txt: dict[int, float], vector: HalfVector | None, model: str) -> dict[int, float]:
    """The candidates' vector scores for ranking: against the feedback-moved query when feedback
    applies (the scores shown stay the cosine to the query itself)."""
    weight = settings.MEMORYHUB_SEARCH_FEEDBACK
    if weight <= 0.0 or vector is None or not vec or not _reranks(req):
        return vec
    top = feedback_documents(req, chunks, vec, txt, settings.MEMORYHUB_SEARCH_FEEDBACK_DOCS)
    return feedback_scores(vector, top, list(vec), model, weight) or vec


def _rerank(req: SearchRequest, ranked: list[Candidate], order: dict[int, float],
            model: str) -> tuple[list[Candidate], Similarities | None]:
    """Hybrid search's re-ranking: MMR over the head, then per-conversation diversity and cap."""
    similarities: Similarities | None = None
    if settings.MEMORYHUB_SEARCH_MMR < 1.0:
        head = ranked[: 3 * req.top_k]
        similarities = (pair_similarities(head, model), {c.pk for c in head})
        ranked = mmr(ranked, order, similarities[0], settings.MEMORYHUB_SEARCH_MMR, len(head))
    ranked = diversify(ranked, order, settings.MEMORYHUB_SEARCH_SESSION_DIVERSITY, 2 * req.top_k)
    ranked = cap_per_session(ranked, settings.MEMORYHUB_SEARCH_SESSION_CAP)
    return ranked, similarities


def _near_pairs(head: list[Candidate], model: str, similarities: Similarities | None) -> set[tuple[int, int]]:
    """Near-duplicate pairs of the head, from MMR's similarities when they cover it (no second query)."""
    if similarities is None or not {c.pk for c in head} <= similarities[1]:
        return near_duplicate_pairs(head, model)
    return near_duplicates(head, similarities[0])
