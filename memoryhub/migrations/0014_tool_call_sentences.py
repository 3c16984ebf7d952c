"""Tool-call events described by a model in a sentence (issue 41 row 5, seed 002 v5)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0003_channel_description_default'),
        ('memoryhub', '0013_summary_node_time_span_and_model'),
    ]

    operations = [
        migrations.CreateModel(
            name='ToolCallSentence',
            fields=[
                ('event', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='tool_sentence', serialize=False, to='memoryhub.event')),
                ('text', models.TextField()),
                ('model', models.CharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
        ),
    ]
