"""Register the built-in cadences (memoryhub.maintenance) as django-q2 schedules."""

from django.db import migrations


def register(apps, schema_editor):  # type: ignore[no-untyped-def]
    from memoryhub.maintenance import ensure_schedules

    ensure_schedules(apps.get_model("django_q", "Schedule"))


def unregister(apps, schema_editor):  # type: ignore[no-untyped-def]
    from memoryhub.maintenance import PREFIX

    apps.get_model("django_q", "Schedule").objects.filter(name__startswith=PREFIX).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("memoryhub", "0002_memory_primitives"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(register, unregister)]
