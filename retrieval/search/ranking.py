"""The ranking stage of a search, between gathering candidates and choosing the hits (engine.py):
fusion, the dates a query names, nearness to the session, summary expansion, one hit per
message, relevance feedback and MMR (`rank`), and the head's near-duplicate pairs for dedup
(`near_pairs`)."""

from __future__ import annotations

import numpy as np

from retrieval.search import weights
from retrieval.search.explain import Trace
from retrieval.search.fusion import by_score, feedback_documents, fuse
from retrieval.search.nearness import nearest_first
from retrieval.search.request import LITERAL_MODES, Candidate, SearchRequest, one_per_message
from retrieval.search.rerank import PairSimilarities, expand_summaries, mmr, near_duplicates
from retrieval.search.sql import CandidatePool
from retrieval.search.timehints import TimeHint, with_time_hints
from retrieval.search.vectors import near_duplicate_pairs

Similarities = tuple[PairSimilarities, set[int]]  # MMR's pair similarities and the ids they cover


def reranks(req: SearchRequest) -> bool:
    """Whether the re-ranking defaults (feedback, MMR, coverage) apply: hybrid, default profile."""
    return req.mode == "hybrid" and req.profile == "default"


def rank(
    req: SearchRequest,
    vector: np.ndarray | None,
    hints: list[TimeHint],
    pool: CandidatePool,
    vec: dict[int, float],
    trace: Trace,
) -> tuple[dict[int, float], list[Candidate], Similarities | None]:
    """The candidates' scores and order, and MMR's pair similarities when it computed them
    (each stage reported to `trace`, which is off unless the request asks to explain)."""
    chunks = pool.candidates
    if req.mode in LITERAL_MODES:
        newest = sorted(chunks.values(), key=lambda c: (-c.created_ts, -c.pk))
        return {i: 1.0 for i in chunks}, newest, None
    ranking_vec = _with_feedback(req, pool, vec, vector)
    order = fuse(req, chunks, ranking_vec, pool.txt)
    trace.fusion(chunks, vec, ranking_vec, pool.txt, order, pool.vectors.sentences)
    if req.profile == "default":
        fused, order = order, with_time_hints(order, chunks, hints, weights.TIME_WEIGHT)
        trace.date_hint(fused, order, hints)
    if req.nearest_first:
        farther, order = order, nearest_first(req, chunks, order)
        trace.scores(
            "nearest_first",
            farther,
            order,
            "a conversation farther from the session (its channel, its "
            "workspace, elsewhere) ranks lower (nearness.NEAR_STEP a step)",
        )
    ranked = by_score(chunks.values(), order)
    if req.profile == "default" and weights.EXPAND_SUMMARIES:
        by_rank, ranked = ranked, expand_summaries(ranked, trace.replaced if trace.on else None)
        trace.ranks("summary_expansion", by_rank, ranked)
    if weights.ONE_PER_MESSAGE:
        by_rank, ranked = ranked, one_per_message(ranked)
        trace.ranks("one_per_message", by_rank, ranked)
    if not reranks(req):
        return order, ranked, None
    ranked, similarities = _rerank(req, ranked, order, pool, trace)
    return order, ranked, similarities


def _with_feedback(
    req: SearchRequest, pool: CandidatePool, vec: dict[int, float], vector: np.ndarray | None
) -> dict[int, float]:
    """The candidates' vector scores for ranking: against the feedback-moved query when feedback
    applies (the scores shown stay the cosine to the query itself)."""
    weight = weights.FEEDBACK
    if weight <= 0.0 or vector is None or not vec or not reranks(req) or req.exact_weights:
        return vec
    top = feedback_documents(req, pool.candidates, vec, pool.txt, weights.FEEDBACK_DOCS)
    return pool.vectors.feedback(vector, top, weight) or vec


def _rerank(
    req: SearchRequest,
    ranked: list[Candidate],
    order: dict[int, float],
    pool: CandidatePool,
    trace: Trace,
) -> tuple[list[Candidate], Similarities | None]:
    """Hybrid search's re-ranking: MMR over the head (when on)."""
    similarities: Similarities | None = None
    if weights.MMR < 1.0:
        head = ranked[: 3 * req.top_k]
        similarities = (pool.vectors.pairs([c.pk for c in head]), {c.pk for c in head})
        before, ranked = ranked, mmr(ranked, order, similarities[0], weights.MMR, len(head))
        trace.ranks("mmr", before, ranked)
    return ranked, similarities


def near_pairs(
    head: list[Candidate], pool: CandidatePool, similarities: Similarities | None
) -> set[tuple[int, int]]:
    """Near-duplicate pairs of the head, from MMR's similarities when they cover it. Only chunks
    embedded from their own text are compared: one embedded with its conversation context shares
    that context's direction with its neighbours, so for those only their words count
    (rerank.dedup)."""
    if similarities is None or not {c.pk for c in head} <= similarities[1]:
        return near_duplicate_pairs(pool.vectors, [c.pk for c in head if not c.contextual])
    return near_duplicates(head, similarities[0])
