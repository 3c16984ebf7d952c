"""Typo tolerance for a word's first letter (docs/ranking.md#typo-tolerance): the statistics' lexemes by their
letters after the first (retrieval.search.fuzzy.vocabulary_candidates)."""

import django.db.models.functions.comparison
import django.db.models.functions.text
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('retrieval', '0015_superseded_fact_chunks'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='termstat',
            index=models.Index(models.F('tenant_id'), django.db.models.functions.comparison.Collate(django.db.models.functions.text.Substr('lexeme', 2), 'C'), include=('lexeme', 'workspace_id', 'channel_id', 'n'), name='termstat_tail'),
        ),
    ]
