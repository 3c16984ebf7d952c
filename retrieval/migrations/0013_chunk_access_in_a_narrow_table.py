import django.db.models.deletion
from django.db import migrations, models

# Django's foreign keys cascade in Python; chunks are also deleted by statements of their own
# (forget, prune, a session's deletion): the database deletes their access rows.
FOREIGN_KEY = """
ALTER TABLE retrieval_chunkaccess ADD CONSTRAINT retrieval_chunkaccess_chunk_fk
    FOREIGN KEY (chunk_id) REFERENCES retrieval_chunk (id) ON DELETE CASCADE;
"""
NO_FOREIGN_KEY = "ALTER TABLE retrieval_chunkaccess DROP CONSTRAINT retrieval_chunkaccess_chunk_fk;"
# Only chunks search has returned have a row.
MOVE = """
INSERT INTO retrieval_chunkaccess (chunk_id, access_count, accessed_at)
SELECT id, access_count, accessed_at FROM retrieval_chunk WHERE access_count <> 0 OR accessed_at IS NOT NULL;
"""
MOVE_BACK = """
UPDATE retrieval_chunk c SET access_count = a.access_count, accessed_at = a.accessed_at
FROM retrieval_chunkaccess a WHERE a.chunk_id = c.id;
"""


class Migration(migrations.Migration):
    """A chunk's access count and last access in a narrow table of their own (ChunkAccess).

    Search reinforces what it returns: each web worker adds the hits' accesses every 10 s. In the
    chunk row, each was a new version of a wide row (text, context, vector, tsvector) that every
    index of the table had to point to again when its page was full, the HNSW graph and the
    full-text index included, and it fired the term statistics' update trigger. After a loaded
    table (COPY, a restore, VACUUM FULL) or under load, 500 such updates took 250–540 ms of the
    database's time (bench/README.md, stop 29). An access row is three numbers under one index.
    Dropping the two columns is a change to the catalogue only; copying the counts reads the
    chunk table once.
    """

    dependencies = [
        ('retrieval', '0012_chunk_vectors_kept_in_the_row'),
    ]

    operations = [
        migrations.CreateModel(
            name='ChunkAccess',
            fields=[
                ('chunk', models.OneToOneField(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, primary_key=True, related_name='access', serialize=False, to='retrieval.chunk')),
                ('access_count', models.IntegerField(default=0)),
                ('accessed_at', models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.RunSQL(FOREIGN_KEY, NO_FOREIGN_KEY),
        migrations.RunSQL(MOVE, MOVE_BACK),
        migrations.RemoveField(
            model_name='chunk',
            name='access_count',
        ),
        migrations.RemoveField(
            model_name='chunk',
            name='accessed_at',
        ),
    ]
