"""Register the one every-minute django-q2 schedule that dispatches due schedules."""

from django.db import migrations


def register(apps, schema_editor):  # type: ignore[no-untyped-def]
    from scheduling.tasks import ensure_dispatcher

    ensure_dispatcher(apps.get_model("django_q", "Schedule"))


def unregister(apps, schema_editor):  # type: ignore[no-untyped-def]
    from scheduling.tasks import DISPATCHER_NAME

    apps.get_model("django_q", "Schedule").objects.filter(name=DISPATCHER_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(register, unregister)]
