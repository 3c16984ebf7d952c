from django.db import migrations, models

# (retrieval.indexing.count_message_chunks over every message, as it stood when this was written.)
COUNT = """
UPDATE retrieval_chunk c SET message_chunks = m.n
FROM (SELECT s.session_id, s.sequence_start, count(*) AS n FROM retrieval_chunk s
      WHERE s.kind = 'event' GROUP BY s.session_id, s.sequence_start HAVING count(*) > 1) m
WHERE c.kind = 'event' AND c.session_id = m.session_id AND c.sequence_start = m.sequence_start
"""


class Migration(migrations.Migration):
    """How many chunks each chunk's message has: search reads the siblings of a message only
    when it has some (most messages are one chunk). Counted once here for what is stored."""

    dependencies = [
        ('retrieval', '0009_chunk_message'),
    ]

    operations = [
        migrations.AddField(
            model_name='chunk',
            name='message_chunks',
            field=models.IntegerField(db_default=1, default=1),
        ),
        migrations.RunSQL(COUNT, migrations.RunSQL.noop, elidable=True),
    ]
