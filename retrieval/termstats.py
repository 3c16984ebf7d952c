"""Search statistics kept at indexing time, so that a search never counts.

BM25 needs, for the query's words, how many chunks in scope say each (document frequency) and
how many chunks the scope holds; the choice between an HNSW and an exact vector search needs the
size of the scope too. Counting them per query cost 5–12 ms at 100k chunks. Instead, statement
triggers on retrieval_chunk append the change of every INSERT, DELETE and UPDATE to
- retrieval_termstat (TermStat): chunks saying each lexeme in their own words, per (tenant,
  workspace, channel) and in a tenant-wide total;
- retrieval_scopesize (ScopeSize): chunks per (tenant, workspace, channel, owner), and per
  (tenant, owner) in a tenant-wide total.
A search reads the sums in its first statement (retrieval/search/statistics.py); this module
keeps them (the triggers, compaction, a rebuild).

Buckets, not filters: the statistics of a channel-scoped search are those of its channels (plus
the channel-less memories of their workspaces and of the account), whatever tags, roles, kinds
or dates further narrow it. IDF describes the vocabulary of a scope; a filter that keeps a tenth
of it does not make a word ten times rarer. A conversation scope uses its channel's statistics:
a ten-message conversation is too small a sample for IDF. Sizes also know the owner, for the
vector strategy of a search limited to one user (search.sql.vector_source).

Writers only append delta rows (never update one), so concurrent indexing neither waits on a
statistics row nor deadlocks over one. `compact` folds each key's deltas into one row; the
embedding backfill cadence and the indexing task call `maybe_compact`; forgetting a user folds
its tenant's at once (`fold_tenant`).
"""

from __future__ import annotations

import time

import pgtrigger
from django.db import connection, transaction

ALL = -1  # workspace_id and channel_id of the tenant-wide totals
NONE = 0  # workspace_id / channel_id of chunks without one
COMPACT_SECONDS = 30.0  # a process folds deltas at most this often

# One statement over the transition table(s): `r` has a column `n` = +1 (new row) or −1 (old row).
_DELTA = """
    WITH r AS ({rows}),
    words AS (
        INSERT INTO retrieval_termstat (tenant_id, workspace_id, channel_id, lexeme, n)
        SELECT r.tenant_id, k.workspace_id, k.channel_id, w.lexeme, sum(r.n)
        FROM r CROSS JOIN LATERAL unnest(ts_filter(r.search_vector, '{{a}}')) w
        CROSS JOIN LATERAL (VALUES (coalesce(r.workspace_id, 0), coalesce(r.channel_id, 0)), (-1, -1))
            AS k(workspace_id, channel_id)
        GROUP BY 1, 2, 3, 4 HAVING sum(r.n) <> 0
    )
    INSERT INTO retrieval_scopesize (tenant_id, workspace_id, channel_id, user_id, n)
    SELECT r.tenant_id, k.workspace_id, k.channel_id, r.user_id, sum(r.n)
    FROM r CROSS JOIN LATERAL (VALUES (coalesce(r.workspace_id, 0), coalesce(r.channel_id, 0)), (-1, -1))
        AS k(workspace_id, channel_id)
    GROUP BY 1, 2, 3, 4 HAVING sum(r.n) <> 0;
    RETURN NULL;
"""  # noqa: E501
_COLUMNS = "id, tenant_id, workspace_id, channel_id, user_id, search_vector"
# An UPDATE counts only for rows whose words, bucket or owner changed (embedding writes change
# none).
_CHANGED = (
    "SELECT o.id FROM old_rows o JOIN new_rows n USING (id) WHERE o.search_vector IS DISTINCT FROM"
    " n.search_vector OR o.tenant_id <> n.tenant_id OR o.workspace_id IS DISTINCT FROM"
    " n.workspace_id OR o.channel_id IS DISTINCT FROM n.channel_id OR o.user_id <> n.user_id"
)

TERM_STAT_TRIGGERS = [
    pgtrigger.Trigger(
        name="chunk_term_stats_insert",
        when=pgtrigger.After,
        operation=pgtrigger.Insert,
        level=pgtrigger.Statement,
        referencing=pgtrigger.Referencing(new="new_rows"),
        func=_DELTA.format(rows=f"SELECT {_COLUMNS}, 1 AS n FROM new_rows"),
    ),
    pgtrigger.Trigger(
        name="chunk_term_stats_delete",
        when=pgtrigger.After,
        operation=pgtrigger.Delete,
        level=pgtrigger.Statement,
        referencing=pgtrigger.Referencing(old="old_rows"),
        func=_DELTA.format(rows=f"SELECT {_COLUMNS}, -1 AS n FROM old_rows"),
    ),
    pgtrigger.Trigger(
        name="chunk_term_stats_update",
        when=pgtrigger.After,
        operation=pgtrigger.Update,
        level=pgtrigger.Statement,
        referencing=pgtrigger.Referencing(old="old_rows", new="new_rows"),
        func=_DELTA.format(
            rows=(
                f"SELECT {_COLUMNS}, 1 AS n FROM new_rows WHERE id IN ({_CHANGED}) "
                f"UNION ALL SELECT {_COLUMNS}, -1 AS n FROM old_rows WHERE id IN ({_CHANGED})"
            )
        ),
    ),
]


# --- upkeep ----------------------------------------------------------------------------------

_COMPACT = """
WITH keys AS (SELECT DISTINCT {key} FROM {table} WHERE delta{tenant}),
gone AS (
    DELETE FROM {table} t USING keys k WHERE {join}
    RETURNING {returning}, t.n
)
INSERT INTO {table} ({key}, n, delta)
SELECT {key}, sum(n), false FROM gone GROUP BY {key} HAVING sum(n) <> 0
"""
_KEYS = {
    "retrieval_termstat": ("tenant_id", "workspace_id", "channel_id", "lexeme"),
    "retrieval_scopesize": ("tenant_id", "workspace_id", "channel_id", "user_id"),
}
_LOCK_KEY = 0x7465726D  # "term": one compaction at a time across processes
_last_compacted = 0.0


def _compact_sql(table: str, *, one_tenant: bool = False) -> str:
    """The folding statement of a table: of every tenant, or of the tenant given as its
    parameter."""
    key = _KEYS[table]
    return _COMPACT.format(
        table=table,
        key=", ".join(key),
        join=" AND ".join(f"t.{c} = k.{c}" for c in key),
        returning=", ".join(f"t.{c}" for c in key),
        tenant=" AND tenant_id = %s" if one_tenant else "",
    )


def compact() -> int:
    """Fold every key's delta rows into one row (keys that sum to 0 vanish). Returns the rows
    written, or -1 when another process is compacting. Readers see the same sums before and after:
    the rows deleted are exactly those summed, in one statement per table."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [_LOCK_KEY])
        if not cursor.fetchone()[0]:
            return -1
        written = 0
        for table in _KEYS:
            cursor.execute(_compact_sql(table))
            written += cursor.rowcount
        return written


def fold_tenant(tenant_id: int) -> int:
    """Fold one tenant's deltas now, in the caller's transaction, waiting for a compaction under
    way. Forgetting a user calls it: the words (and the user id) only their chunks held sum to 0
    and leave the statistics with the user's rows, not at the next compaction. Returns the rows
    written."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        written = 0
        for table in _KEYS:
            cursor.execute(_compact_sql(table, one_tenant=True), [tenant_id])
            written += cursor.rowcount
        return written


def maybe_compact() -> int | None:
    """compact(), at most every COMPACT_SECONDS in this process (cheap to call after each task)."""
    global _last_compacted
    now = time.monotonic()
    if now - _last_compacted < COMPACT_SECONDS:
        return None
    _last_compacted = now
    return compact()


REBUILD = """
WITH words AS (
    INSERT INTO retrieval_termstat (tenant_id, workspace_id, channel_id, lexeme, n, delta)
    SELECT c.tenant_id, k.workspace_id, k.channel_id, w.lexeme, count(*), false
    FROM retrieval_chunk c CROSS JOIN LATERAL unnest(ts_filter(c.search_vector, '{a}')) w
    CROSS JOIN LATERAL (VALUES (coalesce(c.workspace_id, 0), coalesce(c.channel_id, 0)), (-1::bigint, -1::bigint))
        AS k(workspace_id, channel_id)
    GROUP BY 1, 2, 3, 4
)
INSERT INTO retrieval_scopesize (tenant_id, workspace_id, channel_id, user_id, n, delta)
SELECT c.tenant_id, k.workspace_id, k.channel_id, c.user_id, count(*), false
FROM retrieval_chunk c
CROSS JOIN LATERAL (VALUES (coalesce(c.workspace_id, 0), coalesce(c.channel_id, 0)), (-1::bigint, -1::bigint))
    AS k(workspace_id, channel_id)
GROUP BY 1, 2, 3, 4
"""  # noqa: E501


def rebuild() -> None:
    """Recount every statistic from the chunks (an operator's repair; the bench after a bulk load).
    Locks the statistics tables: writers that index meanwhile wait, so nothing is lost."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("LOCK TABLE retrieval_termstat, retrieval_scopesize IN EXCLUSIVE MODE")
        cursor.execute("DELETE FROM retrieval_termstat")
        cursor.execute("DELETE FROM retrieval_scopesize")
        cursor.execute(REBUILD)
