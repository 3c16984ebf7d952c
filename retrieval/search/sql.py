"""The SQL of search, apart from full text's (fulltext.py, textquery.py): the WHERE clause every
path shares, the vector and exact candidate subqueries, the candidate statement, reinforcing hits.

One search is three statements: the query's term statistics (fulltext, termstats); the candidate
statement, which finds the candidates (text, vector and date-hinted subqueries in one UNION), scores
them on full text and returns their embeddings, so that feedback, MMR and dedup run on those vectors
in Python (vectors.py); and the hits' result rows (load_rows). Hybrid search splits the candidate
statement in two, text side first, while its query is being embedded (engine._candidates). No
transaction is opened: a hit deleted between the last two statements is left out, as before.

Every query is confined to one tenant (and the key's workspace, when it is limited) in SQL,
whatever the scope.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from django.utils import timezone

from accounts.models import Channel, Workspace
from memoryhub.models import Session
from memoryhub.plumbing.counters import BatchedCounter, Counts
from retrieval.decay import relevance_sql, seed002_temporal_sql
from retrieval.embedders import DIMENSIONS
from retrieval.models import ChunkAccess, ChunkSentence
from retrieval.search.request import Candidate, HitRow, SearchRequest
from retrieval.search.statements import hnsw_settings, select_binary_rows, select_rows
from retrieval.search.statistics import table_rows
from retrieval.search.textquery import TextQuery
from retrieval.search.vectors import CandidateVectors, decode_halfvecs
from retrieval.vectors import halfvec_text

Source = tuple[str, list[Any]]  # a subquery selecting c.id, and its parameters


def where_clause(req: SearchRequest, owner: str = "both") -> tuple[str, list[Any]]:
    """The WHERE clause every search path shares: tenant first, then scope and filters.

    `owner` ("own" or "shared") keeps one half of a user's view (their memories, or the shared
    ones; owner_clause): the two halves as separate statements each use the (tenant, user) index,
    where their OR is estimated from the table-wide share of shared rows (other tenants' included).
    A search reads all three from one WhereParts (plan.plan_search), built once.
    """
    return where_parts(req).clause(owner)


@dataclass(frozen=True)
class WhereParts:
    """A request's WHERE conditions around the owner condition, which differs between a user's
    whole view and its two halves (owner_clause)."""

    before: tuple[Source, ...]
    user_id: str | None
    after: tuple[Source, ...]

    def clause(self, owner: str = "both") -> Source:
        parts = [
            *self.before,
            *([owner_clause(self.user_id, owner)] if self.user_id is not None else []),
            *self.after,
        ]
        return " AND ".join(sql for sql, _ in parts), [
            value for _, values in parts for value in values
        ]


def where_parts(req: SearchRequest) -> WhereParts:
    """The conditions of where_clause, the owner's left open (the one builder of a search's
    WHERE)."""
    before: list[Source] = [("c.tenant_id = %s", [req.tenant_id])]
    if req.key_workspace_id is not None:
        before.append(("c.workspace_id = %s", [req.key_workspace_id]))
    scope_sql, scope_params = scope_clause(req)
    if scope_sql:
        before.append((scope_sql, scope_params))
    if req.tags:
        before.append(("c.tags @> %s::varchar[]", [list(req.tags)]))
    if req.roles:
        before.append(("c.role = ANY(%s)", [list(req.roles)]))
    if req.kinds:
        before.append(("c.kind = ANY(%s)", [list(req.kinds)]))
    if req.agent:
        before.append(("c.agent = %s", [req.agent]))
    after: list[Source] = []
    if req.since:
        after.append(("c.created_at >= %s", [req.since]))
    if req.until:
        after.append(("c.created_at < %s", [req.until]))
    if req.history and req.as_of is not None:
        # The memory as it stood then (docs/memory-model.md#fact-history): nothing written after it,
        # and of a fact the version that was true then.
        after.append(
            (
                "c.created_at <= %s AND (c.valid_to IS NULL OR c.valid_to > %s)",
                [req.as_of, req.as_of],
            )
        )
    else:
        after.append(("c.valid_to IS NULL", []))
    return WhereParts(tuple(before), req.user_id, tuple(after))


# A conversation's own rows: its messages and the summaries of them. They belong to the
# conversation's owner (none: the tenant) and are in a request's range wherever their conversation
# is. Every other kind (notes, facts, documents) carries a tier and applies where it was made.
CONVERSATION_KINDS = ("event", "summary")
# Vector search of a scope with fewer chunks than this (a channel, a user, a small tenant) is exact
# instead of a filtered HNSW walk over the whole table (0: always HNSW). bench/README.md, run G.
EXACT_BELOW = 5_000
# In a big table a scope stays exact below √(this × the table's rows): a filtered HNSW walk costs
# more the smaller a share of the table its scope is (at 1M rows, 20k rows in scope: 18 ms of CPU
# exact, 72 for a walk that found 0.977 of the nearest 100; bench/README.md, "Many users").
EXACT_ROWS_FACTOR = 1_500
# Full text over a scope with fewer chunks than this tests the scope's rows instead of reading the
# table-wide full-text index (0: always the index). bench/README.md, stop 25.
TEXT_SCAN_BELOW = 5_000
# Full text scores a chunk of a message as the whole message: a query's words count wherever the
# message says them, against the message's length (a long answer is several chunks; its words
# spread over them). False: each chunk alone.
TEXT_PER_MESSAGE = True
_CONVERSATION_KINDS_SQL = "c.kind IN ('event', 'summary')"


def owner_clause(user_id: str, owner: str = "both") -> tuple[str, list[Any]]:
    """The sharing rule of a read for one user (the one definition; docs/memory-model.md#sharing).
    `user_id`: that user's rows, and shared knowledge (notes, facts and documents without an owner);
    never another user's, and never a conversation nobody owns (its messages and summaries are the
    tenant's). `user_id` "": a read anchored to a conversation nobody owns: the tenant's unowned
    rows, its own included. `owner` "own" or "shared" keeps one half of a user's view (see
    where_clause)."""
    if not user_id:
        return "c.user_id = ''", []
    if owner == "own":
        return "c.user_id = %s", [user_id]
    shared = f"(c.user_id = '' AND NOT {_CONVERSATION_KINDS_SQL})"
    if owner == "shared":
        return shared, []
    return f"(c.user_id = %s OR {shared})", [user_id]


def scope_clause(req: SearchRequest) -> tuple[str, list[Any]]:
    """The scope ladder (the one definition; docs/memory-semantics.md#memory-semantics).

    Anchored to a session: a tiered memory (note, fact, document) is read only where it applies
    to that session: a conversation-tier one of this conversation, a channel-tier one of its
    channel, a workspace-tier one of its workspace, an account-tier one. The scope says how far
    other conversations' messages and summaries are read: this conversation, its channel (or the
    channels asked), its workspace, the account. Never another conversation's or channel's tiered
    memories.

    Without a session (a channel, a workspace or the account named): everything in that range, and
    the wider tiers above it."""
    if req.session_id is not None:
        applies = (
            "(c.session_id = %s OR (c.tier = 'channel' AND c.channel_id = %s)"
            " OR (c.tier = 'workspace' AND c.workspace_id = %s) OR c.tier = 'account')"
        )
        params: list[Any] = [req.session_id, req.session_channel_id, req.session_workspace_id]
        if req.scope == "conversation":
            # The conversation's own rows and what applies to it.
            return applies, params
        if req.scope == "channel" and req.channel_ids is not None:
            reach, reach_params = "c.channel_id = ANY(%s)", [req.channel_ids]
        elif req.scope == "workspace" and req.workspace_ids is not None:
            reach, reach_params = "c.workspace_id = ANY(%s)", [req.workspace_ids]
        else:
            reach, reach_params = "TRUE", []
        return (
            (
                f"(({_CONVERSATION_KINDS_SQL} AND {reach}) OR (NOT {_CONVERSATION_KINDS_SQL} AND"
                f" {applies}))"
            ),
            [*reach_params, *params],
        )
    if req.scope == "channel" and req.channel_ids is not None:
        return (
            (
                "(c.channel_id = ANY(%s) OR (c.tier = 'workspace' AND c.workspace_id = ANY(%s))"
                " OR c.tier = 'account')"
            ),
            [req.channel_ids, req.workspace_ids or []],
        )
    if req.scope == "workspace" and req.workspace_ids is not None:
        return "(c.workspace_id = ANY(%s) OR c.tier = 'account')", [req.workspace_ids]
    return "", []


def scans_scope(scope_size: int) -> bool:
    """Whether a full-text match over a scope of `scope_size` chunks (the kept statistics; 0:
    unknown) tests the scope's rows instead of reading the full-text index, which holds a word's
    chunks in every tenant's rows before the scope narrows them: under
    TEXT_SCAN_BELOW chunks (a channel, a small tenant)."""
    return 0 < scope_size < TEXT_SCAN_BELOW


def row_tested(match: str) -> str:
    """`match` written so that the full-text index cannot serve it: each row of the scope is
    tested."""
    return f"({match}) IS TRUE"


def vector_source(
    vector_text: str,
    model: str,
    where: str,
    params: list[Any],
    limit: int,
    size: Source | None = None,
    parts: list[Source] | None = None,
) -> Source:
    """The `limit` nearest chunks in scope embedded by `model`.

    An HNSW index is walked for the whole table: a scope that is a small part of it (a channel, a
    user, a small tenant among many) makes a filtered walk visit many rows for few matches, even
    with iterative scans. With `size` (a scalar subquery: the scope's chunk count, from the kept
    statistics) a scope under exact_below() is searched exactly instead: its rows through the
    ordinary indexes, sorted by distance. Both branches are in the statement; the size decides,
    once, which one runs (a one-time filter on an InitPlan)."""
    hnsw = (
        f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.embedding IS NOT NULL "
        "AND c.embedding_model = %s{gate} ORDER BY c.embedding <=> %s::halfvec LIMIT %s"
    )
    threshold = exact_below()
    if size is None or threshold <= 0:
        return hnsw.format(gate=""), [*params, model, vector_text, limit]
    size_sql, size_params = size
    exact_sql: list[str] = []
    exact_params: list[Any] = []
    # `parts`: disjoint WHEREs covering `where`
    for part_where, part_params in parts or [(where, params)]:
        exact_sql.append(
            f"SELECT c.id, c.embedding FROM retrieval_chunk c WHERE {part_where} "
            f"AND c.embedding IS NOT NULL AND c.embedding_model = %s AND ({size_sql}) < %s"
        )
        exact_params += [*part_params, model, *size_params, threshold]
    exact = (
        f"SELECT e.id FROM ({' UNION ALL '.join(exact_sql)} OFFSET 0) e "
        "ORDER BY e.embedding <=> %s::halfvec LIMIT %s"
    )
    return (
        f"({hnsw.format(gate=f' AND ({size_sql}) >= %s')}) UNION ALL ({exact})",
        [
            *params,
            model,
            *size_params,
            threshold,
            vector_text,
            limit,
            *exact_params,
            vector_text,
            limit,
        ],
    )


def exact_below() -> int:
    """EXACT_BELOW, raised by EXACT_ROWS_FACTOR for the table's size (statistics.table_rows)."""
    return max(EXACT_BELOW, math.isqrt(EXACT_ROWS_FACTOR * table_rows())) if EXACT_BELOW > 0 else 0


def exact_source(req: SearchRequest, where: str, params: list[Any], limit: int) -> Source:
    """The newest chunks in scope whose text holds the query literally (mode "exact")."""
    pattern = "%" + req.query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    like = "LIKE" if req.case_sensitive else "ILIKE"
    return (
        (
            f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.text {like} %s "
            "ORDER BY c.created_at DESC, c.id DESC LIMIT %s"
        ),
        [*params, pattern, limit],
    )


@dataclass
class CandidatePool:
    """What the candidate statement returns: ranking data, text scores, vectors."""

    candidates: dict[int, Candidate]
    txt: dict[int, float]
    vectors: CandidateVectors
    # which query terms each says (TextQuery.said_sql)
    said: dict[int, int] = field(default_factory=dict)

    def merged(self, other: CandidatePool) -> CandidatePool:
        """The candidates of both (a row both found is the same row, scored alike)."""
        extra = [i for i, pk in enumerate(other.vectors.ids) if pk not in self.vectors.row]
        return CandidatePool(
            {**self.candidates, **other.candidates},
            {**self.txt, **other.txt},
            CandidateVectors(
                [*self.vectors.ids, *(other.vectors.ids[i] for i in extra)],
                np.concatenate([self.vectors.matrix, other.vectors.matrix[extra]]),
            ),
            {**self.said, **other.said},
        )


# What ranking needs of every candidate; the rest of a result row is read for the hits only
# (load_rows): names by key for 200 candidates cost more than a statement for 10 rows.
_RANK_COLUMNS = (
    "c.id, c.session_id, c.text, c.context <> '', extract(epoch FROM c.created_at)::float8, "
    "c.sequence_start, c.sequence_end, c.importance, c.kind, coalesce(c.sentence_vectors, 0) > 0, "
    "c.channel_id, c.workspace_id"
)


def fetch_candidates(
    sources: list[Source],
    model: str,
    tq: TextQuery | None,
    *,
    relevance: str | None = None,
    now: datetime | None = None,
    vector_search: bool = False,
    with_said: bool = False,
) -> CandidatePool:
    """Every candidate of `sources`, scored on full text (on every term, not only if text found
    it), with its embedding (when made by `model`), `relevance` ("decay": the decayed
    relevance; "seed002": the temporal score; both at `now`, default the current time) and,
    `with_said`, which terms it says: one statement."""
    union = " UNION ".join(f"({sql})" for sql, _ in sources)
    select = [_RANK_COLUMNS, "CASE WHEN c.embedding_model = %s THEN halfvec_send(c.embedding) END"]
    params: list[Any] = [model]
    join, join_params = "", []
    if tq is not None and tq.terms:
        per_message = TEXT_PER_MESSAGE
        score, score_params = tq.score_sql(per_message=per_message)
        select.append(f"({score})::float8")  # numeric otherwise: a Decimal per candidate to convert
        params += score_params
        said, said_params = tq.said_sql(per_message=per_message) if with_said else ("0", [])
        select.append(said)
        params += said_params
        if per_message:
            join, join_params = tq.message_sql()
    else:
        select.append("NULL, 0")
    if relevance is not None:
        term, relevance_params = (
            relevance_sql("c", now=now)
            if relevance == "decay"
            else seed002_temporal_sql("c", now=now)
        )
        select.append(term)
        params += relevance_params
    else:
        select.append("0.0")
    # The ids as an array (an InitPlan): the rows are then fetched by primary key, never by a hash
    # join over the table, whatever the planner guesses of the union's size.
    params += join_params
    sql = (
        f"SELECT {', '.join(select)} FROM retrieval_chunk c {join} WHERE c.id = ANY(ARRAY({union}))"
    )
    params += [value for _, values in sources for value in values]
    with hnsw_settings(vector_search):
        rows = select_binary_rows(sql, params)
    return _pool(rows)


def _pool(rows: list[tuple[Any, ...]]) -> CandidatePool:
    candidates: dict[int, Candidate] = {}
    txt: dict[int, float] = {}
    said: dict[int, int] = {}
    with_vector: list[int] = []
    raws: list[bytes] = []
    for (
        pk,
        session_id,
        text,
        contextual,
        created_ts,
        seq_start,
        seq_end,
        importance,
        kind,
        split,
        channel_id,
        workspace_id,
        vector,
        tscore,
        terms,
        rel,
    ) in rows:
        candidates[pk] = Candidate(
            pk,
            session_id,
            text,
            contextual,
            created_ts,
            seq_end,
            importance,
            float(rel),
            kind,
            seq_start,
            split,
            channel_id,
            workspace_id,
        )
        if vector is not None:
            with_vector.append(pk)
            raws.append(vector)
        if tscore:
            txt[pk] = float(tscore)
        if terms:
            said[pk] = terms
    return CandidatePool(
        candidates, txt, CandidateVectors(with_vector, decode_halfvecs(raws, DIMENSIONS)), said
    )


def best_sentences(
    candidates: list[Candidate], vectors: CandidateVectors, query: np.ndarray
) -> dict[int, float]:
    """The cosine of each candidate's best sentence to `query`, for the candidates split into
    sentences that have a vector of the search's model (`vectors`: a chunk's sentence vectors
    are written with its own, by the same model, and replaced with it): one statement, none when
    no candidate has any."""
    ids = [c.pk for c in candidates if c.split and c.pk in vectors.row]
    if not ids:
        return {}
    rows = select_rows(
        "SELECT chunk_id, max(1 - (embedding <=> %s::halfvec))::float8 FROM"
        f" {ChunkSentence._meta.db_table} WHERE chunk_id = ANY(%s) GROUP BY chunk_id",
        [halfvec_text(query), ids],
    )
    # NaN (a zero vector) never ranks
    return {pk: cosine for pk, cosine in rows if cosine == cosine}


def load_rows(kept: list[Candidate], model: str) -> dict[int, HitRow]:
    """The hits' result rows (the rest of what the API shows of them), as rows: one statement.
    The names come from scalar subqueries by primary key, not joins: for ten rows the planner
    weighed join orders and hashed a whole table (bench/README.md, stop 35: 1.3-1.5 ms
    against 0.65)."""
    if not kept:
        return {}
    by_id = {c.pk: c for c in kept}
    rows = select_rows(
        "SELECT c.id, to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US'),"
        f" c.role, c.tags, c.metadata::text, (SELECT s.external_id FROM {Session._meta.db_table} s"
        f" WHERE s.id = c.session_id), (SELECT ch.name FROM {Channel._meta.db_table} ch WHERE ch.id"
        f" = c.channel_id), (SELECT w.name FROM {Workspace._meta.db_table} w WHERE w.id ="
        " c.workspace_id), coalesce(c.embedding_model = %s, false), c.user_id FROM retrieval_chunk"
        " c WHERE c.id = ANY(%s)",
        [model, list(by_id)],
    )
    out = {}
    for (
        pk,
        created,
        role,
        tags,
        metadata,
        session_name,
        channel_name,
        workspace_name,
        embedded,
        user_id,
    ) in rows:
        c = by_id[pk]
        out[pk] = HitRow(
            pk,
            c.text,
            c.kind,
            c.session_id,
            session_name,
            c.sequence_start,
            c.sequence_end,
            metadata,
            datetime.fromisoformat(created).replace(tzinfo=UTC),
            role,
            tags,
            c.importance,
            channel_name,
            workspace_name,
            embedded,
            user_id,
        )
    return out


def _write_accesses(counts: Counts) -> None:
    """Add the accesses of a batch (frequently used memories decay slower) to the
    chunks' narrow ChunkAccess rows: a chunk row is never rewritten for it."""
    ChunkAccess.add([(int(pk), int(n[0])) for pk, n in counts.items()], timezone.now())


accesses = BatchedCounter("access", _write_accesses)


def reinforce(chunk_ids: list[int]) -> None:
    """Returning a memory strengthens it: its access count and time, written in batches off the
    request path (every search counts, docs/ranking.md#reinforcement; the "memory" profile ranks
    with them)."""
    if chunk_ids:
        accesses.add_many(list(chunk_ids), 1)
