"""Mode "regex": exact patterns over chunk text, bounded in time.

PostgreSQL matches (`~*`, or `~` when the request is case sensitive), with its own regex dialect
(ARE, as the docs call it), so the pattern is checked by the engine that runs it, not by Python's
`re`, whose syntax differs. The scan has no index to use and a pattern with back-references can
take exponential time over a long row, so three bounds keep one request from holding a worker:

- the pattern's length (request.REGEX_MAX_LENGTH), checked with the request (request.py);
- it must compile: an invalid pattern (or one PostgreSQL finds too complex) is `invalid_regex`;
- the statement runs under SET LOCAL statement_timeout (TIMEOUT_MS);
  PostgreSQL cancels it inside the match loop, and the request answers `regex_timeout`.

The scan is a statement of its own (not a subquery of the candidate statement,
sql.fetch_candidates), so that only it runs under the timeout; its ids become the candidate
statement's one source. The statements run in a transaction (a savepoint inside one) that is always
rolled back: they only read, and rolling back undoes the SET LOCAL (and, after a cancel, the aborted
state), so the rest of the search and the request's transaction go on as before. Results are the
newest matches first, within the same WHERE clause (tenant, workspace, scope, ownership, filters,
since/until) as every other mode.
"""

from __future__ import annotations

from typing import Any

from django.db import DatabaseError, connection, transaction

from retrieval.search.request import SearchError, SearchRequest

Source = tuple[str, list[Any]]  # as sql.Source: a subquery selecting ids, and its parameters

QUERY_CANCELED = "57014"  # statement_timeout (or a cancel request)
# How long a regex scan may run before the request answers 400 regex_timeout (statement_timeout:
# PostgreSQL cancels the scan, the worker goes on).
TIMEOUT_MS = 2000
INVALID_REGEX = "2201B"  # invalid_regular_expression: bad syntax, or "too complex"


def regex_source(req: SearchRequest, where: str, params: list[Any], limit: int) -> list[Source]:
    """The candidate source of a regex search: the matching ids (none: no source, no statement)."""
    ids = regex_candidates(req, where, params, limit)
    return [("SELECT unnest(%s::bigint[])", [ids])] if ids else []


def regex_candidates(req: SearchRequest, where: str, params: list[Any], limit: int) -> list[int]:
    """The ids of the newest `limit` chunks in scope whose text matches the pattern."""
    operator = "~" if req.case_sensitive else "~*"
    timeout_ms = TIMEOUT_MS
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL statement_timeout = {timeout_ms}")
                # Compiled once here so that a bad pattern fails even when no row is in scope
                # (PostgreSQL compiles a pattern when it first matches a row).
                cursor.execute(f"SELECT '' {operator} %s", [req.query])
                cursor.execute(
                    f"SELECT c.id FROM retrieval_chunk c WHERE {where} AND c.text {operator} %s "
                    "ORDER BY c.created_at DESC, c.id DESC LIMIT %s",
                    [*params, req.query, limit],
                )
                ids = [row[0] for row in cursor.fetchall()]
            transaction.set_rollback(True)  # read only: rolling back undoes the SET LOCAL
        return ids
    except DatabaseError as exc:
        raise _search_error(exc, timeout_ms) from exc


def _search_error(exc: DatabaseError, timeout_ms: int) -> Exception:
    """The database's refusal as the API error it means; anything else goes on as it was."""
    state = getattr(exc.__cause__, "sqlstate", None)
    if state == INVALID_REGEX:
        detail = str(exc.__cause__).splitlines()[0] if exc.__cause__ else ""
        return SearchError(
            "invalid_regex", f"The pattern is not a valid regular expression ({detail})."
        )
    if state == QUERY_CANCELED:
        return SearchError(
            "regex_timeout",
            f"The pattern ran longer than {timeout_ms} ms over the memories in scope. Narrow the"
            " search (session, channel, since/until, kinds) or simplify the pattern"
            " (back-references such as \\1 are the usual cause).",
            {"timeout_ms": timeout_ms},
        )
    return exc
