"""What a search reads of the statistics indexing keeps (retrieval/termstats.py): the query's
document frequencies and the scope's size, in one statement (`term_statistics`), never counting;
where the search reads more than its scope, also their frequencies in the whole range it reads.

Buckets, not filters: a channel-scoped search reads the statistics of its channels (plus the
channel-less memories of their workspaces and of the account), whatever further narrows it;
retrieval/termstats.py says why.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NamedTuple

from django.db import connection

from retrieval.search.request import SearchPlan, SearchRequest

MAX_TERMS = 32  # query lexemes considered (sorted, as before: the same 32 as in Python)


def bucket_clause(req: SearchRequest, alias: str = "s") -> tuple[str, list[Any]]:
    """The statistics rows (of `alias`) of the request's scope; see retrieval/termstats.py's
    docstring."""
    a = alias
    # A session's conversation, and its default range (its owner's whole memory, nearest first):
    # the statistics of the nearest part, its channel, as a channel's search reads them
    # (term_statistics takes the whole range's for a word the channel never says, and every
    # word's to choose full text's match terms). The choice of exact or HNSW search counts the
    # whole range instead (range_buckets, scope_size_sql).
    if req.session_id is not None and (req.scope == "conversation" or req.nearest_first):
        return (
            (
                f"({a}.channel_id = %s OR ({a}.workspace_id = %s AND {a}.channel_id = 0)"
                f" OR ({a}.workspace_id = 0 AND {a}.channel_id = 0))"
            ),
            [req.session_channel_id, req.session_workspace_id],
        )
    if req.scope == "channel" and req.channel_ids is not None:
        return (
            (
                f"({a}.channel_id = ANY(%s) OR ({a}.workspace_id = ANY(%s) AND {a}.channel_id = 0)"
                f" OR ({a}.workspace_id = 0 AND {a}.channel_id = 0))"
            ),
            [req.channel_ids, req.workspace_ids or []],
        )
    if req.scope == "workspace" and req.workspace_ids is not None:
        return (
            f"({a}.workspace_id = ANY(%s) OR ({a}.workspace_id = 0 AND {a}.channel_id = 0))",
            [req.workspace_ids],
        )
    if req.key_workspace_id is not None:
        return f"({a}.workspace_id = %s AND {a}.channel_id >= 0)", [req.key_workspace_id]
    return f"({a}.workspace_id = -1 AND {a}.channel_id = -1)", []


def range_buckets(req: SearchRequest, alias: str = "s") -> tuple[str, list[Any]]:
    """The statistics rows of the whole range the request reads: for a session's default range
    (its owner's whole memory, nearest first) every channel's, not only its own (bucket_clause)."""
    return bucket_clause(replace(req, nearest_first=False), alias)


def scope_size_sql(
    req: SearchRequest, *, owner: bool, shared_only: bool = False
) -> tuple[str, list[Any]]:
    """A scalar subquery: chunks in the request's scope, of its owner (and shared) when `owner`;
    only the shared ones (no owner) when `shared_only`. The sizes are kept by owner, not by kind:
    for one user's read they also count the conversations nobody owns, which that read leaves out
    (search.sql.owner_clause), so they are an upper bound there (it only picks exact or HNSW
    search). The owner's size picks that strategy for every row the search reads, so it counts the
    whole range (range_buckets): a session's owner in every channel, not in its channel alone."""
    buckets = range_buckets(req, "z") if owner and not shared_only else bucket_clause(req, "z")
    return size_sql(req, buckets, owner=owner, shared_only=shared_only)


def size_sql(
    req: SearchRequest, buckets: tuple[str, list[Any]], *, owner: bool, shared_only: bool = False
) -> tuple[str, list[Any]]:
    """scope_size_sql on the scope's statistics rows `buckets` (bucket_clause, alias "z")."""
    where, params = buckets
    sql = (
        "SELECT coalesce(sum(z.n), 0) FROM retrieval_scopesize z WHERE z.tenant_id = %s AND"
        f" {where}"
    )
    params = [req.tenant_id, *params]
    if shared_only:
        sql += " AND z.user_id = ''"
    elif owner and req.user_id is not None:
        sql += " AND z.user_id IN (%s, '')"
        params.append(req.user_id)
    return sql, params


_table_rows = 0  # the chunk table's row estimate, as term_statistics last read it


class TermStatistics(NamedTuple):
    """What a search's first statement reads of the kept statistics (term_statistics)."""

    lexemes: list[str]  # the query's, sorted, at most MAX_TERMS
    counts: dict[str, int]  # their document frequencies in scope
    size: int  # the scope's chunks, every owner's (BM25's collection size)
    # the chunks the search reads: for a session's default range its owner's in every channel
    # (plan.scope_size), else `size`
    read_size: int
    # Where the search reads more chunks than its scope holds (a session's default range and its
    # channel's statistics), each lexeme's frequency in the whole range (every owner's: exact for
    # a range one user wrote, more than her read otherwise); else None.
    range_counts: dict[str, int] | None = None


def term_statistics(req: SearchRequest, plan: SearchPlan) -> TermStatistics:
    """The query's lexemes, their document frequencies in scope (and in the whole range, where the
    search reads more than the scope), the scope's size and the size of what the search reads: one
    statement, no counting. The scope's statistics rows are the plan's."""
    buckets, bucket_params = plan.buckets
    scope_sql, size_params = plan.statistics_size
    df = (
        "(SELECT sum(s.n) FROM retrieval_termstat s WHERE s.tenant_id = %s AND s.lexeme = q.lexeme"
        " AND {})"
    )
    df_sql, df_params = df.format(buckets), [req.tenant_id, *bucket_params]
    # per lexeme: its frequency in scope, and in the whole range (NULL: not read, see below)
    words_sql, words_params = (
        f"SELECT q.lexeme, coalesce({df_sql}, 0), NULL::bigint FROM q",
        df_params,
    )
    read_sql, read_params = "NULL::bigint", []
    if plan.wide_buckets is not None:
        wide, wide_params = plan.wide_buckets
        wide_sql, wide_params = df.format(wide), [req.tenant_id, *wide_params]
        # A word the session's channel never says is still said elsewhere in the range (another
        # conversation of its owner): its frequency there, so that full text finds it. Where the
        # range holds more than the channel, every word's frequency there: what the search reads.
        words_sql = (
            f"SELECT q.lexeme, coalesce(nullif(d.n, 0), r.n, {wide_sql}, 0), r.n FROM q"
            f" CROSS JOIN LATERAL (SELECT {df_sql} AS n) d CROSS JOIN LATERAL (SELECT CASE WHEN"
            f" z.read > z.size THEN coalesce({wide_sql}, 0) END AS n FROM sizes z) r"
        )
        words_params = [*wide_params, *df_params, *wide_params]
        # The range's rows may lie mostly outside the channel whose statistics IDF reads.
        read_sql, read_params = f"({plan.scope_size[0]})", plan.scope_size[1]
    sql = (
        "WITH q AS (SELECT lexeme FROM (SELECT DISTINCT lexeme FROM"
        " unnest(to_tsvector('pg_catalog.english', %s))) d "
        f'ORDER BY lexeme COLLATE "C" LIMIT {MAX_TERMS}), '
        # the scope's size and the read's, once
        f"sizes AS MATERIALIZED (SELECT s.size, coalesce(r.read, s.size) AS read FROM (SELECT"
        f" ({scope_sql}) AS size) s, (SELECT {read_sql} AS read) r) "
        f"{words_sql} UNION ALL SELECT NULL, z.size, z.read FROM sizes z "
        # The chunk table's row estimate, for HNSW's ef_search (search.statements.ef_search);
        # '' is no lexeme.
        "UNION ALL SELECT '', greatest(reltuples, 0)::bigint, NULL FROM pg_class WHERE oid ="
        " 'retrieval_chunk'::regclass"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [req.query[:4000], *size_params, *read_params, *words_params])
        rows = cursor.fetchall()
    size, read_size = next((int(n), int(r)) for lexeme, n, r in rows if lexeme is None)
    global _table_rows
    _table_rows = next((int(n) for lexeme, n, _ in rows if lexeme == ""), _table_rows)
    words = [(lexeme, int(n), r) for lexeme, n, r in rows if lexeme]
    counts = {lexeme: n for lexeme, n, _ in words}
    in_range = {lexeme: int(r) for lexeme, _, r in words if r is not None}
    return TermStatistics(
        sorted(counts), counts, size, read_size, in_range if read_size > size else None
    )


def table_rows() -> int:
    """The chunk table's row estimate (pg_class.reltuples) as the last term statistics read it in
    this process (0 before any)."""
    return _table_rows
