from django.db import migrations, models


class Migration(migrations.Migration):
    """The chunks of one message by (session, first sequence): full text scores a chunk as its
    whole message (retrieval.search.sql.TEXT_PER_MESSAGE)."""

    dependencies = [
        ('retrieval', '0008_search_statistics'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='chunk',
            index=models.Index(condition=models.Q(('kind', 'event')), fields=['session', 'sequence_start'],
                               name='chunk_message'),
        ),
    ]
