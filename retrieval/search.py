"""Hybrid retrieval (SPEC S4): full text, vectors, fusion, the "memory" profile, dedup.

Every query is confined to one tenant (and the key's workspace, when it is limited) in SQL,
whatever the scope. Full text ranks with BM25-style IDF weights over an OR of the query's
lexemes: Postgres' own ranking has no IDF, and an AND of every word of a natural-language
question rarely matches anything. Query text is never parsed as tsquery syntax, so no input
can make it fail.

Ranking defaults beyond S4 (each a setting, measured on LoCoMo in bench/README.md): a date the
query names lifts memories written then (retrieval.timehints); hybrid search ranks on a query
vector moved toward its best first-pass results (pseudo-relevance feedback), re-ranks by maximal
marginal relevance and gives the last places of top_k first to conversations not yet listed; a
summary that ranks gives its place to the message it summarises.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone
from pgvector import HalfVector

from retrieval.decay import relevance_sql
from retrieval.embedders import DIMENSIONS, get_embedder
from retrieval.models import Chunk
from retrieval.timehints import TimeHint, time_hints

MODES = ("hybrid", "vector", "text", "exact")
FUSIONS = ("weighted", "rrf")
PROFILES = ("default", "memory")
SCOPES = ("conversation", "channel", "workspace", "account")
RRF_K = 60
DEDUP_COSINE = 0.9
DF_CAP = 5_000  # counting beyond this only refines the IDF of very common words
STATS_TTL = 60  # seconds that scope sizes and document frequencies are reused
MATCH_BUDGET = 500  # chunks whose own words match, summed over the terms that select candidates
BM25_K1 = 1.2
BM25_B = 0.5
_WEBSEARCH_OPERATORS = re.compile(r'"|(^|\s)-\w|\sor\s', re.IGNORECASE)


class SearchError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class SearchRequest:
    tenant_id: int
    query: str = ""
    query_embedding: list[float] | None = None
    scope: str = "account"
    key_workspace_id: int | None = None
    session_id: int | None = None  # Session pk
    session_channel_id: int | None = None
    session_workspace_id: int | None = None
    channel_ids: list[int] | None = None
    workspace_ids: list[int] | None = None
    tags: list[str] = field(default_factory=list)
    roles: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    agent: str | None = None
    user_id: str | None = None  # None: no end user named (every user's memories); "": shared only
    since: datetime | None = None
    until: datetime | None = None
    top_k: int = 10
    mode: str = "hybrid"
    fusion: str = "weighted"
    vector_weight: float = 0.7
    text_weight: float = 0.3
    profile: str = "default"


@dataclass
class SearchHit:
    chunk: Chunk
    score: float
    vector_score: float | None
    text_score: float | None

    def as_dict(self) -> dict[str, Any]:
        c = self.chunk
        return {
            "chunk_id": c.pk,
            "text": c.text,
            "score": round(self.score, 6),
            "session": c.session.external_id if c.session_id else None,
            "sequence_start": c.sequence_start,
            "sequence_end": c.sequence_end,
            "kind": c.kind,
            "metadata": c.metadata,
            "created_at": c.created_at,
            "role": c.role or None,
            "tags": c.tags,
            "importance": c.importance,
            "channel": c.channel.name if c.channel_id else None,
            "workspace": c.workspace.name if c.workspace_id else None,
            # False while the chunk waits for its vector (found by full text only until then).
            "embedded": c.embedding_model == get_embedder().name,
            "scores": {
                "vector": None if self.vector_score is None else round(self.vector_score, 6),
                "text": None if self.text_score is None else round(self.text_score, 6),
            },
        }


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


# --- fusion ----------------------------------------------------------------------------------


def _minmax(values: dict[int, float]) -> dict[int, float]:
    if not values:
        return {}
    low, high = min(values.values()), max(values.values())
    if high - low < 1e-12:
        return {k: 1.0 for k in values}
    return {k: (v - low) / (high - low) for k, v in values.items()}


def _ranks(values: dict[int, float]) -> dict[int, int]:
    return {k: i + 1 for i, k in enumerate(sorted(values, key=lambda k: -values[k]))}


MEMORY_WEIGHTS = (0.3, 0.3, 0.4)  # text, semantic, decayed relevance (S4's 0.3 temporal + 0.1 importance)


def fuse(req: SearchRequest, chunks: dict[int, Candidate], vec: dict[int, float], txt: dict[int, float]) -> dict[int, float]:
    ids = list(chunks)
    if req.profile == "memory":
        # The "memory" profile (S4) adds time, importance and reinforcement through ONE term: the
        # lifecycle's decayed relevance, importance · rate(tier)^hours since last use · (1 + ln(1 +
        # accesses)), computed in the candidate query by memoryhub.lifecycle.decay's SQL. It takes
        # the place of S4's 0.3·temporal + 0.1·importance together: adding it beside them would
        # discount age twice and count importance twice. The tier weighs in only through its decay
        # rate; scope widening is a filter, never a weight, so a wider memory is not discounted
        # once for its tier and again for its decay (seed 001's double-discount caution). The term
        # is bounded (≤ 1) and added, never multiplied into similarity, so an old but exactly
        # matching memory still surfaces.
        nv, nt = _minmax(vec), _minmax(txt)
        w_text, w_vector, w_relevance = MEMORY_WEIGHTS
        return {
            i: w_text * nt.get(i, 0.0) + w_vector * nv.get(i, 0.0) + w_relevance * min(chunks[i].relevance, 1.0)
            for i in ids
        }
    if req.mode == "vector":
        return {i: vec.get(i, 0.0) for i in ids}
    if req.mode == "text":
        return {i: txt.get(i, 0.0) for i in ids}
    if req.fusion == "rrf":
        rv, rt = _ranks(vec), _ranks(txt)
        fused = {
            i: (1.0 / (RRF_K + rv[i]) if i in rv else 0.0) + (1.0 / (RRF_K + rt[i]) if i in rt else 0.0)
            for i in ids
        }
    else:
        nv, nt = _minmax(vec), _minmax(txt)
        fused = {i: req.vector_weight * nv.get(i, 0.0) + req.text_weight * nt.get(i, 0.0) for i in ids}
    return with_session_prior(fused, chunks, settings.MEMORYHUB_SEARCH_SESSION_WEIGHT)


def with_time_hints(scores: dict[int, float], chunks: dict[int, Candidate], hints: list[TimeHint],
                    weight: float) -> dict[int, float]:
    """Add `weight` × the best score to results written within a date the query names.

    Scale-free (weighted and rrf scores differ in scale) and additive: a result outside the
    named time still ranks by its match, only ties and near-ties go to the named time.
    """
    if weight <= 0.0 or not hints or not scores or max(scores.values()) <= 0.0:
        return scores
    bonus = weight * max(scores.values())
    out = dict(scores)
    for pk in scores:
        moment = datetime.fromtimestamp(chunks[pk].created_ts, UTC)
        if any(hint.matches(moment) for hint in hints):
            out[pk] += bonus
    return out


def _hint_where(hints: list[TimeHint]) -> tuple[str, list[Any]]:
    parts, params = [], []
    for hint in hints:
        sql, hint_params = hint.sql("c.created_at")
        parts.append(sql)
        params.extend(hint_params)
    return "(" + " OR ".join(parts) + ")", params


def with_session_prior(scores: dict[int, float], chunks: dict[int, Candidate], weight: float) -> dict[int, float]:
    """Blend each chunk's score with its conversation's (passage + document evidence, as in IR).

    A message in a conversation where several messages match the query is more likely the one
    meant than an isolated match elsewhere. The conversation's score is the sum of its best three.
    """
    if weight <= 0.0 or not scores:
        return scores
    per_session: dict[int, list[float]] = {}
    for pk, score in scores.items():
        session_id = chunks[pk].session_id
        if session_id is not None:
            per_session.setdefault(session_id, []).append(score)
    prior = {sid: sum(sorted(values, reverse=True)[:3]) for sid, values in per_session.items()}
    top_prior = max(prior.values(), default=0.0)
    top_score = max(scores.values())
    if top_prior <= 0.0:
        return scores
    return {
        pk: (1 - weight) * score + weight * top_score * prior.get(chunks[pk].session_id or -1, 0.0) / top_prior
        for pk, score in scores.items()
    }


_WORDS = re.compile(r"\w+", re.UNICODE)


def _word_set(text: str) -> frozenset[str]:
    return frozenset(_WORDS.findall(text.casefold()))


def _near_identical_text(a: frozenset[str], b: frozenset[str]) -> bool:
    if a == b:
        return True
    # Jaccard ≤ min/max of the sizes: most pairs are told apart by their sizes alone.
    small, large = sorted((len(a), len(b)))
    if small <= DEDUP_COSINE * large:
        return False
    return len(a & b) / len(a | b) > DEDUP_COSINE


def diversify(ordered: list[Candidate], scores: dict[int, float], decay: float, depth: int) -> list[Candidate]:
    """Re-rank so that each further result from an already-represented conversation is discounted.

    Greedy: the next result is the best score · decay^(results already taken from its session).
    """
    if decay >= 1.0:
        return ordered
    remaining = list(ordered)
    taken: dict[int | None, int] = {}
    result: list[Candidate] = []

    def adjusted(candidate: Candidate) -> float:
        if candidate.session_id is None:
            return scores[candidate.pk]
        return scores[candidate.pk] * decay ** taken.get(candidate.session_id, 0)

    while remaining and len(result) < depth:
        best = max(range(len(remaining)), key=lambda i: adjusted(remaining[i]))
        chosen = remaining.pop(best)
        taken[chosen.session_id] = taken.get(chosen.session_id, 0) + 1
        result.append(chosen)
    return result + remaining


def cap_per_session(ordered: list[Candidate], cap: int) -> list[Candidate]:
    """At most `cap` results from one conversation before any other's (0 = no cap); the rest follow."""
    if cap <= 0:
        return ordered
    head: list[Candidate] = []
    tail: list[Candidate] = []
    taken: dict[int, int] = {}
    for candidate in ordered:
        sid = candidate.session_id
        if sid is not None and taken.get(sid, 0) >= cap:
            tail.append(candidate)
            continue
        if sid is not None:
            taken[sid] = taken.get(sid, 0) + 1
        head.append(candidate)
    return head + tail


def expand_summaries(ordered: list[Candidate]) -> list[Candidate]:
    """A summary in the ranking gives its place to the best-ranked message it summarises (when
    that message is a candidate): the hit is the message itself, found through its summary."""
    out: list[Candidate] = []
    used: set[int] = set()
    for candidate in ordered:
        if candidate.pk in used:
            continue
        if candidate.kind == "summary" and candidate.session_id is not None and candidate.sequence_start is not None:
            source = next((
                c for c in ordered
                if c.kind == "event" and c.pk not in used and c.session_id == candidate.session_id
                and c.sequence_end is not None and candidate.sequence_start <= c.sequence_end
                and (candidate.sequence_end is None or (c.sequence_start or c.sequence_end) <= candidate.sequence_end)
            ), None)
            if source is not None:
                used.add(source.pk)
                out.append(source)
                continue
        used.add(candidate.pk)
        out.append(candidate)
    return out


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


def mmr(ordered: list[Candidate], scores: dict[int, float], similarities: dict[tuple[int, int], float],
        weight: float, depth: int) -> list[Candidate]:
    """Maximal marginal relevance: the next result maximises weight·score − (1−weight)·its highest
    similarity to a result already taken (1 = plain ranking). Scores are min–max normalised first."""
    if weight >= 1.0 or len(ordered) < 2:
        return ordered
    head, tail = list(ordered[:depth]), ordered[depth:]
    norm = _minmax({c.pk: scores[c.pk] for c in head})
    result: list[Candidate] = []
    nearest = {c.pk: 0.0 for c in head}
    while head:
        best = max(range(len(head)), key=lambda i: weight * norm[head[i].pk] - (1 - weight) * nearest[head[i].pk])
        chosen = head.pop(best)
        result.append(chosen)
        for c in head:
            sim = similarities.get((min(c.pk, chosen.pk), max(c.pk, chosen.pk)), 0.0)
            nearest[c.pk] = max(nearest[c.pk], sim)
    return result + tail


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


def cover_conversations(kept: list[Candidate], top_k: int, share: float) -> list[Candidate]:
    """The first share·top_k results by rank; the other places go first to the best results from
    conversations not among the results yet, then by rank again (1 = plain ranking).

    A search over many conversations then names more of the conversations a question touches,
    while the head of the list stays the best matches. Memories outside any conversation (notes,
    facts, documents) are never moved up: they keep their rank among the rest.
    """
    if share >= 1.0 or len(kept) <= top_k:
        return kept[:top_k]
    head_size = max(1, round(share * top_k))
    head, rest = kept[:head_size], kept[head_size:]
    seen = {c.session_id for c in head if c.session_id is not None}
    fresh: list[Candidate] = []
    for candidate in rest:
        if head_size + len(fresh) >= top_k:
            break
        if candidate.session_id is not None and candidate.session_id not in seen:
            fresh.append(candidate)
            seen.add(candidate.session_id)
    chosen = {c.pk for c in fresh}
    return (head + fresh + [c for c in rest if c.pk not in chosen])[:top_k]


def dedup(ordered: list[Candidate], near_pairs: set[tuple[int, int]], top_k: int) -> list[Candidate]:
    """Drop near-identical results (S4): cosine > 0.9 (`near_pairs`, see _near_duplicate_pairs),
    or near-identical text (word sets, Jaccard > 0.9: also where embeddings are missing)."""
    near: dict[int, set[int]] = {}
    for a, b in near_pairs:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    kept: list[Candidate] = []
    kept_ids: set[int] = set()
    kept_words: list[frozenset[str]] = []
    for chunk in ordered:
        if chunk.pk in near and not near[chunk.pk].isdisjoint(kept_ids):
            continue
        words = _word_set(chunk.text)
        if any(_near_identical_text(words, other) for other in kept_words):
            continue
        kept.append(chunk)
        kept_ids.add(chunk.pk)
        kept_words.append(words)
        if len(kept) == top_k:
            break
    return kept


# --- the search function ---------------------------------------------------------------------


@dataclass
class Candidate:
    """What ranking needs of a chunk; full rows are loaded only for the results kept."""

    pk: int
    session_id: int | None
    text: str
    contextual: bool
    created_ts: float  # created_at as epoch seconds (tie-break by recency)
    sequence_end: int | None
    importance: float
    relevance: float = 0.0  # decayed relevance (memory profile only)
    kind: str = "event"
    sequence_start: int | None = None


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
    own = {c.pk for c in head if not c.contextual}
    return {pair for pair, sim in similarities[0].items()
            if sim > DEDUP_COSINE and pair[0] in own and pair[1] in own}


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


def validate(req: SearchRequest) -> None:
    if req.mode not in MODES:
        raise SearchError("invalid_mode", f"mode must be one of {', '.join(MODES)}")
    if req.fusion not in FUSIONS:
        raise SearchError("invalid_fusion", f"fusion must be one of {', '.join(FUSIONS)}")
    if not 1 <= req.top_k <= settings.MEMORYHUB_SEARCH_MAX_TOP_K:
        raise SearchError("invalid_top_k", f"top_k must be within 1..{settings.MEMORYHUB_SEARCH_MAX_TOP_K}")
    if req.query_embedding is not None and len(req.query_embedding) != DIMENSIONS:
        raise SearchError("invalid_query_embedding", f"query_embedding must have {DIMENSIONS} dimensions")
    has_text = bool(req.query.strip())
    if req.mode in ("text", "exact") and not has_text:
        raise SearchError("query_required", f"mode {req.mode!r} needs query text")
    if not has_text and req.query_embedding is None:
        raise SearchError("query_required", "Give query text or a query_embedding.")


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
    first = fuse(req, chunks, vec, txt)
    top = sorted(first, key=lambda pk: -first[pk])[: settings.MEMORYHUB_SEARCH_FEEDBACK_DOCS]
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
                hint_sql, hint_params = _hint_where(hints)
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
            ranked = sorted(
                chunks.values(),
                key=lambda c: (-order[c.pk], -c.created_ts, -(c.sequence_end or 0), -c.pk),
            )
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


