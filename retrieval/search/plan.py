"""plan_search: where one search reads (request.SearchPlan), resolved once per request and read
by every statement of it: the engine's candidate subqueries, the term statistics and context
assembly.
Nothing here is ranking; the conditions themselves are defined in sql.py (the WHERE clause, the
owner and scope rules) and statistics.py (the scope's statistics rows and sizes)."""

from __future__ import annotations

from retrieval.search import sql as search_sql
from retrieval.search.request import SearchPlan, SearchRequest
from retrieval.search.statistics import bucket_clause, range_buckets, scope_size_sql


def plan_search(req: SearchRequest) -> SearchPlan:
    """The plan of `req`: its WHERE conditions built once, its owner halves and sizes from them."""
    parts = search_sql.where_parts(req)
    halves = None
    if req.user_id is not None:
        shared_sql, shared_params = scope_size_sql(req, owner=False, shared_only=True)
        shared_where, shared_where_params = parts.clause("shared")
        halves = (
            parts.clause("own"),
            (f"{shared_where} AND ({shared_sql}) > 0", [*shared_where_params, *shared_params]),
        )
    return SearchPlan(
        where=parts.clause(),
        halves=halves,
        buckets=bucket_clause(req),
        wide_buckets=range_buckets(req) if req.nearest_first else None,
        # Exact or HNSW search is chosen for every row the search reads (scope_size_sql).
        scope_size=scope_size_sql(req, owner=True),
        statistics_size=scope_size_sql(req, owner=False),
    )
