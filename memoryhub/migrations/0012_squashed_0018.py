"""memoryhub's migrations 0012-0018 as one (`manage.py squashmigrations memoryhub 0012 0018`).

The second half of the old 0001-0018 (see 0001_squashed_0011): the old names it replaces depend
only on each other and on the first half. Functions and SQL of the old files are copied in below.
The fact table's first unique constraint, made by the first half, is removed here as by the old
0012: its index, created at the end of that migration, exists by then.
"""

import django.db.models.deletion
import django.utils.timezone
import pgtrigger.compiler
import pgtrigger.migrations
from django.db import migrations, models


# From 0012_facts_per_owner_with_history.
def open_first_versions(apps, schema_editor):  # type: ignore[no-untyped-def]
    """Every fact stored before history existed gets its current content as its first version,
    valid since it last changed."""
    Fact = apps.get_model("memoryhub", "Fact")
    FactVersion = apps.get_model("memoryhub", "FactVersion")
    Fact.objects.filter(valid_from__isnull=True).update(valid_from=models.F("updated_at"))
    batch = []
    for fact in Fact.objects.iterator(chunk_size=2000):
        batch.append(FactVersion(tenant_id=fact.tenant_id, fact_id=fact.pk, workspace_id=fact.workspace_id,
                                 user_id=fact.user_id, tier=fact.tier, category=fact.category, key=fact.key,
                                 content=fact.content, source=fact.source, change="created",
                                 valid_from=fact.valid_from))
        if len(batch) >= 2000:
            FactVersion.objects.bulk_create(batch)
            batch = []
    FactVersion.objects.bulk_create(batch)



class Migration(migrations.Migration):

    replaces = [('memoryhub', '0012_facts_per_owner_with_history'), ('memoryhub', '0013_summary_node_time_span_and_model'), ('memoryhub', '0014_tool_call_sentences'), ('memoryhub', '0015_event_message'), ('memoryhub', '0015_event_consolidated_at'), ('memoryhub', '0016_merge_0015_event_consolidated_at_0015_event_message'), ('memoryhub', '0017_event_append_only_covers_the_kept_message'), ('memoryhub', '0015_arrivals_counted_as_they_happen'), ('memoryhub', '0016_end_users_view'), ('memoryhub', '0018_merge_arrivals_end_users_and_event_changes')]

    dependencies = [
        ('accounts', '0003_channel_description_default'),
        ('memoryhub', '0001_squashed_0011'),
    ]

    operations = [
        migrations.CreateModel(
            name='FactVersion',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('user_id', models.CharField(blank=True, default='', max_length=200)),
                ('tier', models.CharField(choices=[('conversation', 'conversation'), ('channel', 'channel'), ('workspace', 'workspace'), ('account', 'account')], default='workspace', max_length=20)),
                ('category', models.CharField(default='general', max_length=100)),
                ('key', models.CharField(blank=True, default='', max_length=200)),
                ('content', models.TextField()),
                ('source', models.CharField(default='agent', help_text='Who made this version.', max_length=100)),
                ('change', models.CharField(choices=[('created', 'created'), ('updated', 'updated'), ('merged', 'merged'), ('imported', 'imported'), ('deleted', 'deleted')], default='created', help_text='What opened this version.', max_length=10)),
                ('valid_from', models.DateTimeField()),
                ('valid_to', models.DateTimeField(blank=True, null=True)),
                ('closed_by', models.CharField(blank=True, default='', help_text='What closed it: updated, merged or deleted (empty while current).', max_length=10)),
            ],
            options={
                'ordering': ['fact_id', 'valid_from', 'id'],
            },
        ),
        migrations.RemoveConstraint(
            model_name='fact',
            name='fact_unique_scope_category_key',
        ),
        migrations.AddField(
            model_name='fact',
            name='external_id',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
        migrations.AddField(
            model_name='fact',
            name='valid_from',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='fact',
            constraint=models.UniqueConstraint(condition=models.Q(('key', ''), _negated=True), fields=('tenant', 'user_id', 'scope_key', 'category', 'key'), name='fact_unique_owner_scope_category_key'),
        ),
        migrations.AddConstraint(
            model_name='fact',
            constraint=models.UniqueConstraint(condition=models.Q(('external_id', ''), _negated=True), fields=('tenant', 'user_id', 'external_id'), name='fact_unique_owner_external_id'),
        ),
        migrations.AddField(
            model_name='factversion',
            name='fact',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='versions', to='memoryhub.fact'),
        ),
        migrations.AddField(
            model_name='factversion',
            name='tenant',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant'),
        ),
        migrations.AddField(
            model_name='factversion',
            name='workspace',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.workspace'),
        ),
        migrations.AddIndex(
            model_name='factversion',
            index=models.Index(fields=['tenant', 'fact_id', 'valid_from'], name='factversion_fact'),
        ),
        migrations.AddIndex(
            model_name='factversion',
            index=models.Index(fields=['tenant', 'user_id'], name='factversion_owner'),
        ),
        migrations.RunPython(
            code=open_first_versions,
            reverse_code=migrations.RunPython.noop,
        ),
        migrations.AddField(
            model_name='summarynode',
            name='model',
            field=models.CharField(blank=True, default='', help_text='The model that wrote it: "extractive", or the HTTP summariser\'s model.', max_length=200),
        ),
        migrations.AddField(
            model_name='summarynode',
            name='earliest_at',
            field=models.DateTimeField(blank=True, help_text='Time of the first event covered.', null=True),
        ),
        migrations.AddField(
            model_name='summarynode',
            name='latest_at',
            field=models.DateTimeField(blank=True, help_text='Time of the last event covered.', null=True),
        ),
        migrations.RunSQL(
            sql='\nUPDATE memoryhub_summarynode n SET earliest_at = s.earliest, latest_at = s.latest\nFROM (SELECT n2.id, min(e.created_at) AS earliest, max(e.created_at) AS latest\n      FROM memoryhub_summarynode n2 JOIN memoryhub_event e ON e.session_id = n2.session_id\n       AND e.sequence BETWEEN n2.sequence_start AND n2.sequence_end GROUP BY n2.id) s\nWHERE n.id = s.id\n',
            reverse_sql='',
        ),
        migrations.RunSQL(
            sql="UPDATE memoryhub_summarynode SET model = summariser WHERE summariser <> ''",
            reverse_sql='',
        ),
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
        migrations.AddField(
            model_name='event',
            name='message',
            field=models.JSONField(blank=True, null=True),
        ),
        pgtrigger.migrations.RemoveTrigger(
            model_name='event',
            name='event_append_only',
        ),
        migrations.AddField(
            model_name='event',
            name='consolidated_at',
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='session',
            name='consolidated_to',
            field=models.BigIntegerField(db_default=0, default=0, editable=False),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='event',
            trigger=pgtrigger.compiler.Trigger(name='event_append_only', sql=pgtrigger.compiler.UpsertTriggerSql(condition='WHEN (OLD."content" IS DISTINCT FROM (NEW."content") OR OLD."created_at" IS DISTINCT FROM (NEW."created_at") OR OLD."id" IS DISTINCT FROM (NEW."id") OR OLD."idempotency_key" IS DISTINCT FROM (NEW."idempotency_key") OR OLD."importance" IS DISTINCT FROM (NEW."importance") OR OLD."metadata" IS DISTINCT FROM (NEW."metadata") OR OLD."role" IS DISTINCT FROM (NEW."role") OR OLD."sequence" IS DISTINCT FROM (NEW."sequence") OR OLD."session_id" IS DISTINCT FROM (NEW."session_id") OR OLD."tenant_id" IS DISTINCT FROM (NEW."tenant_id") OR OLD."tool_args" IS DISTINCT FROM (NEW."tool_args") OR OLD."tool_call_id" IS DISTINCT FROM (NEW."tool_call_id") OR OLD."tool_calls" IS DISTINCT FROM (NEW."tool_calls") OR OLD."tool_name" IS DISTINCT FROM (NEW."tool_name") OR OLD."tool_result" IS DISTINCT FROM (NEW."tool_result"))', func="RAISE EXCEPTION 'pgtrigger: Cannot update rows from % table', TG_TABLE_NAME;", hash='a21d4f62c4c99d6f49761a626a03a583872cbb35', operation='UPDATE', pgid='pgtrigger_event_append_only_29488', table='memoryhub_event', when='BEFORE')),
        ),
        pgtrigger.migrations.RemoveTrigger(
            model_name='event',
            name='event_append_only',
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='event',
            trigger=pgtrigger.compiler.Trigger(name='event_append_only', sql=pgtrigger.compiler.UpsertTriggerSql(condition='WHEN (OLD."content" IS DISTINCT FROM (NEW."content") OR OLD."created_at" IS DISTINCT FROM (NEW."created_at") OR OLD."id" IS DISTINCT FROM (NEW."id") OR OLD."idempotency_key" IS DISTINCT FROM (NEW."idempotency_key") OR OLD."importance" IS DISTINCT FROM (NEW."importance") OR OLD."message" IS DISTINCT FROM (NEW."message") OR OLD."metadata" IS DISTINCT FROM (NEW."metadata") OR OLD."role" IS DISTINCT FROM (NEW."role") OR OLD."sequence" IS DISTINCT FROM (NEW."sequence") OR OLD."session_id" IS DISTINCT FROM (NEW."session_id") OR OLD."tenant_id" IS DISTINCT FROM (NEW."tenant_id") OR OLD."tool_args" IS DISTINCT FROM (NEW."tool_args") OR OLD."tool_call_id" IS DISTINCT FROM (NEW."tool_call_id") OR OLD."tool_calls" IS DISTINCT FROM (NEW."tool_calls") OR OLD."tool_name" IS DISTINCT FROM (NEW."tool_name") OR OLD."tool_result" IS DISTINCT FROM (NEW."tool_result"))', func="RAISE EXCEPTION 'pgtrigger: Cannot update rows from % table', TG_TABLE_NAME;", hash='33059b1fb2fada251710757e479a883b61c0aca2', operation='UPDATE', pgid='pgtrigger_event_append_only_29488', table='memoryhub_event', when='BEFORE')),
        ),
        migrations.CreateModel(
            name='Arrivals',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('minute', models.DateTimeField(help_text="The minute's start (UTC).")),
                ('events', models.PositiveIntegerField(default=0, help_text='Events appended.')),
                ('embedded', models.PositiveIntegerField(default=0, help_text='Chunks that got their embedding.')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
            options={
                'verbose_name_plural': 'arrivals',
                'indexes': [models.Index(fields=['minute'], name='arrivals_minute')],
                'constraints': [models.UniqueConstraint(fields=('tenant', 'minute'), name='arrivals_unique_minute')],
            },
        ),
        migrations.CreateModel(
            name='EndUser',
            fields=[
                ('id', models.CharField(max_length=220, primary_key=True, serialize=False)),
                ('user_id', models.CharField(max_length=200, verbose_name='end user')),
                ('sessions', models.IntegerField()),
                ('facts', models.IntegerField()),
                ('notes', models.IntegerField()),
                ('last_seen', models.DateTimeField(help_text='The latest change of one of their sessions, facts or notes.')),
            ],
            options={
                'verbose_name': 'end user',
                'db_table': 'memoryhub_enduser',
                'ordering': ['-last_seen'],
                'managed': False,
            },
        ),
        migrations.RunSQL(
            sql="\nCREATE VIEW memoryhub_enduser AS\nSELECT u.tenant_id::text || ':' || u.user_id AS id, u.tenant_id, u.user_id,\n       sum(u.sessions)::int AS sessions, sum(u.facts)::int AS facts, sum(u.notes)::int AS notes,\n       max(u.seen) AS last_seen\nFROM (\n    SELECT tenant_id, user_id, 1 AS sessions, 0 AS facts, 0 AS notes, updated_at AS seen\n    FROM memoryhub_session WHERE user_id <> ''\n    UNION ALL\n    SELECT tenant_id, user_id, 0, 1, 0, updated_at FROM memoryhub_fact WHERE user_id <> ''\n    UNION ALL\n    SELECT tenant_id, user_id, 0, 0, 1, updated_at FROM memoryhub_note WHERE user_id <> ''\n) u\nGROUP BY u.tenant_id, u.user_id;\n",
            reverse_sql='DROP VIEW memoryhub_enduser;',
        ),
    ]
