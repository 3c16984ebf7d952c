"""SQL pieces every consolidation step shares: the scope of a memory, pinned and short-term."""

from __future__ import annotations

from typing import Any

from django.db import connection

PINNED = "(c.metadata @> '{\"pinned\": true}'::jsonb)"
# A fact's superseded chunks (valid_to set) are history (docs/memory-model.md#fact-history): never
# scored, promoted or pruned.
SHORT_TERM = "c.lifetime <> 'long_term' AND c.valid_to IS NULL"


def scope_sql(alias: str) -> str:
    """The scope a memory is capped and de-duplicated in: its session, channel, workspace or
    account."""
    a = alias
    return (
        f"(CASE {a}.tier WHEN 'conversation' THEN 's' || COALESCE({a}.session_id, 0) "
        f"WHEN 'channel' THEN 'c' || COALESCE({a}.channel_id, 0) "
        f"WHEN 'workspace' THEN 'w' || COALESCE({a}.workspace_id, 0) ELSE 'a' END)"
    )


def fetch(sql: str, params: list[object]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
