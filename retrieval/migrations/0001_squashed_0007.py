"""retrieval's migrations 0001-0007 as one (`manage.py squashmigrations retrieval 0001 0007`).

One merge-only migration is gone with them; this one builds the same schema (compared with `pg_dump
--schema-only` against the old files) and `replaces` every old name, so a database that applied
them is recognised as migrated. The functions of the old files are copied in below.
"""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.deletion
import django.utils.timezone
import pgtrigger.compiler
import pgtrigger.migrations
import pgvector.django.halfvec
import pgvector.django.indexes
from django.db import migrations, models


# From 0005_rebuild_event_chunks.
def rebuild(apps, schema_editor):  # type: ignore[no-untyped-def]
    from retrieval.indexing import rebuild_event_chunks

    rebuild_event_chunks()


class Migration(migrations.Migration):

    replaces = [('retrieval', '0001_initial'), ('retrieval', '0002_scope_indexes'), ('retrieval', '0003_weighted_search_vector'), ('retrieval', '0004_document_user'), ('retrieval', '0005_rebuild_event_chunks'), ('retrieval', '0006_index_identifier_parts'), ('retrieval', '0006_document_identity_per_workspace'), ('retrieval', '0007_merge_20261123_1911')]

    dependencies = [
        ('accounts', '0001_initial'),
        ('memoryhub', '0001_squashed_0011'),
    ]

    operations = [
        migrations.CreateModel(
            name='Document',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('source_uri', models.CharField(max_length=2000)),
                ('content_hash', models.CharField(max_length=64)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('chunk_count', models.IntegerField(default=0)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.session')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
                ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.workspace')),
            ],
        ),
        migrations.CreateModel(
            name='Chunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('event', 'event'), ('note', 'note'), ('fact', 'fact'), ('summary', 'summary'), ('document', 'document')], default='event', max_length=10)),
                ('source_id', models.CharField(blank=True, default='', max_length=200)),
                ('tier', models.CharField(choices=[('conversation', 'conversation'), ('channel', 'channel'), ('workspace', 'workspace'), ('account', 'account')], default='conversation', max_length=12)),
                ('lifetime', models.CharField(choices=[('long_term', 'long_term'), ('short_term', 'short_term'), ('conversation', 'conversation')], default='conversation', max_length=12)),
                ('user_id', models.CharField(blank=True, default='', max_length=200)),
                ('role', models.CharField(blank=True, default='', max_length=10)),
                ('agent', models.CharField(blank=True, default='', max_length=200)),
                ('tags', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=64), blank=True, default=list, size=None)),
                ('sequence_start', models.BigIntegerField(blank=True, null=True)),
                ('sequence_end', models.BigIntegerField(blank=True, null=True)),
                ('text', models.TextField()),
                ('context', models.TextField(blank=True, default='')),
                ('content_hash', models.CharField(max_length=64)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('importance', models.FloatField(default=0.5)),
                ('access_count', models.IntegerField(default=0)),
                ('accessed_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now, help_text='When the source was written.')),
                ('indexed_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('embedding', pgvector.django.halfvec.HalfVectorField(blank=True, dimensions=384, null=True)),
                ('embedding_model', models.CharField(blank=True, default='', max_length=100)),
                ('embedding_error', models.TextField(blank=True, default='')),
                ('embedding_attempts', models.IntegerField(default=0)),
                ('search_vector', django.contrib.postgres.search.SearchVectorField(blank=True, editable=False, null=True)),
                ('channel', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.channel')),
                ('session', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='memoryhub.session')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.tenant')),
                ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='accounts.workspace')),
            ],
            options={
                'indexes': [models.Index(fields=['tenant', 'kind', 'source_id'], name='chunk_tenant_source'), models.Index(fields=['session', 'content_hash'], name='chunk_session_hash'), models.Index(fields=['tenant', 'created_at'], name='chunk_tenant_created'), models.Index(fields=['channel', 'created_at'], name='chunk_channel_created'), models.Index(condition=models.Q(('embedding__isnull', True)), fields=['tenant', 'id'], name='chunk_pending_embedding'), django.contrib.postgres.indexes.GinIndex(fields=['tags'], name='chunk_tags'), django.contrib.postgres.indexes.GinIndex(fastupdate=False, fields=['search_vector'], name='chunk_search_vector'), pgvector.django.indexes.HnswIndex(ef_construction=64, fields=['embedding'], m=16, name='chunk_embedding_hnsw', opclasses=['halfvec_cosine_ops'])],
                'constraints': [models.CheckConstraint(condition=models.Q(('kind__in', ('event', 'note', 'fact', 'summary', 'document'))), name='chunk_kind_valid')],
            },
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='chunk_search_vector', sql=pgtrigger.compiler.UpsertTriggerSql(execute='tsvector_update_trigger("search_vector", "pg_catalog.english", "text")', func='', hash='7233747c47a44e4ac7dc803d537315c7fdcb2796', operation='INSERT OR UPDATE OF "text"', pgid='pgtrigger_chunk_search_vector_f934a', table='retrieval_chunk', when='BEFORE')),
        ),
        migrations.AddConstraint(
            model_name='document',
            constraint=models.UniqueConstraint(fields=('tenant', 'source_uri'), name='document_unique_uri'),
        ),
        migrations.AddIndex(
            model_name='chunk',
            index=models.Index(fields=['workspace', 'tier'], name='chunk_workspace_tier'),
        ),
        migrations.AddIndex(
            model_name='chunk',
            index=models.Index(fields=['tenant', 'tier'], name='chunk_tenant_tier'),
        ),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='chunk_search_vector',
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='chunk_search_vector', sql=pgtrigger.compiler.UpsertTriggerSql(func="\n                    NEW.search_vector :=\n                        setweight(to_tsvector('pg_catalog.english', coalesce(NEW.text, '')), 'A')\n                        || setweight(to_tsvector('pg_catalog.english', coalesce(NEW.context, '')), 'D');\n                    RETURN NEW;\n                ", hash='ae008ba0afb1c60d209e5d3930a6d1502d8882f4', operation='INSERT OR UPDATE OF "text", "context"', pgid='pgtrigger_chunk_search_vector_f934a', table='retrieval_chunk', when='BEFORE')),
        ),
        migrations.RunSQL(
            sql='UPDATE retrieval_chunk SET context = context',
            reverse_sql='',
        ),
        migrations.AddField(
            model_name='document',
            name='user_id',
            field=models.CharField(blank=True, default='', help_text='The end user the document belongs to; empty: shared.', max_length=200),
        ),
        migrations.RunPython(
            code=rebuild,
            reverse_code=migrations.RunPython.noop,
        ),
        pgtrigger.migrations.RemoveTrigger(
            model_name='chunk',
            name='chunk_search_vector',
        ),
        pgtrigger.migrations.AddTrigger(
            model_name='chunk',
            trigger=pgtrigger.compiler.Trigger(name='chunk_search_vector', sql=pgtrigger.compiler.UpsertTriggerSql(declare='DECLARE parts text;', func="\n                    parts := regexp_replace(array_to_string(ARRAY(\n                        SELECT (regexp_matches(coalesce(NEW.text, ''), '\\S*\\w[/@.:_#=+-]+\\w\\S*', 'g'))[1]\n                    ), ' '), '[^[:alnum:]]+', ' ', 'g');\n                    NEW.search_vector :=\n                        setweight(to_tsvector('pg_catalog.english', coalesce(NEW.text, '')), 'A')\n                        || setweight(to_tsvector('pg_catalog.english', parts), 'A')\n                        || setweight(to_tsvector('pg_catalog.english', coalesce(NEW.context, '')), 'D');\n                    RETURN NEW;\n                ", hash='62692b3a400d0fd77fc835c7b1cabfbe2c0f9ce1', operation='INSERT OR UPDATE OF "text", "context"', pgid='pgtrigger_chunk_search_vector_f934a', table='retrieval_chunk', when='BEFORE')),
        ),
        migrations.RunSQL(
            sql='UPDATE retrieval_chunk SET text = text',
            reverse_sql='',
        ),
        migrations.RemoveConstraint(
            model_name='document',
            name='document_unique_uri',
        ),
        migrations.RunSQL(
            sql="\n            UPDATE retrieval_document d SET workspace_id = s.workspace_id\n              FROM memoryhub_session s WHERE d.session_id = s.id AND d.workspace_id IS NULL;\n            UPDATE retrieval_document d SET workspace_id = w.id\n              FROM accounts_workspace w\n             WHERE d.workspace_id IS NULL AND w.tenant_id = d.tenant_id AND w.name = 'default';\n            ",
            reverse_sql='',
        ),
        migrations.AddIndex(
            model_name='document',
            index=models.Index(fields=['tenant', '-updated_at'], name='document_tenant_updated'),
        ),
        migrations.AddConstraint(
            model_name='document',
            constraint=models.UniqueConstraint(condition=models.Q(('session__isnull', True)), fields=('tenant', 'workspace', 'user_id', 'source_uri'), name='document_unique_uri_in_workspace'),
        ),
        migrations.AddConstraint(
            model_name='document',
            constraint=models.UniqueConstraint(condition=models.Q(('session__isnull', False)), fields=('session', 'user_id', 'source_uri'), name='document_unique_uri_in_session'),
        ),
    ]
