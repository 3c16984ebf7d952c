import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Drop the single-column indexes Django made for the chunk table's four keys (tenant,
    session, workspace, channel): each key leads a composite index that serves the same lookups
    (retrieval.models.Chunk). Every index of the table costs each appended chunk, and each update
    that is not heap-only (a vector written by the embedder), one more write: sixteen indexes
    become twelve."""

    dependencies = [
        ('accounts', '0003_channel_description_default'),
        ('memoryhub', '0001_squashed_0011'),
        ('retrieval', '0010_message_chunks'),
    ]

    operations = [
        migrations.AlterField(
            model_name='chunk',
            name='channel',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.channel'),
        ),
        migrations.AlterField(
            model_name='chunk',
            name='session',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.session'),
        ),
        migrations.AlterField(
            model_name='chunk',
            name='tenant',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant'),
        ),
        migrations.AlterField(
            model_name='chunk',
            name='workspace',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.workspace'),
        ),
    ]
