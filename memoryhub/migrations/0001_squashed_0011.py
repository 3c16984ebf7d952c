"""memoryhub's migrations 0001-0011 as one (`manage.py squashmigrations memoryhub 0011`).

With 0012_squashed_0018 it replaces the old 0001-0018, five of which only merged (three here); the
two build the same schema as the old files (compared with `pg_dump --schema-only`), and each
`replaces` its old names, so a database that applied them is recognised as migrated. Two, not one,
so that no file is over 500 lines; the cut is where the old graph narrows to one node (0011, on
which 0012 alone depends). Functions and SQL of the old files are copied in below; 0003's
RunPython, a no-op both ways, is left out.
"""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.core.validators
import django.db.models.deletion
import django.utils.timezone
import memoryhub.models.notes
import memoryhub.models.sessions
import pgtrigger.compiler
import pgtrigger.migrations
import pgvector.django.extensions
from django.db import migrations, models


# From 0009_scratchpad_json_values. A stored string becomes a JSON string (Django's own cast would
# parse it as JSON and fail on plain text); back again, a JSON string becomes its text and anything
# else its JSON. A JSON null is kept as SQL NULL (Django writes None so), hence the nullable column.
SCRATCHPAD_VALUES_AS_JSON = (
    'ALTER TABLE "memoryhub_scratchpaditem" ALTER COLUMN "value" TYPE jsonb USING to_jsonb("value"), '
    'ALTER COLUMN "value" DROP NOT NULL'
)
SCRATCHPAD_VALUES_AS_TEXT = (
    'ALTER TABLE "memoryhub_scratchpaditem" ALTER COLUMN "value" TYPE varchar(240) USING '
    "(CASE WHEN jsonb_typeof(\"value\") = 'string' THEN \"value\" #>> '{}' "
    'ELSE left(coalesce("value"::text, \'\'), 240) END), ALTER COLUMN "value" SET NOT NULL'
)


# From 0005_background_lanes.
def extracted_so_far(apps, schema_editor):  # type: ignore[no-untyped-def]
    # Until now facts were extracted per append: what exists was seen (or the extractor was off).
    apps.get_model("memoryhub", "Session").objects.update(facts_extracted_to=models.F("last_sequence"))



class Migration(migrations.Migration):

    replaces = [('memoryhub', '0001_initial'), ('memoryhub', '0002_memory_primitives'), ('memoryhub', '0003_maintenance_schedules'), ('memoryhub', '0004_api_usage'), ('memoryhub', '0005_pinned_on_the_source'), ('memoryhub', '0006_event_tool_calls'), ('memoryhub', '0007_session_summary_budget'), ('memoryhub', '0008_session_ended_at'), ('memoryhub', '0009_scratchpad_json_values'), ('memoryhub', '0005_background_lanes'), ('memoryhub', '0006_merge_0005_background_lanes_0005_pinned_on_the_source'), ('memoryhub', '0010_merge_20261123_1911'), ('memoryhub', '0006_metric_samples'), ('memoryhub', '0011_merge_0006_metric_samples_0010_merge_20261123_1911')]

    dependencies = [
        ('accounts', '0001_initial'),
        ('accounts', '0002_api_key_user'),
        ('django_q', '0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more'),
    ]

    operations = [
        pgvector.django.extensions.VectorExtension(
        ),
        migrations.CreateModel(
            name='Session',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('external_id', models.CharField(help_text='Chosen by the client; unique per tenant.', max_length=200, verbose_name='id')),
                ('user_id', models.CharField(blank=True, default='', max_length=200)),
                ('persistence_key', models.CharField(blank=True, default='', max_length=500)),
                ('agent', models.CharField(blank=True, default='', max_length=200)),
                ('title', models.CharField(blank=True, default='', max_length=500)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('status', models.CharField(choices=[('active', 'Active'), ('idle', 'Idle'), ('archived', 'Archived')], default='active', max_length=10)),
                ('ref_code', models.CharField(default=memoryhub.models.sessions.new_ref_code, editable=False, max_length=11, unique=True)),
                ('last_sequence', models.BigIntegerField(default=0, editable=False)),
                ('event_count', models.IntegerField(default=0, editable=False)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('channel', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sessions', to='accounts.channel')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sessions', to='accounts.tenant')),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='sessions', to='accounts.workspace')),
            ],
            options={
                'ordering': ['-updated_at'],
            },
        ),
        migrations.CreateModel(
            name='RollingSummary',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('text', models.TextField(blank=True, default='')),
                ('epoch', models.IntegerField(default=0)),
                ('upper_sequence', models.BigIntegerField(default=0, help_text='Last event sequence the summary covers.')),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
                ('session', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='rolling_summary', to='memoryhub.session')),
            ],
            options={
                'verbose_name_plural': 'rolling summaries',
            },
        ),
        migrations.CreateModel(
            name='Event',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('sequence', models.BigIntegerField()),
                ('role', models.CharField(choices=[('user', 'User'), ('assistant', 'Assistant'), ('tool', 'Tool'), ('system', 'System')], max_length=10)),
                ('content', models.TextField(blank=True, default='')),
                ('tool_name', models.CharField(blank=True, default='', max_length=200)),
                ('tool_args', models.JSONField(blank=True, null=True)),
                ('tool_result', models.JSONField(blank=True, null=True)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('importance', models.FloatField(validators=[django.core.validators.MinValueValidator(0.0), django.core.validators.MaxValueValidator(1.0)])),
                ('idempotency_key', models.CharField(blank=True, max_length=200, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='events', to='memoryhub.session')),
            ],
            options={
                'ordering': ['session_id', 'sequence'],
            },
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['tenant', '-updated_at'], name='session_tenant_updated'),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['tenant', 'persistence_key'], name='session_tenant_pkey'),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['tenant', 'user_id'], name='session_tenant_user'),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['channel', '-updated_at'], name='session_channel_updated'),
        ),
        migrations.AddConstraint(
            model_name='session',
            constraint=models.UniqueConstraint(fields=('tenant', 'external_id'), name='session_unique_external_id'),
        ),
        migrations.AddIndex(
            model_name='event',
            index=models.Index(fields=['tenant', 'created_at'], name='event_tenant_created'),
        ),
        migrations.AddConstraint(
            model_name='event',
            constraint=models.UniqueConstraint(fields=('session', 'sequence'), name='event_unique_sequence'),
        ),
        migrations.AddConstraint(
            model_name='event',
            constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key__isnull', False)), fields=('session', 'idempotency_key'), name='event_unique_idempotency_key'),
        ),
        migrations.AddConstraint(
            model_name='event',
            constraint=models.CheckConstraint(condition=models.Q(('importance__gte', 0.0), ('importance__lte', 1.0)), name='event_importance_range'),
        ),
        migrations.AddConstraint(
            model_name='event',
            constraint=models.CheckConstraint(condition=models.Q(('sequence__gte', 1)), name='event_sequence_positive'),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='event',
            trigger=pgtrigger.compiler.Trigger(name='event_append_only', sql=pgtrigger.compiler.UpsertTriggerSql(func="RAISE EXCEPTION 'pgtrigger: Cannot update rows from % table', TG_TABLE_NAME;", hash='38a816b0c3835d30935ba6c38600ddf58227ad0a', operation='UPDATE', pgid='pgtrigger_event_append_only_29488', table='memoryhub_event', when='BEFORE')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='event',
            trigger=pgtrigger.compiler.Trigger(name='event_sequence_monotonic', sql=pgtrigger.compiler.UpsertTriggerSql(func="\n                    IF NEW.sequence <= COALESCE(\n                        (SELECT max(sequence) FROM memoryhub_event WHERE session_id = NEW.session_id), 0\n                    ) THEN\n                        RAISE EXCEPTION 'sequence % is not greater than the last of session %',\n                            NEW.sequence, NEW.session_id USING ERRCODE = 'unique_violation';\n                    END IF;\n                    RETURN NEW;\n                ", hash='4e5072b463f7d717da9da7f65e553be2a592e62b', operation='INSERT', pgid='pgtrigger_event_sequence_monotonic_21f33', table='memoryhub_event', when='BEFORE')),
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='event',
            trigger=pgtrigger.compiler.Trigger(name='event_immutable_transcript', sql=pgtrigger.compiler.UpsertTriggerSql(func="\n                    IF EXISTS (SELECT 1 FROM accounts_tenant\n                               WHERE id = OLD.tenant_id AND immutable_transcript) THEN\n                        RAISE EXCEPTION 'tenant % keeps an immutable transcript', OLD.tenant_id\n                            USING ERRCODE = 'insufficient_privilege';\n                    END IF;\n                    RETURN OLD;\n                ", hash='d0e8958aa882f58571c081be2f4762781a261492', operation='DELETE', pgid='pgtrigger_event_immutable_transcript_ec34e', table='memoryhub_event', when='BEFORE')),
        ),
        migrations.CreateModel(
            name='Scratchpad',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('version', models.IntegerField(default=0, help_text='Bumped by every write and clear.')),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('session', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='scratchpad', to='memoryhub.session')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
            options={
                'verbose_name': 'scratchpad',
            },
        ),
        migrations.CreateModel(
            name='Fact',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('scope_key', models.CharField(editable=False, max_length=100)),
                ('user_id', models.CharField(blank=True, default='', max_length=200)),
                ('content', models.TextField()),
                ('category', models.CharField(default='general', max_length=100)),
                ('key', models.CharField(blank=True, default='', max_length=200)),
                ('tier', models.CharField(choices=[('conversation', 'conversation'), ('channel', 'channel'), ('workspace', 'workspace'), ('account', 'account')], default='workspace', max_length=20)),
                ('lifetime', models.CharField(choices=[('long_term', 'long_term'), ('short_term', 'short_term'), ('conversation', 'conversation')], default='long_term', max_length=20)),
                ('source', models.CharField(default='agent', max_length=100)),
                ('importance', models.FloatField(default=0.5)),
                ('access_count', models.IntegerField(default=0)),
                ('accessed_at', models.DateTimeField(blank=True, null=True)),
                ('tags', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=64), blank=True, default=list, size=None)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('channel', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.channel')),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='facts', to='memoryhub.session')),
                ('source_session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='memoryhub.session')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
                ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.workspace')),
            ],
            options={
                'ordering': ['-updated_at'],
                'indexes': [models.Index(fields=['tenant', '-updated_at'], name='fact_tenant_updated'), models.Index(fields=['tenant', 'user_id'], name='fact_tenant_user'), models.Index(fields=['tenant', 'category', 'key'], name='fact_tenant_category_key'), models.Index(fields=['tenant', 'tier', 'lifetime'], name='fact_tenant_tier_lifetime'), django.contrib.postgres.indexes.GinIndex(fields=['tags'], name='fact_tags'), django.contrib.postgres.indexes.GinIndex(fields=['metadata'], name='fact_metadata')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('key', ''), _negated=True), fields=('tenant', 'scope_key', 'category', 'key'), name='fact_unique_scope_category_key'), models.CheckConstraint(condition=models.Q(('importance__gte', 0.0), ('importance__lte', 1.0)), name='fact_importance_range'), models.CheckConstraint(condition=models.Q(('access_count__gte', 0)), name='fact_access_count_positive')],
            },
        ),
        migrations.CreateModel(
            name='Note',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('note_id', models.CharField(default=memoryhub.models.notes.new_note_id, help_text='note-<uuid> when not given.', max_length=200)),
                ('user_id', models.CharField(blank=True, default='', max_length=200)),
                ('content', models.TextField()),
                ('source', models.CharField(blank=True, default='', max_length=100)),
                ('tags', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=64), blank=True, default=list, size=None)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('tier', models.CharField(choices=[('conversation', 'conversation'), ('channel', 'channel'), ('workspace', 'workspace'), ('account', 'account')], default='workspace', max_length=20)),
                ('importance', models.FloatField(default=0.5)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('channel', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.channel')),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='notes', to='memoryhub.session')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
                ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.workspace')),
            ],
            options={
                'ordering': ['-updated_at'],
                'indexes': [models.Index(fields=['tenant', '-updated_at'], name='note_tenant_updated'), models.Index(fields=['tenant', 'user_id'], name='note_tenant_user'), django.contrib.postgres.indexes.GinIndex(fields=['tags'], name='note_tags')],
                'constraints': [models.UniqueConstraint(fields=('tenant', 'note_id'), name='note_unique_note_id'), models.CheckConstraint(condition=models.Q(('importance__gte', 0.0), ('importance__lte', 1.0)), name='note_importance_range')],
            },
        ),
        migrations.CreateModel(
            name='ScratchpadItem',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('position', models.IntegerField()),
                ('key', models.CharField(max_length=240)),
                ('value', models.CharField(blank=True, default='', max_length=240)),
                ('scratchpad', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='items', to='memoryhub.scratchpad')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
            options={
                'ordering': ['scratchpad_id', 'position'],
                'constraints': [models.UniqueConstraint(fields=('scratchpad', 'key'), name='scratchpad_item_unique_key'), models.UniqueConstraint(fields=('scratchpad', 'position'), name='scratchpad_item_unique_position')],
            },
        ),
        migrations.CreateModel(
            name='SummaryNode',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('user_id', models.CharField(blank=True, default='', max_length=200)),
                ('level', models.CharField(choices=[('leaf', 'leaf'), ('branch', 'branch'), ('root', 'root')], max_length=10)),
                ('depth', models.IntegerField(default=0, help_text='0 for leaves, +1 per level above.')),
                ('text', models.TextField()),
                ('sequence_start', models.BigIntegerField()),
                ('sequence_end', models.BigIntegerField()),
                ('source_count', models.IntegerField(default=0, help_text='Events (leaf) or child nodes (branch, root).')),
                ('token_count', models.IntegerField(default=0)),
                ('summariser', models.CharField(blank=True, default='', max_length=100)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('channel', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.channel')),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='children', to='memoryhub.summarynode')),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='summary_nodes', to='memoryhub.session')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
                ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.workspace')),
            ],
            options={
                'ordering': ['session_id', 'depth', 'sequence_start'],
                'indexes': [models.Index(fields=['session', 'level', 'sequence_start'], name='summary_node_session_level'), models.Index(fields=['tenant', '-created_at'], name='summary_node_tenant_created'), models.Index(fields=['tenant', 'user_id'], name='summary_node_tenant_user')],
                'constraints': [models.CheckConstraint(condition=models.Q(('sequence_end__gte', models.F('sequence_start'))), name='summary_node_span')],
            },
        ),
        migrations.CreateModel(
            name='ApiUsage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('day', models.DateField()),
                ('name', models.CharField(max_length=20)),
                ('requests', models.PositiveIntegerField(default=0)),
                ('errors', models.PositiveIntegerField(default=0, help_text='Answers with a 4xx or 5xx status.')),
                ('total_ms', models.FloatField(default=0.0, help_text='Time spent answering, summed.')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
            options={
                'verbose_name': 'API usage (per day)',
                'verbose_name_plural': 'API usage (per day)',
                'indexes': [models.Index(fields=['day', 'name'], name='api_usage_day_name')],
                'constraints': [models.UniqueConstraint(fields=('tenant', 'day', 'name'), name='api_usage_unique_day')],
            },
        ),
        migrations.AddField(
            model_name='fact',
            name='importance_before_pin',
            field=models.FloatField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='fact',
            name='pinned',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='note',
            name='importance_before_pin',
            field=models.FloatField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name='note',
            name='pinned',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='event',
            name='tool_call_id',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
        migrations.AddField(
            model_name='event',
            name='tool_calls',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='session',
            name='summary_budget',
            field=models.IntegerField(blank=True, help_text='Tokens the rolling summary works to (trigger, target, its own share); empty: the server default.', null=True, validators=[django.core.validators.MinValueValidator(50), django.core.validators.MaxValueValidator(1000000)]),
        ),
        migrations.AddField(
            model_name='session',
            name='ended_at',
            field=models.DateTimeField(blank=True, editable=False, help_text='When the conversation ended: set when it goes idle or is archived, cleared if it is active again.', null=True),
        ),
        migrations.RunSQL(
            sql="UPDATE memoryhub_session SET ended_at = updated_at WHERE status <> 'active'",
            reverse_sql='',
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    sql=SCRATCHPAD_VALUES_AS_JSON,
                    reverse_sql=SCRATCHPAD_VALUES_AS_TEXT,
                ),
            ],
            state_operations=[
                migrations.AlterField(
                    model_name='scratchpaditem',
                    name='value',
                    field=models.JSONField(blank=True, default=str, null=True),
                ),
            ],
        ),
        migrations.CreateModel(
            name='StepFailure',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('step', models.CharField(help_text='session (summaries, summary tree, facts)', max_length=30)),
                ('attempts', models.IntegerField(default=0)),
                ('error', models.TextField(blank=True, default='')),
                ('failed_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('set_aside', models.BooleanField(default=False)),
            ],
        ),
        migrations.CreateModel(
            name='Worker',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('lane', models.CharField(max_length=30)),
                ('name', models.CharField(help_text='host:pid', max_length=200)),
                ('started_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('seen_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('done', models.BigIntegerField(default=0, help_text='Items done since the worker started.')),
                ('failed', models.BigIntegerField(default=0, help_text='Items that failed since the worker started.')),
                ('rate', models.FloatField(default=0.0, help_text='Items per busy second, smoothed.')),
                ('busy', models.BooleanField(default=False, help_text='Whether its last step found work.')),
            ],
        ),
        migrations.AddField(
            model_name='session',
            name='facts_extracted_to',
            field=models.BigIntegerField(default=0, editable=False),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['updated_at'], name='session_updated'),
        ),
        migrations.AddField(
            model_name='stepfailure',
            name='session',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.session'),
        ),
        migrations.AddField(
            model_name='stepfailure',
            name='tenant',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant'),
        ),
        migrations.AddConstraint(
            model_name='worker',
            constraint=models.UniqueConstraint(fields=('lane', 'name'), name='worker_unique_lane_name'),
        ),
        migrations.AddIndex(
            model_name='stepfailure',
            index=models.Index(fields=['set_aside', 'failed_at'], name='step_failure_aside'),
        ),
        migrations.AddConstraint(
            model_name='stepfailure',
            constraint=models.UniqueConstraint(fields=('session', 'step'), name='step_failure_unique'),
        ),
        migrations.RunPython(
            code=extracted_so_far,
            reverse_code=migrations.RunPython.noop,
        ),
        migrations.CreateModel(
            name='MetricSample',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('at', models.DateTimeField()),
                ('events', models.BigIntegerField(default=0, help_text='Events stored (all sessions).')),
                ('chunks', models.BigIntegerField(default=0, help_text='Chunks stored.')),
                ('pending_embedding', models.BigIntegerField(default=0, help_text='Chunks without an embedding.')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
            ],
            options={
                'indexes': [models.Index(fields=['at', 'tenant'], name='metric_sample_at')],
            },
        ),
    ]
