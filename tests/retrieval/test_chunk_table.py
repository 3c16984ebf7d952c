"""The chunk table's indexes: every key is served by an index that leads with it, and none has a
single-column index of its own beside that (each index costs every append a write: migration 0011).
And its rows: what search reads of every candidate stays in the row (migration 0012)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from retrieval import indexing
from tests.base import make_client, make_key, make_tenant, post_events

pytestmark = pytest.mark.django_db

KEYS = ("tenant_id", "session_id", "workspace_id", "channel_id")


def _indexes() -> dict[str, list[str]]:
    """Each index of retrieval_chunk with its key columns, in order."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.relname, array_agg(a.attname ORDER BY k.n) FROM pg_index x JOIN pg_class i ON"
            " i.oid = x.indexrelid CROSS JOIN LATERAL unnest(x.indkey[0:x.indnkeyatts - 1]) WITH"
            " ORDINALITY AS k(attnum, n) JOIN pg_attribute a ON a.attrelid = x.indrelid AND"
            " a.attnum = k.attnum WHERE x.indrelid = 'retrieval_chunk'::regclass GROUP BY i.relname"
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


def test_a_long_chunk_with_its_context_keeps_its_vectors_in_the_row(settings, monkeypatch) -> None:
    """A 640-character chunk embedded with two long earlier messages is a row over TOAST's 2 kB:
    its text and context may be stored apart, its vector and tsvector not (scoped searches read
    them for every row they test)."""
    from retrieval.embedding import backfill_embeddings
    from retrieval.models import Chunk

    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 2)
    monkeypatch.setattr(indexing, "CONTEXT_FILL", 10_000)  # long chunks read their context too
    client = make_client(make_key(make_tenant("alice")))
    words = "harbour lantern orchard velvet quartz meadow cinder plume saddle thistle ".split()
    long = [" ".join(words[(i + j) % len(words)] + str(j) for j in range(110)) for i in range(4)]
    response = post_events(client, "s1", *[{"role": "user", "content": text} for text in long])
    assert response.status_code == 201, response.content
    assert backfill_embeddings()["embedded"] == Chunk.objects.count()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE pg_column_size(c.*) > 2000),"
            " count(pg_column_toast_chunk_id(embedding)),"
            " count(pg_column_toast_chunk_id(search_vector)), count(pg_column_toast_chunk_id(text))"
            " + count(pg_column_toast_chunk_id(context)) FROM retrieval_chunk c WHERE context <> ''"
        )
        rows, large, vectors_apart, tsvectors_apart, texts_apart = cursor.fetchone()
    assert rows > 3 and large + texts_apart > 0, "the rows are large enough for TOAST to act"
    assert (vectors_apart, tsvectors_apart) == (0, 0)


def test_rows_written_before_0012_are_rewritten_in_the_row_in_batches(
    settings, monkeypatch
) -> None:
    """`manage.py chunk_layout` reports the chunks whose vectors a deployment stored apart before
    migration 0012, and `--rewrite` writes them again in batches: then none is apart, and each
    vector and tsvector is the value it was (search finds the same)."""
    import hashlib
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    from retrieval.embedding import backfill_embeddings
    from retrieval.models import Chunk

    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 2)
    monkeypatch.setattr(indexing, "CONTEXT_FILL", 10_000)  # long chunks read their context too
    client = make_client(make_key(make_tenant("alice")))
    with connection.cursor() as cursor:  # the layout before 0012, for the rows written now
        cursor.execute(
            "ALTER TABLE retrieval_chunk ALTER COLUMN embedding SET STORAGE EXTERNAL, "
            "ALTER COLUMN search_vector SET STORAGE EXTENDED"
        )
    # Words that do not compress: a row with two such earlier messages stays over 2 kB after
    # compression, and TOAST moves the vector and the tsvector out.
    long = [
        " ".join(hashlib.sha256(f"{i}-{j}".encode()).hexdigest()[:8] for j in range(70))
        for i in range(5)
    ]
    # a small row
    response = post_events(
        client,
        "s1",
        {"role": "user", "content": "a short first message"},
        *[{"role": "user", "content": text} for text in long],
    )
    assert response.status_code == 201, response.content
    assert backfill_embeddings()["embedded"] == Chunk.objects.count()
    with connection.cursor() as cursor:
        # (the test's transaction holds the deferred checks)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            "ALTER TABLE retrieval_chunk ALTER COLUMN embedding SET STORAGE PLAIN, "
            "ALTER COLUMN search_vector SET STORAGE MAIN"
        )  # migration 0012
        cursor.execute(
            "SELECT id, embedding::text, search_vector::text FROM retrieval_chunk ORDER BY id"
        )
        values = cursor.fetchall()
        cursor.execute(
            "SELECT count(*) FROM retrieval_chunk WHERE pg_column_toast_chunk_id(embedding) IS NOT"
            " NULL OR pg_column_toast_chunk_id(search_vector) IS NOT NULL"
        )
        either_apart = cursor.fetchone()[0]

    def run(*args: str) -> dict:
        out = StringIO()
        call_command("chunk_layout", *args, stdout=out)
        return json.loads(out.getvalue())

    report = run()
    apart = report["before"]
    assert (
        apart["chunks"] == len(values)
        and apart["vectors_apart"] > 0
        and apart["tsvectors_apart"] > 0
    )
    assert "after" not in report and run() == report  # a report changes nothing
    rewritten = run("--rewrite", "--batch", "2")
    assert rewritten["after"] == {"chunks": len(values), "vectors_apart": 0, "tsvectors_apart": 0}
    assert rewritten["rewritten"] == either_apart < len(values)  # only those rows
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id, embedding::text, search_vector::text FROM retrieval_chunk ORDER BY id"
        )
        assert cursor.fetchall() == values
    assert run("--rewrite")["rewritten"] == 0
    with pytest.raises(CommandError):
        call_command("chunk_layout", "--rewrite", "--batch", "0")
