"""The cluster's schedules in one place: rewrite the task paths that moved, then keep every
cluster schedule (dispatcher, built-in cadences) in step with scheduling.tasks.sync_cluster_schedules.

django-q2 stores dotted task paths in its tables: a schedule's `func`, a finished task's `func`
(the admin resubmits failed ones by it) and, inside the signed payload, a queued task's. The
maintenance jobs moved from memoryhub.maintenance to scheduling.tasks; the mapping is frozen here.
"""

from django.db import migrations

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


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0002_dispatcher_schedule"),
        ("memoryhub", "0003_maintenance_schedules"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
