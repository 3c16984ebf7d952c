"""Once registered the dispatcher's django-q2 schedule. Migration 0003 now keeps every cluster
schedule in step (scheduling.tasks.sync_cluster_schedules): this one is kept only as a node of
the graph."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
