"""Work moved to lanes: the core's tasks module lost its `memory_` prefix, and per-append tasks
are gone (the summarise lane finds due sessions in the tables). Rewrite or drop what django-q2
still holds by the old paths, then put the built-in cadences on the maintenance cluster."""

from importlib import import_module

from django.db import migrations

rename = import_module("scheduling.migrations.0003_cluster_schedules").rename

MOVED = {"memoryhub.memory_tasks.build_summary_tree": "memoryhub.tasks.build_summary_tree"}
# Queued per append before the upgrade; the summarise lane now does their work from table state.
DROPPED = {"memoryhub.memory_tasks.summarise_session", "memoryhub.memory_tasks.extract_facts"}


def drop_queued(apps, funcs):  # type: ignore[no-untyped-def]
    from django_q.signing import SignedPackage

    for row in apps.get_model("django_q", "OrmQ").objects.all():
        try:
            task = SignedPackage.loads(row.payload)
        except Exception:  # signed with another key: not ours
            continue
        if isinstance(task, dict) and task.get("func") in funcs:
            row.delete()


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    from scheduling.tasks import sync_cluster_schedules

    rename(apps, MOVED)
    drop_queued(apps, DROPPED)
    sync_cluster_schedules(apps.get_model("django_q", "Schedule"))


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    rename(apps, {new: old for old, new in MOVED.items()})


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0003_cluster_schedules"),
        ("memoryhub", "0005_background_lanes"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
