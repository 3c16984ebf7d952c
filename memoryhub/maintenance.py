"""The built-in cadences: embedding backfill, summarising and consolidation on the task cluster.

Each is a django-q2 schedule named `memoryhub:<job>`, kept in step with the settings by
`ensure_schedules()`, which a migration and every `manage.py run` call (never by hand). With the
cluster's `catch_up` off, a run missed while MemoryHub was down fires once on the next start.
The jobs cover every tenant; a tenant's own schedules (scheduling/) run the same work for itself.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

logger = logging.getLogger(__name__)

PREFIX = "memoryhub:"
# job name -> (setting holding its period in minutes, 0 = off; how long after the first
# registration it first runs)
JOBS: dict[str, tuple[str, timedelta]] = {
    "embed_backfill": ("MEMORYHUB_MAINTENANCE_EMBED_MINUTES", timedelta(minutes=1)),
    "summarise": ("MEMORYHUB_MAINTENANCE_SUMMARISE_MINUTES", timedelta(minutes=2)),
    "consolidate": ("MEMORYHUB_MAINTENANCE_CONSOLIDATE_MINUTES", timedelta(minutes=10)),
}


def embed_backfill() -> dict[str, Any]:
    """Embed whatever is still without a vector (a failed or lost embedding task, a new model)."""
    from retrieval.indexing import backfill_embeddings

    report = backfill_embeddings()
    logger.info("maintenance embed_backfill", extra={"report": report})
    return report


def summarise() -> dict[str, Any]:
    """Roll the summaries of sessions that are due and grow or close their summary trees."""
    from memoryhub.summaries import summarise_due

    report = summarise_due()
    logger.info("maintenance summarise", extra={"report": report})
    return report


def consolidate() -> dict[str, Any]:
    """Promote, prune, merge, cap and compress (S8); the full report is stored by the job."""
    from retrieval.lifecycle.consolidation import run_consolidation

    report = run_consolidation()
    summary = {key: value for key, value in report.items() if key != "ids"}
    logger.info("maintenance consolidate", extra={"report": summary})
    return summary


def ensure_schedules(schedule_model: Any = None) -> dict[str, str]:
    """Create, update or remove the `memoryhub:*` schedules so they match the settings.

    Idempotent. A period change keeps the next run unless it is further away than the new period.
    `schedule_model` is the historical model inside a migration. Returns what it did per job.
    """
    if schedule_model is None:
        from django_q.models import Schedule as schedule_model
    now = timezone.now()
    done: dict[str, str] = {}
    for job, (setting, first_delay) in JOBS.items():
        minutes = getattr(settings, setting)
        name = PREFIX + job
        rows = list(schedule_model.objects.filter(name=name).order_by("pk"))
        for extra in rows[1:]:
            extra.delete()
        row = rows[0] if rows else None
        if not minutes:
            if row is not None:
                row.delete()
            done[job] = "off"
            continue
        func = f"memoryhub.maintenance.{job}"
        if row is None:
            schedule_model.objects.create(
                name=name, func=func, schedule_type="I", minutes=minutes, repeats=-1,
                next_run=now + first_delay,
            )
            done[job] = "created"
            continue
        changed = False
        if row.func != func or row.schedule_type != "I" or row.minutes != minutes or row.repeats != -1:
            row.func, row.schedule_type, row.minutes, row.repeats = func, "I", minutes, -1
            changed = True
        if row.next_run is None or row.next_run > now + timedelta(minutes=minutes):
            row.next_run = now + first_delay
            changed = True
        if changed:
            row.save()
        done[job] = "updated" if changed else "unchanged"
    return done
