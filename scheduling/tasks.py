"""Entry points the django-q2 cluster calls (by dotted path)."""

from __future__ import annotations

from typing import Any

DISPATCHER_NAME = "scheduling:dispatch"
DISPATCHER_FUNC = "scheduling.tasks.dispatch"


def dispatch() -> dict[str, int]:
    """Every minute: claim due schedules and enqueue their runs; time out stuck runs."""
    from scheduling.dispatcher import dispatch as run_dispatch

    return run_dispatch()


def execute_run(run_id: str) -> dict[str, Any]:
    from scheduling.dispatcher import execute_run as run

    return run(run_id)


def ensure_dispatcher(schedule_model: Any = None) -> str:
    """Create or repair the ONE every-minute django-q2 schedule that runs `dispatch`. Idempotent;
    `schedule_model` is the historical model inside a migration."""
    if schedule_model is None:
        from django_q.models import Schedule as schedule_model
    from django.utils import timezone

    rows = list(schedule_model.objects.filter(name=DISPATCHER_NAME).order_by("pk"))
    for extra in rows[1:]:
        extra.delete()
    if not rows:
        schedule_model.objects.create(name=DISPATCHER_NAME, func=DISPATCHER_FUNC, schedule_type="I", minutes=1,
                                      repeats=-1, next_run=timezone.now())
        return "created"
    row = rows[0]
    if (row.func, row.schedule_type, row.minutes, row.repeats) != (DISPATCHER_FUNC, "I", 1, -1):
        row.func, row.schedule_type, row.minutes, row.repeats = DISPATCHER_FUNC, "I", 1, -1
        row.save()
        return "updated"
    return "unchanged"
