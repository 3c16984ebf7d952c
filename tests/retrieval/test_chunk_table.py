"""The chunk table's indexes: every key is served by an index that leads with it, and none has a
single-column index of its own beside that (each index costs every append a write: migration 0011)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

pytestmark = pytest.mark.django_db

KEYS = ("tenant_id", "session_id", "workspace_id", "channel_id")


def _indexes() -> dict[str, list[str]]:
    """Each index of retrieval_chunk with its key columns, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.relname, array_agg(a.attname ORDER BY k.n) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid "
            "CROSS JOIN LATERAL unnest(x.indkey[0:x.indnkeyatts - 1]) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum "
            "WHERE x.indrelid = 'retrieval_chunk'::regclass GROUP BY i.relname"
        )
        return dict(cursor.fetchall())


def test_no_key_has_a_single_column_index_beside_a_composite_one() -> None:
    columns = list(_indexes().values())
    for key in KEYS:
        assert [key] not in columns
        assert any(c[0] == key and len(c) > 1 for c in columns), key


@pytest.mark.parametrize("key", KEYS)
def test_a_lookup_by_each_key_reads_an_index(key: str) -> None:
    """What a cascade (a tenant, session, workspace or channel deleted) and the scopes read."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN SELECT id FROM retrieval_chunk WHERE {key} = 1")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Seq Scan" not in plan and "Index" in plan, plan
