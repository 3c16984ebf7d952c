"""How search's raw statements run: all rows of one statement (select_rows), or with server-side
binding and binary rows for the candidate statement (select_binary_rows, NumberedCursor), the
HNSW settings around a vector query (ef_search, hnsw_settings), and a statement on a connection of
its own beside the caller's (apart, apart_possible). The statements themselves are in sql.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

import psycopg
from django.conf import settings
from django.db import connection, transaction

from memoryhub.plumbing.threads import ProcessPool
from retrieval.search import weights
from retrieval.search.statistics import table_rows


def select_rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """All rows of one raw statement (search reads ids and scores, not model instances)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def apart_possible() -> bool:
    """Whether a statement may run on a connection of its own while this thread's runs another:
    where connections come from a pool (`manage.py run`'s web workers: one is taken for the
    statement and given back after it) that has one to spare without waiting for another request
    to give its own back (one idle, or room for a new one, and no request waiting), and this
    thread is in no transaction (another connection would not see what it wrote, nor read within
    its snapshot)."""
    pool = connection.pool
    if pool is None or connection.in_atomic_block:
        return False
    stats = pool.get_stats()
    return stats["requests_waiting"] == 0 and (
        stats["pool_available"] > 0 or stats["pool_size"] < stats["pool_max"]
    )


_apart = ProcessPool(1, "search-apart")
T = TypeVar("T")


def apart(work: Callable[[], T]) -> Future[T]:
    """`work` in a thread of its own, its statements on that thread's connection, given back to
    the pool once it is done (apart_possible says when this may be used)."""

    def run() -> T:
        try:
            return work()
        finally:
            connection.close()

    return _apart.get().submit(run)


def select_binary_rows(sql: str, params: list[Any] | None) -> list[tuple[Any, ...]]:
    """All rows of one raw statement, its parameters bound by the server and its rows sent in
    PostgreSQL's binary formats. For the candidate statement, whose rows carry a vector each
    (halfvec_send, 768 bytes), text rows send each vector as 1,536 hex digits to decode, and
    binding on the client quotes its hundred-odd parameters into the statement's text
    (bench/README.md, stop 36).

    Django's cursors bind on the client (psycopg's ClientCursor cannot return binary rows), so the
    psycopg cursor is made here and wrapped as Django wraps its own (its errors are Django's, its
    execute wrappers run). Where Django logs queries, the statement is logged with its parameters
    written in, as Django logs its own, marked `"binary": True` (bench/search.py re-runs it so).
    Never prepared on the server: Django's connections have no prepare threshold.

    A statement whose only `%` are its `%s` placeholders goes to a raw cursor that numbers them
    ($1, $2, ...) as it executes (NumberedCursor): psycopg parses a statement over 4 kB or 50
    parameters (the candidate statements are both) on every execution, 0.36 ms each against 0.07
    (bench/README.md, stop 37). Execute wrappers and the log see the statement as written."""
    connection.ensure_connection()
    numbered = params is not None and only_placeholders(sql)
    raw = (NumberedCursor if numbered else psycopg.Cursor)(connection.connection)
    raw.format = psycopg.pq.Format.BINARY
    started = time.monotonic()
    with connection.make_cursor(raw) as cursor:
        try:
            cursor.execute(sql, params)
            return cursor.fetchall()
        finally:
            if connection.queries_logged:
                connection.queries_log.append(
                    {
                        "sql": connection.ops.compose_sql(sql, params),
                        "binary": True,
                        "time": f"{time.monotonic() - started:.3f}",
                    }
                )


def only_placeholders(sql: str) -> bool:
    """Whether every `%` of `sql` begins a `%s` placeholder (no `%%`, no named or typed one)."""
    return sql.count("%") == sql.count("%s")


def native_placeholders(sql: str) -> str:
    """`sql`'s `%s` placeholders written as PostgreSQL's own, $1, $2, ... in order
    (only_placeholders)."""
    parts = sql.split("%s")
    return "".join(f"{part}${n}" for n, part in enumerate(parts[:-1], start=1)) + parts[-1]


class NumberedCursor(psycopg.RawCursor):
    """A raw cursor (server-side binding, no parse of the query by psycopg) given a statement with
    Django's `%s` placeholders, which it numbers as it executes."""

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> NumberedCursor:
        return super().execute(native_placeholders(query), params, **kwargs)


def _startup_options() -> str | None:
    """The options connections start with, when they start with search's HNSW settings
    (settings.py; off behind a pooler that refuses startup options); else None."""
    options = str(connection.settings_dict.get("OPTIONS", {}).get("options", ""))
    return options if "-c hnsw.iterative_scan=relaxed_order" in options else None


def hnsw_preset(ef_search: int, options: str | None) -> bool:
    """Whether this connection runs with these HNSW settings, so that no SET, and no transaction
    for a SET LOCAL, is needed: it started with them (`options`, _startup_options: settings.py
    passes search's as startup options), or an earlier search SET this ef_search for the rest of
    its life (hnsw_settings)."""
    if options is None:
        return False
    raw = connection.connection
    current = _connection_ef.get(raw) if raw is not None else None
    if current is None:
        return f"-c hnsw.ef_search={ef_search}" in options
    return current == ef_search


# The ef_search an earlier search SET on a connection (the driver's connection: a new one starts
# from the startup options again).
_connection_ef: WeakKeyDictionary[Any, int] = WeakKeyDictionary()


def ef_search() -> int:
    """HNSW's ef_search for a search: settings.HNSW_EF_SEARCH, raised to one per
    weights.HNSW_ROWS_PER_EF rows of the chunk table. The share of the true nearest neighbours a
    walk finds falls as the graph grows (bench/README.md, graphs built with ef_construction 64:
    recall@100 0.96 at 10k rows, 0.93 at 100k, 0.71 at 1M with ef_search 100; 0.95 at 1M with
    1,000; built with 128, one user's 1M: 0.98 with 1,000). The table's size is the estimate the
    last term statistics read (text and hybrid searches; no statement of its own)."""
    floor = int(settings.HNSW_EF_SEARCH)
    per = int(weights.HNSW_ROWS_PER_EF)
    if per <= 0:
        return floor
    return max(floor, min(int(table_rows() // per), 1000))  # pgvector's ceiling: 1000


@contextmanager
def hnsw_settings(needed: bool) -> Iterator[None]:
    """ef_search, and iterative scans (pgvector 0.8: filtered HNSW queries must not return too
    few rows), for the statement run inside: set at connection start. An ef_search other than
    the startup one (a big table raises it, see ef_search) is SET once for the connection's life
    when the connection started with search's settings and no transaction is open (a SET inside
    one is undone by a rollback), else SET LOCAL around the statement (behind a pooler that
    refuses startup options, a session's SET would reach other clients)."""
    if not needed:
        yield
        return
    ef = ef_search()
    options = _startup_options()
    if hnsw_preset(ef, options):
        yield
        return
    if options is not None and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(f"SET hnsw.ef_search = {ef}")
        _connection_ef[connection.connection] = ef
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = relaxed_order"
        )
        yield
