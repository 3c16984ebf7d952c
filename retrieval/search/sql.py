"""The SQL of search, apart from full text's (fulltext.py): the WHERE clause every path shares,
vector and exact candidates, the candidate query that scores them, the pair similarities MMR and
dedup use, pseudo-relevance feedback, and loading and reinforcing the hits.

Every query is confined to one tenant (and the key's workspace, when it is limited) in SQL,
whatever the scope.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection
from django.utils import timezone
from pgvector import HalfVector

from memoryhub.counters import BatchedCounter, Counts
from retrieval.decay import relevance_sql
from retrieval.embedders import DIMENSIONS
from retrieval.models import Chunk
from retrieval.search.request import Candidate, SearchHit, SearchRequest
from retrieval.search.rerank import DEDUP_COSINE, PairSimilarities

if TYPE_CHECKING:
    from retrieval.search.fulltext import TextQuery


def where_clause(req: SearchRequest) -> tuple[str, list[Any]]:
    """The WHERE clause every search path shares: tenant first, then scope and filters."""
    sql = ["c.tenant_id = %s"]
    params: list[Any] = [req.tenant_id]
    if req.key_workspace_id is not None:
        sql.append("c.workspace_id = %s")
        params.append(req.key_workspace_id)
    scope_sql, scope_params = scope_clause(req)
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
    if req.user_id is not None:
        # Ownership: a user sees their own memories and shared ones (no owner), never another user's.
        sql.append("(c.user_id = %s OR c.user_id = '')")
        params.append(req.user_id)
    if req.since:
        sql.append("c.created_at >= %s")
        params.append(req.since)
    if req.until:
        sql.append("c.created_at < %s")
        params.append(req.until)
    return " AND ".join(sql), params


def scope_clause(req: SearchRequest) -> tuple[str, list[Any]]:
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


def select_rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """All rows of one raw statement (search reads ids and scores, not model instances)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def vector_candidates(vector: HalfVector, model: str, where: str, params: list[Any], limit: int) -> list[int]:
    """The ids of the `limit` nearest chunks in scope embedded by `model` (HNSW, approximate)."""
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


def exact_candidates(req: SearchRequest, where: str, params: list[Any], limit: int) -> list[int]:
    """The ids of the newest chunks in scope whose text holds the query literally (mode "exact")."""
    pattern = "%" + req.query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    sql = f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.text ILIKE %s ORDER BY c.created_at DESC, c.id DESC LIMIT %s"
    return [r[0] for r in select_rows(sql, [*params, pattern, limit])]


def fetch_candidates(ids: list[int], vector: HalfVector | None, model: str, tq: TextQuery | None,
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
    rows = select_rows(f"SELECT {', '.join(select)} FROM retrieval_chunk c WHERE c.id = ANY(%s)", [*params, ids])
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


def pair_similarities(head: list[Candidate], model: str) -> PairSimilarities:
    """Cosine similarity of every pair (low id, high id) of the head, computed in the database."""
    ids = [c.pk for c in head]
    if len(ids) < 2:
        return {}
    rows = select_rows(
        "SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding) FROM retrieval_chunk a JOIN retrieval_chunk b "
        "ON a.id < b.id WHERE a.id = ANY(%s) AND b.id = ANY(%s) AND a.embedding_model = %s "
        "AND b.embedding_model = %s",
        [ids, ids, model, model],
    )
    return {(a, b): float(sim) for a, b, sim in rows}


def near_duplicate_pairs(head: list[Candidate], model: str) -> set[tuple[int, int]]:
    """Pairs (low id, high id) of the ranking's head whose embeddings have cosine > 0.9.

    Compared in the database (no vectors travel or get parsed). Only chunks embedded from their
    own text are compared: one embedded with its conversation context shares that context's
    direction with its neighbours, so for those only their words count (see rerank.dedup).
    """
    ids = [c.pk for c in head if not c.contextual]
    if len(ids) < 2:
        return set()
    rows = select_rows(
        "SELECT a.id, b.id FROM retrieval_chunk a JOIN retrieval_chunk b ON a.id < b.id "
        "WHERE a.id = ANY(%s) AND b.id = ANY(%s) AND a.embedding_model = %s AND b.embedding_model = %s "
        "AND (a.embedding <=> b.embedding) < %s",
        [ids, ids, model, model, 1.0 - DEDUP_COSINE],
    )
    return {(a, b) for a, b in rows}


def feedback_scores(vector: HalfVector, top_ids: list[int], ids: list[int], model: str,
                    weight: float) -> dict[int, float]:
    """Pseudo-relevance feedback (Rocchio): the candidates' cosine to the query vector moved toward
    the mean vector of the best first-pass results (`top_ids`), so that memories worded like the
    answers, not only like the question, score higher. One statement; cosine ignores the moved
    vector's length, so it needs no normalising. Empty when none of `top_ids` has a vector."""
    rows = select_rows(
        "WITH fb AS (SELECT %s::vector + avg(f.embedding::vector) * %s::vector AS q FROM retrieval_chunk f "
        "WHERE f.id = ANY(%s) AND f.embedding_model = %s) "
        "SELECT c.id, 1 - (c.embedding <=> fb.q::halfvec) FROM retrieval_chunk c, fb "
        "WHERE fb.q IS NOT NULL AND c.id = ANY(%s) AND c.embedding_model = %s",
        [vector.to_text(), HalfVector([weight] * DIMENSIONS).to_text(), top_ids, model, ids, model],
    )
    return {pk: float(sim) for pk, sim in rows}


def load_hits(kept: list[Candidate], order: dict[int, float], vec: dict[int, float],
              txt: dict[int, float]) -> list[SearchHit]:
    """The kept candidates as hits, in their order, with full rows (and what the API shows of them)."""
    rows = Chunk.objects.filter(pk__in=[c.pk for c in kept]).select_related(
        "session", "channel", "workspace").defer("search_vector", "embedding", "context")
    by_id = {c.pk: c for c in rows}
    return [SearchHit(by_id[c.pk], order[c.pk], vec.get(c.pk), txt.get(c.pk)) for c in kept if c.pk in by_id]


def _write_accesses(counts: Counts) -> None:
    """Add the accesses of a batch in one statement (seed 002: frequently used memories decay slower)."""
    rows = [(int(pk), int(n[0])) for pk, n in counts.items()]
    values = ", ".join(["(%s::bigint, %s::int)"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE retrieval_chunk c SET access_count = c.access_count + v.n, accessed_at = %s "
            f"FROM (VALUES {values}) AS v(id, n) WHERE c.id = v.id",
            [timezone.now(), *[value for row in rows for value in row]],
        )


accesses = BatchedCounter("access", _write_accesses, "MEMORYHUB_ACCESS_FLUSH_SECONDS")


def reinforce(chunk_ids: list[int]) -> None:
    """Returning a memory strengthens it: its access count and time, written in batches off the
    request path (every search counts, as in seed 002; the "memory" profile ranks with them)."""
    if chunk_ids:
        accesses.add_many(list(chunk_ids), 1)
