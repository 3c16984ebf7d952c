from django.db import migrations

# What search reads of every candidate and of every row a scoped scan tests stays in the row.
LEAN = """
ALTER TABLE retrieval_chunk ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE retrieval_chunk ALTER COLUMN search_vector SET STORAGE MAIN;
"""
AS_BEFORE = """
ALTER TABLE retrieval_chunk ALTER COLUMN embedding SET STORAGE EXTERNAL;
ALTER TABLE retrieval_chunk ALTER COLUMN search_vector SET STORAGE EXTENDED;
"""


class Migration(migrations.Migration):
    """Keep a chunk's vector and its full-text vector in its row.

    A row over ~2 kB is made smaller by TOAST: with pgvector's storage for vectors (EXTERNAL) and
    the default one for tsvectors (EXTENDED), the vector (772 bytes, incompressible) and the
    tsvector were among the first values moved out of the row. A 640-character chunk with its
    conversation context (two earlier messages, up to 400 characters each) is such a row: of
    LongMemEval's 72.5k chunks written under the old layout (bench/layout.py), 64 % of the vectors
    and 78 % of the tsvectors were stored apart,
    and every distance an exact (scoped) search computed and every row a scoped full-text scan
    tested read another table for them. Now the vector is never moved out (PLAIN) and the
    tsvector only as a last resort (MAIN: compressed in the row first); the text and the context,
    which ranking reads for ~200 candidates and the results for ten, go first. By channel on
    those chunks, hybrid search in process went from p50 / p95 39.6 / 85.8 and 51.6 / 120.2 ms to
    26.6 / 37.4 and 18.0 / 25.7 ms (bench/layout.py, bench/README.md stop 30).

    Rows written before keep their layout until they are written again: `VACUUM FULL
    retrieval_chunk` rewrites them all (it locks the table while it runs).
    """

    dependencies = [
        ('retrieval', '0011_chunk_keys_in_composite_indexes'),
    ]

    operations = [
        migrations.RunSQL(LEAN, AS_BEFORE),
    ]
