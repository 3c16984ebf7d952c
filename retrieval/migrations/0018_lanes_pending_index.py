# The embed lane's one definition of its work (ChunkQuerySet.embedding_waiting) leaves out a
# superseded fact's chunks; its partial index now has the same condition. Superseded chunks that were
# never embedded are set aside with their reason, as retire_searchable does from now on.

from django.db import migrations, models

SET_ASIDE = """
    UPDATE retrieval_chunk SET embedding_error = 'superseded before it was embedded'
    WHERE embedding IS NULL AND valid_to IS NOT NULL AND embedding_error = ''
"""


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0017_rank_summary_chunk_dates'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='chunk',
            name='chunk_pending_embedding',
        ),
        migrations.AddIndex(
            model_name='chunk',
            index=models.Index(condition=models.Q(('embedding__isnull', True), ('valid_to__isnull', True)), fields=['tenant', 'id'], name='chunk_pending_embedding'),
        ),
        migrations.RunSQL(SET_ASIDE, migrations.RunSQL.noop),
    ]
