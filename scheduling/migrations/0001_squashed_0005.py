"""scheduling's migrations 0001-0005 as one (`manage.py squashmigrations scheduling 0001 0005`).

One merge-only migration is gone with them; this one builds the same schema (compared with `pg_dump
--schema-only` against the old files) and `replaces` every old name, so a database that applied
them is recognised as migrated. The functions of the old files are copied in below.
"""

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models


# From 0003_cluster_schedules: the cluster's schedules in one place. django-q2 stores dotted task
# paths in its tables: a schedule's `func`, a finished task's `func` (the admin resubmits failed ones
# by it) and, inside the signed payload, a queued task's. The maintenance jobs moved from
# memoryhub.maintenance to scheduling.tasks; the mapping is frozen here.
MOVED = {
    "memoryhub.maintenance.embed_backfill": "scheduling.tasks.embed_backfill",
    "memoryhub.maintenance.summarise": "scheduling.tasks.summarise",
    "memoryhub.maintenance.consolidate": "scheduling.tasks.consolidate",
}


def rename(apps, moved):  # type: ignore[no-untyped-def]
    from django_q.signing import SignedPackage

    for old, new in moved.items():
        apps.get_model("django_q", "Schedule").objects.filter(func=old).update(func=new)
        apps.get_model("django_q", "Task").objects.filter(func=old).update(func=new)
    for row in apps.get_model("django_q", "OrmQ").objects.all():
        try:
            task = SignedPackage.loads(row.payload)
        except Exception:  # signed with another key: not ours to rewrite
            continue
        if isinstance(task, dict) and task.get("func") in moved:
            task["func"] = moved[task["func"]]
            row.payload = SignedPackage.dumps(task)
            row.save(update_fields=["payload"])


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    from scheduling.tasks import sync_cluster_schedules

    rename(apps, MOVED)
    sync_cluster_schedules(apps.get_model("django_q", "Schedule"))


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    rename(apps, {new: old for old, new in MOVED.items()})


# From 0004_lanes: work moved to lanes. The core's tasks module lost its `memory_` prefix, and
# per-append tasks are gone (the summarise lane finds due sessions in the tables). Rewrite or drop
# what django-q2 still holds by the old paths, then put the built-in cadences on the maintenance
# cluster.
LANES_MOVED = {"memoryhub.memory_tasks.build_summary_tree": "memoryhub.tasks.build_summary_tree"}
# Queued per append before the upgrade; the summarise lane now does their work from table state.
LANES_DROPPED = {"memoryhub.memory_tasks.summarise_session", "memoryhub.memory_tasks.extract_facts"}


def drop_queued(apps, funcs):  # type: ignore[no-untyped-def]
    from django_q.signing import SignedPackage

    for row in apps.get_model("django_q", "OrmQ").objects.all():
        try:
            task = SignedPackage.loads(row.payload)
        except Exception:  # signed with another key: not ours
            continue
        if isinstance(task, dict) and task.get("func") in funcs:
            row.delete()


def lanes_forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    from scheduling.tasks import sync_cluster_schedules

    rename(apps, LANES_MOVED)
    drop_queued(apps, LANES_DROPPED)
    sync_cluster_schedules(apps.get_model("django_q", "Schedule"))


def lanes_backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    rename(apps, {new: old for old, new in LANES_MOVED.items()})


class Migration(migrations.Migration):

    replaces = [('scheduling', '0001_initial'), ('scheduling', '0002_dispatcher_schedule'), ('scheduling', '0003_cluster_schedules'), ('scheduling', '0004_webhooks_deliveries'), ('scheduling', '0004_lanes'), ('scheduling', '0005_merge_0004_lanes_0004_webhooks_deliveries')]

    dependencies = [
        ('accounts', '0001_initial'),
        ('accounts', '0002_api_key_user'),
        ('django_q', '0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more'),
        ('memoryhub', '0001_squashed_0011'),
    ]

    operations = [
        migrations.CreateModel(
            name='Schedule',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('user_id', models.CharField(blank=True, default='', max_length=200)),
                ('name', models.CharField(max_length=200)),
                ('goal', models.TextField(blank=True, default='')),
                ('action', models.CharField(max_length=50)),
                ('params', models.JSONField(blank=True, default=dict)),
                ('cadence_type', models.CharField(choices=[('cron', 'Cron'), ('once', 'Once'), ('interval', 'Interval')], max_length=10)),
                ('cadence_value', models.CharField(max_length=200)),
                ('timezone', models.CharField(default='UTC', max_length=64)),
                ('notification_policy', models.CharField(choices=[('always', 'Always'), ('on_failure', 'On Failure'), ('on_success', 'On Success'), ('never', 'Never')], default='always', max_length=20)),
                ('channel', models.CharField(blank=True, default='', max_length=100)),
                ('status', models.CharField(choices=[('active', 'Active'), ('paused', 'Paused'), ('completed', 'Completed'), ('failed', 'Failed')], default='active', max_length=10)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('next_run_at', models.DateTimeField(blank=True, null=True)),
                ('last_run_at', models.DateTimeField(blank=True, null=True)),
                ('last_run_status', models.CharField(blank=True, default='', max_length=10)),
                ('consecutive_failures', models.PositiveIntegerField(default=0)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='schedules', to='accounts.tenant')),
                ('workspace', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='schedules', to='accounts.workspace')),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='Run',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('due_at', models.DateTimeField(blank=True, null=True)),
                ('manual', models.BooleanField(default=False)),
                ('started_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('succeeded', 'Succeeded'), ('failed', 'Failed')], default='queued', max_length=10)),
                ('error', models.CharField(blank=True, default='', max_length=100)),
                ('output_summary', models.CharField(blank=True, default='', max_length=500)),
                ('output', models.TextField(blank=True, default='')),
                ('turn_count', models.PositiveIntegerField(default=0)),
                ('cost', models.FloatField(default=0.0)),
                ('notified', models.BooleanField(default=False)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='schedule_runs', to='accounts.tenant')),
                ('schedule', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='scheduling.schedule')),
            ],
            options={
                'ordering': ['-started_at'],
            },
        ),
        migrations.AddIndex(
            model_name='schedule',
            index=models.Index(fields=['tenant', 'user_id'], name='sched_user'),
        ),
        migrations.AddIndex(
            model_name='schedule',
            index=models.Index(condition=models.Q(('status', 'active')), fields=['next_run_at'], name='sched_due'),
        ),
        migrations.AddIndex(
            model_name='schedule',
            index=models.Index(fields=['tenant', 'user_id', 'status'], name='sched_user_status'),
        ),
        migrations.AddIndex(
            model_name='schedule',
            index=models.Index(fields=['tenant', 'user_id', 'name'], name='sched_user_name'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(fields=['schedule', '-started_at'], name='run_history'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(condition=models.Q(('status__in', ['queued', 'running'])), fields=['status', 'started_at'], name='run_open'),
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(condition=models.Q(('due_at__isnull', False)), fields=('schedule', 'due_at'), name='run_once_per_due_time'),
        ),
        migrations.RunPython(
            code=forwards,
            reverse_code=backwards,
        ),
        migrations.AddField(
            model_name='schedule',
            name='channel_context_id',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
        migrations.CreateModel(
            name='Webhook',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('kind', models.CharField(choices=[('agent', 'Agent'), ('notification', 'Notification')], max_length=20)),
                ('url', models.CharField(max_length=2000)),
                ('secret', models.CharField(max_length=200)),
                ('description', models.CharField(blank=True, default='', max_length=200)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='webhooks', to='accounts.tenant')),
            ],
            options={
                'ordering': ['kind', 'created_at'],
            },
        ),
        migrations.CreateModel(
            name='Delivery',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('url', models.CharField(blank=True, default='', max_length=2000)),
                ('payload', models.JSONField(default=dict)),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('delivered', 'Delivered'), ('failed', 'Failed'), ('no_webhook', 'No Webhook')], default='pending', max_length=12)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('max_attempts', models.PositiveIntegerField(default=1)),
                ('last_error', models.CharField(blank=True, default='', max_length=500)),
                ('last_status_code', models.PositiveIntegerField(blank=True, null=True)),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
                ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='delivery', to='scheduling.run')),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='accounts.tenant')),
                ('webhook', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='deliveries', to='scheduling.webhook')),
            ],
            options={
                'verbose_name_plural': 'deliveries',
                'ordering': ['-created_at'],
            },
        ),
        migrations.AddConstraint(
            model_name='webhook',
            constraint=models.UniqueConstraint(fields=('tenant', 'kind'), name='webhook_one_per_kind'),
        ),
        migrations.AddIndex(
            model_name='delivery',
            index=models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='delivery_due'),
        ),
        migrations.RunPython(
            code=lanes_forwards,
            reverse_code=lanes_backwards,
        ),
    ]
