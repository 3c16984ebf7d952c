"""Once registered the built-in cadences as django-q2 schedules. That moved to scheduling (the
cluster's schedules are kept in step in one place, scheduling.tasks.sync_cluster_schedules, by
scheduling's migration 0003), and the core imports nothing of scheduling: this migration is kept
only as a node of the graph."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0002_memory_primitives"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
