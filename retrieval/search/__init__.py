"""Hybrid retrieval (SPEC S4): full text, vectors, fusion, the "memory" profile, dedup.

Every query is confined to one tenant (and the key's workspace, when it is limited) in SQL,
whatever the scope. Full text ranks with BM25-style IDF weights over an OR of the query's
lexemes: Postgres' own ranking has no IDF, and an AND of every word of a natural-language
question rarely matches anything. Query text is never parsed as tsquery syntax, so no input
can make it fail.

Ranking defaults beyond S4 (each a setting, measured on LoCoMo in bench/README.md): a date the
query names lifts memories written then (retrieval.search.timehints); hybrid search ranks on a query
vector moved toward its best first-pass results (pseudo-relevance feedback), re-ranks by maximal
marginal relevance and gives the last places of top_k first to conversations not yet listed; a
summary that ranks gives its place to the message it summarises.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from pgvector import HalfVector

from retrieval.embedders import get_embedder
from retrieval.search.fulltext import build_text_query, text_candidates
from retrieval.search.fusion import by_score, feedback_documents, fuse
from retrieval.search.request import (
    FUSIONS,
    MODES,
    PROFILES,
    SCOPES,
    Candidate,
    SearchError,
    SearchHit,
    SearchRequest,
    validate,
)
from retrieval.search.rerank import (
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

__all__ = [  # the names other modules import
    "FUSIONS", "MODES", "PROFILES", "SCOPES", "Candidate", "SearchError", "SearchHit", "SearchRequest",
    "cover_conversations", "expand_summaries", "hybrid_search", "mmr", "run_search", "where_clause",
    "with_time_hints",
]

def _near_pairs(head: list[Candidate], model: str,
                similarities: tuple[dict[tuple[int, int], float], set[int]] | None) -> set[tuple[int, int]]:
    """Near-duplicate pairs of the head, from MMR's similarities when they cover it (no second query)."""
    if similarities is None or not {c.pk for c in head} <= similarities[1]:
        return near_duplicate_pairs(head, model)
    return near_duplicates(head, similarities[0])


def embed_query(query: str) -> list[float]:
    return get_embedder().embed([query])[0]


def _query_time_hints(req: SearchRequest) -> list[TimeHint]:
    if req.profile == "memory" or settings.MEMORYHUB_SEARCH_TIME_WEIGHT <= 0.0:
        return []
    return time_hints(req.query)


def _reranks(req: SearchRequest) -> bool:
    """Whether the re-ranking defaults (feedback, MMR, coverage) apply: hybrid, default profile."""
    return req.mode == "hybrid" and req.profile != "memory"


def _with_feedback(req: SearchRequest, chunks: dict[int, Candidate], vec: dict[int, float],
                   txt: dict[int, float], vector: HalfVector | None, model: str) -> dict[int, float]:
    """The candidates' vector scores for ranking: against the feedback-moved query when feedback
    applies (the scores shown stay the cosine to the query itself)."""
    weight = settings.MEMORYHUB_SEARCH_FEEDBACK
    if weight <= 0.0 or vector is None or not vec or not _reranks(req):
        return vec
    top = feedback_documents(req, chunks, vec, txt, settings.MEMORYHUB_SEARCH_FEEDBACK_DOCS)
    return feedback_scores(vector, top, list(vec), model, weight) or vec


def run_search(req: SearchRequest) -> list[SearchHit]:
    validate(req)
    where, params = where_clause(req)
    limit = max(settings.MEMORYHUB_SEARCH_CANDIDATES, req.top_k * 3)
    model = get_embedder().name
    has_text = bool(req.query.strip())
    hints: list[TimeHint] = []
    similarities: tuple[dict[tuple[int, int], float], set[int]] | None = None  # MMR's, reused by dedup
    with transaction.atomic():
        if req.mode == "exact":
            ids, vector, tq = exact_candidates(req, where, params, req.top_k), None, None
        else:
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
        if not ids:
            return []
        chunks, vec, txt = fetch_candidates(ids, vector, model, tq, with_relevance=req.profile == "memory")
        if req.mode == "exact":
            order = {i: 1.0 for i in chunks}
            ranked = [chunks[i] for i in ids if i in chunks]
        else:
            order = fuse(req, chunks, _with_feedback(req, chunks, vec, txt, vector, model), txt)
            if req.profile != "memory":
                order = with_time_hints(order, chunks, hints, settings.MEMORYHUB_SEARCH_TIME_WEIGHT)
            ranked = by_score(chunks.values(), order)
            if req.profile != "memory" and settings.MEMORYHUB_SEARCH_EXPAND_SUMMARIES:
                ranked = expand_summaries(ranked)
            if req.mode == "hybrid" and req.profile != "memory":
                if settings.MEMORYHUB_SEARCH_MMR < 1.0:
                    head = ranked[: 3 * req.top_k]
                    similarities = (pair_similarities(head, model), {c.pk for c in head})
                    ranked = mmr(ranked, order, similarities[0], settings.MEMORYHUB_SEARCH_MMR, len(head))
                ranked = diversify(ranked, order, settings.MEMORYHUB_SEARCH_SESSION_DIVERSITY, 2 * req.top_k)
                ranked = cap_per_session(ranked, settings.MEMORYHUB_SEARCH_SESSION_CAP)
        kept = dedup(ranked, _near_pairs(ranked[: 3 * req.top_k], model, similarities), 3 * req.top_k)
        coverage = settings.MEMORYHUB_SEARCH_COVERAGE if _reranks(req) else 1.0
        kept = cover_conversations(kept, req.top_k, coverage)
        hits = load_hits(kept, order, vec, txt)
    if req.profile == "memory":
        reinforce([h.chunk.pk for h in hits])
    return hits


def hybrid_search(*, tenant_id: int, query: str = "", **options: Any) -> list[SearchHit]:
    """Search one tenant's memory without HTTP. Options are SearchRequest's fields."""
    return run_search(SearchRequest(tenant_id=tenant_id, query=query, **options))


