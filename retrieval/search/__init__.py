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

import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone
from pgvector import HalfVector

from memoryhub.lifecycle.decay import relevance_sql
from retrieval.embedders import DIMENSIONS, get_embedder
from retrieval.models import Chunk
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
    DEDUP_COSINE,
    cap_per_session,
    cover_conversations,
    dedup,
    diversify,
    expand_summaries,
    mmr,
    near_duplicates,
)
from retrieval.search.timehints import TimeHint, hint_where, time_hints, with_time_hints

__all__ = [  # the names other modules import
    "FUSIONS", "MODES", "PROFILES", "SCOPES", "Candidate", "SearchError", "SearchHit", "SearchRequest",
    "cover_conversations", "expand_summaries", "hybrid_search", "mmr", "run_search", "with_time_hints",
]

DF_CAP = 5_000  # counting beyond this only refines the IDF of very common words
STATS_TTL = 60  # seconds that scope sizes and document frequencies are reused
MATCH_BUDGET = 500  # chunks whose own words match, summed over the terms that select candidates
BM25_K1 = 1.2
BM25_B = 0.5
_WEBSEARCH_OPERATORS = re.compile(r'"|(^|\s)-\w|\sor\s', re.IGNORECASE)


# --- SQL building blocks ---------------------------------------------------------------------


def _where(req: SearchRequest) -> tuple[str, list[Any]]:
    """The WHERE clause every search path shares: tenant first, then scope and filters."""
    sql = ["c.tenant_id = %s"]
    params: list[Any] = [req.tenant_id]
    if req.key_workspace_id is not None:
        sql.append("c.workspace_id = %s")
        params.append(req.key_workspace_id)
    scope_sql, scope_params = _scope_clause(req)
    if scope_sql:
        sql.append(scope_sql)
        params.extend(scope_params)
    if req.tags:
        sql.append("c.tags @> %s::varchar[]")
        params.append(list(req.tags))
    if req.roles:
        sql.append("c.role = ANY(%s)")
        params.append(list(req.roles))
    if req.kinds:
        sql.append("c.kind = ANY(%s)")
        params.append(list(req.kinds))
    if req.agent:
        sql.append("c.agent = %s")
        params.append(req.agent)
    if req.user_id:
        sql.append("c.user_id = %s")
        params.append(req.user_id)
    if req.since:
        sql.append("c.created_at >= %s")
        params.append(req.since)
    if req.until:
        sql.append("c.created_at < %s")
        params.append(req.until)
    return " AND ".join(sql), params


def _scope_clause(req: SearchRequest) -> tuple[str, list[Any]]:
    """Hierarchical widening: the scope's own rows plus memories of every wider tier above it."""
    if req.scope == "conversation" and req.session_id is not None:
        return (
            "(c.session_id = %s OR (c.tier = 'channel' AND c.channel_id = %s)"
            " OR (c.tier = 'workspace' AND c.workspace_id = %s) OR c.tier = 'account')",
            [req.session_id, req.session_channel_id, req.session_workspace_id],
        )
    if req.scope == "channel" and req.channel_ids is not None:
        return (
            "(c.channel_id = ANY(%s) OR (c.tier = 'workspace' AND c.workspace_id = ANY(%s))"
            " OR c.tier = 'account')",
            [req.channel_ids, req.workspace_ids or []],
        )
    if req.scope == "workspace" and req.workspace_ids is not None:
        return "(c.workspace_id = ANY(%s) OR c.tier = 'account')", [req.workspace_ids]
    return "", []


def _rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


# --- full text -------------------------------------------------------------------------------


def _tsquery_literal(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass
class TextQuery:
    terms: list[tuple[str, float]]  # (tsquery literal, idf)
    strict: bool  # the query used websearch operators: require websearch_to_tsquery to match
    match_terms: list[str] = field(default_factory=list)  # the rarer terms that select candidates

    def score_sql(self) -> tuple[str, list[Any]]:
        """BM25 with tf = 1 (chunks are short): Σ idf · (k1+1) / (1 + k1·(1 − b + b·len/avg)).

        A word found only in the chunk's conversation context (weight D) counts at a discount.
        """
        if not self.terms:
            return "0.0", []
        discount = float(settings.MEMORYHUB_TEXT_CONTEXT_WEIGHT)
        parts = " + ".join(
            "(CASE WHEN c.search_vector @@ %s::tsquery THEN %s WHEN c.search_vector @@ %s::tsquery THEN %s ELSE 0 END)"
            for _ in self.terms
        )
        params: list[Any] = [
            v for literal, idf in self.terms for v in (literal + ":A", idf, literal, idf * discount)
        ]
        length = "length(ts_filter(c.search_vector, '{a}'))"
        norm = f"({BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * {length} / 12.0)))"
        return f"(({parts}) * {norm})", params

    def match_sql(self, query: str) -> tuple[str, list[Any]]:
        own_words_only = settings.MEMORYHUB_TEXT_CONTEXT_WEIGHT <= 0.0
        literals = [literal + (":A" if own_words_only else "") for literal in self.match_terms]
        sql = "c.search_vector @@ %s::tsquery"
        params: list[Any] = [" | ".join(literals)]
        if self.strict:
            # Phrases and exclusions are about the chunk's own words, not its context.
            sql += " AND ts_filter(c.search_vector, '{a}') @@ websearch_to_tsquery('pg_catalog.english', %s)"
            params.append(query)
        return sql, params


def _query_lexemes(query: str) -> list[str]:
    rows = _rows("SELECT lexeme FROM unnest(to_tsvector('pg_catalog.english', %s))", [query[:4000]])
    return sorted({r[0] for r in rows})[:32]


def _scope_key(where: str, params: list[Any]) -> str:
    return hashlib.sha256(repr((where, params)).encode()).hexdigest()


def _scope_size(where: str, params: list[Any], scope_key: str) -> int:
    """Chunks in scope (for IDF), capped and cached for a minute: it only scales the weights."""
    key = f"retrieval:n:{scope_key}"
    size = cache.get(key)
    if size is None:
        size = _rows(f"SELECT count(*) FROM (SELECT 1 FROM retrieval_chunk c WHERE {where} LIMIT {DF_CAP * 10}) s",
                     params)[0][0]
        cache.set(key, size, STATS_TTL)
    return max(int(size), 1)


def _document_frequencies(literals: list[str], where: str, params: list[Any], scope_key: str) -> dict[str, int]:
    """How many chunks in scope say each term themselves (capped; cached for a minute)."""
    keys = {literal: f"retrieval:df:{scope_key}:{hashlib.sha256(literal.encode()).hexdigest()[:24]}"
            for literal in literals}
    cached = cache.get_many(list(keys.values()))
    found = {literal: cached[key] for literal, key in keys.items() if key in cached}
    missing = [literal for literal in literals if literal not in found]
    if missing:
        capped = (f"(SELECT count(*) FROM (SELECT 1 FROM retrieval_chunk c WHERE {where} "
                  f"AND c.search_vector @@ %s::tsquery LIMIT {DF_CAP}) s)")
        all_params: list[Any] = []
        for literal in missing:
            all_params.extend([*params, literal + ":A"])
        counts = _rows("SELECT " + ", ".join([capped] * len(missing)), all_params)[0]
        fresh = dict(zip(missing, (int(c) for c in counts), strict=True))
        # A zero is never cached: a word written a moment ago must be findable at once.
        cache.set_many({keys[literal]: n for literal, n in fresh.items() if n}, STATS_TTL)
        found.update(fresh)
    return found


def build_text_query(req: SearchRequest, where: str, params: list[Any]) -> TextQuery:
    lexemes = _query_lexemes(req.query)
    if not lexemes:
        return TextQuery([], False)
    literals = [_tsquery_literal(x) for x in lexemes]
    scope_key = _scope_key(where, params)
    frequencies = _document_frequencies(literals, where, params, scope_key)
    total = max(_scope_size(where, params, scope_key), *frequencies.values())
    terms = []
    for literal in literals:
        df = frequencies[literal]
        if df:
            terms.append((literal, math.log(1 + (total - df + 0.5) / (df + 0.5)), df))
    return TextQuery([(t, idf) for t, idf, _ in terms], bool(_WEBSEARCH_OPERATORS.search(req.query)),
                     _match_terms(terms))


def _match_terms(terms: list[tuple[str, float, int]]) -> list[str]:
    """The rarest terms, up to a budget of matching chunks, select the candidates.

    Scoring every chunk that contains a common word costs more than it finds: a chunk holding
    only common words rarely outranks one that holds a rare word. Candidates are still scored on
    every term, and the vector side brings its own.
    """
    chosen: list[str] = []
    matched = 0
    for literal, _, df in sorted(terms, key=lambda t: t[2]):
        if chosen and matched + df > MATCH_BUDGET:
            break
        chosen.append(literal)
        matched += df
    return chosen


def text_candidates(req: SearchRequest, tq: TextQuery, where: str, params: list[Any], limit: int) -> list[int]:
    if not tq.terms:
        return []
    score, score_params = tq.score_sql()
    match, match_params = tq.match_sql(req.query)
    sql = (
        f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND {match} "
        f"ORDER BY {score} DESC, c.created_at DESC LIMIT %s"
    )
    return [r[0] for r in _rows(sql, [*params, *match_params, *score_params, limit])]


# --- vectors ---------------------------------------------------------------------------------


def embed_query(query: str) -> list[float]:
    return get_embedder().embed([query])[0]


def vector_candidates(vector: HalfVector, model: str, where: str, params: list[Any], limit: int) -> list[int]:
    with connection.cursor() as cursor:
        # Iterative scans (pgvector 0.8) keep filtered HNSW queries from returning too few rows.
        cursor.execute(
            f"SET LOCAL hnsw.ef_search = {int(settings.MEMORYHUB_HNSW_EF_SEARCH)}; "
            "SET LOCAL hnsw.iterative_scan = relaxed_order"
        )
        cursor.execute(
            f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.embedding IS NOT NULL "
            "AND c.embedding_model = %s ORDER BY c.embedding <=> %s::halfvec LIMIT %s",
            [*params, model, vector.to_text(), limit],
        )
        return [r[0] for r in cursor.fetchall()]


def _pair_similarities(head: list[Candidate], model: str) -> dict[tuple[int, int], float]:
    """Cosine similarity of every pair (low id, high id) of the head, computed in the database."""
    ids = [c.pk for c in head]
    if len(ids) < 2:
        return {}
    rows = _rows(
        "SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding) FROM retrieval_chunk a JOIN retrieval_chunk b "
        "ON a.id < b.id WHERE a.id = ANY(%s) AND b.id = ANY(%s) AND a.embedding_model = %s "
        "AND b.embedding_model = %s",
        [ids, ids, model, model],
    )
    return {(a, b): float(sim) for a, b, sim in rows}


def feedback_scores(vector: HalfVector, top_ids: list[int], ids: list[int], model: str,
                    weight: float) -> dict[int, float]:
    """Pseudo-relevance feedback (Rocchio): the candidates' cosine to the query vector moved toward
    the mean vector of the best first-pass results (`top_ids`), so that memories worded like the
    answers, not only like the question, score higher. One statement; cosine ignores the moved
    vector's length, so it needs no normalising. Empty when none of `top_ids` has a vector."""
    rows = _rows(
        "WITH fb AS (SELECT %s::vector + avg(f.embedding::vector) * %s::vector AS q FROM retrieval_chunk f "
        "WHERE f.id = ANY(%s) AND f.embedding_model = %s) "
        "SELECT c.id, 1 - (c.embedding <=> fb.q::halfvec) FROM retrieval_chunk c, fb "
        "WHERE fb.q IS NOT NULL AND c.id = ANY(%s) AND c.embedding_model = %s",
        [vector.to_text(), HalfVector([weight] * DIMENSIONS).to_text(), top_ids, model, ids, model],
    )
    return {pk: float(sim) for pk, sim in rows}


# --- the search function ---------------------------------------------------------------------


def _fetch(ids: list[int], vector: HalfVector | None, model: str, tq: TextQuery | None,
           with_relevance: bool = False) -> tuple[
    dict[int, Candidate], dict[int, float], dict[int, float]
]:
    """Score every candidate on both signals (not only on the list it came from), in one query."""
    select = ["c.id", "c.session_id", "c.text", "c.context <> ''", "extract(epoch FROM c.created_at)::float8",
              "c.sequence_end", "c.importance", "c.kind", "c.sequence_start"]
    params: list[Any] = []
    if vector is not None:
        select.append("CASE WHEN c.embedding_model = %s THEN 1 - (c.embedding <=> %s::halfvec) END")
        params += [model, vector.to_text()]
    else:
        select.append("NULL")
    if tq is not None and tq.terms:
        score, score_params = tq.score_sql()
        select.append(score)
        params += score_params
    else:
        select.append("NULL")
    if with_relevance:
        relevance, relevance_params = relevance_sql("c")
        select.append(relevance)
        params += relevance_params
    else:
        select.append("0.0")
    rows = _rows(f"SELECT {', '.join(select)} FROM retrieval_chunk c WHERE c.id = ANY(%s)", [*params, ids])
    candidates: dict[int, Candidate] = {}
    vec: dict[int, float] = {}
    txt: dict[int, float] = {}
    for pk, session_id, text, contextual, created, seq_end, importance, kind, seq_start, vsim, tscore, rel in rows:
        candidates[pk] = Candidate(pk, session_id, text, contextual, created, seq_end, importance, float(rel),
                                   kind, seq_start)
        if vsim is not None:
            vec[pk] = float(vsim)
        if tscore:
            txt[pk] = float(tscore)
    return candidates, vec, txt


def _near_duplicate_pairs(head: list[Candidate], model: str) -> set[tuple[int, int]]:
    """Pairs (low id, high id) of the ranking's head whose embeddings have cosine > 0.9.

    Compared in the database (no vectors travel or get parsed). Only chunks embedded from their
    own text are compared: one embedded with its conversation context shares that context's
    direction with its neighbours, so for those only their words count (see dedup).
    """
    ids = [c.pk for c in head if not c.contextual]
    if len(ids) < 2:
        return set()
    rows = _rows(
        "SELECT a.id, b.id FROM retrieval_chunk a JOIN retrieval_chunk b ON a.id < b.id "
        "WHERE a.id = ANY(%s) AND b.id = ANY(%s) AND a.embedding_model = %s AND b.embedding_model = %s "
        "AND (a.embedding <=> b.embedding) < %s",
        [ids, ids, model, model, 1.0 - DEDUP_COSINE],
    )
    return {(a, b) for a, b in rows}


def _near_pairs(head: list[Candidate], model: str,
                similarities: tuple[dict[tuple[int, int], float], set[int]] | None) -> set[tuple[int, int]]:
    """Near-duplicate pairs of the head, from MMR's similarities when they cover it (no second query)."""
    if similarities is None or not {c.pk for c in head} <= similarities[1]:
        return _near_duplicate_pairs(head, model)
    return near_duplicates(head, similarities[0])


def _load_hits(kept: list[Candidate], order: dict[int, float], vec: dict[int, float],
               txt: dict[int, float]) -> list[SearchHit]:
    rows = Chunk.objects.filter(pk__in=[c.pk for c in kept]).select_related(
        "session", "channel", "workspace").defer("search_vector", "embedding", "context")
    by_id = {c.pk: c for c in rows}
    return [SearchHit(by_id[c.pk], order[c.pk], vec.get(c.pk), txt.get(c.pk)) for c in kept if c.pk in by_id]


def _exact(req: SearchRequest, where: str, params: list[Any], limit: int) -> list[int]:
    pattern = "%" + req.query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    sql = f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.text ILIKE %s ORDER BY c.created_at DESC, c.id DESC LIMIT %s"
    return [r[0] for r in _rows(sql, [*params, pattern, limit])]


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
    where, params = _where(req)
    limit = max(settings.MEMORYHUB_SEARCH_CANDIDATES, req.top_k * 3)
    model = get_embedder().name
    has_text = bool(req.query.strip())
    hints: list[TimeHint] = []
    similarities: tuple[dict[tuple[int, int], float], set[int]] | None = None  # MMR's, reused by dedup
    with transaction.atomic():
        if req.mode == "exact":
            ids, vector, tq = _exact(req, where, params, req.top_k), None, None
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
        chunks, vec, txt = _fetch(ids, vector, model, tq, with_relevance=req.profile == "memory")
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
                    similarities = (_pair_similarities(head, model), {c.pk for c in head})
                    ranked = mmr(ranked, order, similarities[0], settings.MEMORYHUB_SEARCH_MMR, len(head))
                ranked = diversify(ranked, order, settings.MEMORYHUB_SEARCH_SESSION_DIVERSITY, 2 * req.top_k)
                ranked = cap_per_session(ranked, settings.MEMORYHUB_SEARCH_SESSION_CAP)
        kept = dedup(ranked, _near_pairs(ranked[: 3 * req.top_k], model, similarities), 3 * req.top_k)
        coverage = settings.MEMORYHUB_SEARCH_COVERAGE if _reranks(req) else 1.0
        kept = cover_conversations(kept, req.top_k, coverage)
        hits = _load_hits(kept, order, vec, txt)
    if req.profile == "memory":
        reinforce([h.chunk.pk for h in hits])
    return hits


def reinforce(chunk_ids: list[int]) -> None:
    """Returning a memory strengthens it (S4 "memory" profile): access count and time."""
    from django.db.models import F

    if chunk_ids:
        Chunk.objects.filter(pk__in=chunk_ids).update(access_count=F("access_count") + 1, accessed_at=timezone.now())


def hybrid_search(*, tenant_id: int, query: str = "", **options: Any) -> list[SearchHit]:
    """Search one tenant's memory without HTTP. Options are SearchRequest's fields."""
    return run_search(SearchRequest(tenant_id=tenant_id, query=query, **options))


