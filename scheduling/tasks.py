"""What the django-q2 clusters run (by dotted path), and the clusters' own schedules that run it.

The clusters have their own schedules (django-q2 `Schedule` rows): `scheduling:dispatch` every
minute on the schedules cluster (a fallback: the dispatch lane of `manage.py work` claims due user
schedules every second) and the built-in maintenance cadences `memoryhub:<job>` on the
maintenance cluster (scheduling.jobs over every tenant; their periods are MAINTENANCE_JOBS). ONE
function, `sync_cluster_schedules()`, keeps all of them in step: migrations 0003 and 0004 call
it, and so does every `manage.py run` (through memoryhub.signals.cluster_starting). With the
cluster's `catch_up` off, a run missed while MemoryHub was down fires once on the next start.
Only tasks.py modules import django_q.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from memoryhub.tasks import MAINTENANCE
from retrieval.termstats import compact as compact_term_stats
from scheduling import jobs

logger = logging.getLogger(__name__)

DISPATCHER_NAME = "scheduling:dispatch"
DISPATCHER_FUNC = "scheduling.tasks.dispatch"
MAINTENANCE_PREFIX = "memoryhub:"  # the names the built-in cadences were first registered with
# job name -> (its period in minutes, 0 = off; how long after the first registration it first
# runs). Embedding and summarising are the work lanes' job (manage.py work, started by `run`):
# their cadences are off. Consolidation every 6 hours (docs/lifecycle.md).
MAINTENANCE_JOBS: dict[str, tuple[int, timedelta]] = {
    "embed_backfill": (0, timedelta(minutes=1)),
    "summarise": (0, timedelta(minutes=2)),
    "consolidate": (6 * 60, timedelta(minutes=10)),
}


# --- entry points ------------------------------------------------------------------------------


def dispatch() -> dict[str, int]:
    """Every minute: claim due schedules and enqueue their runs; time out stuck runs."""
    from scheduling.dispatcher import dispatch as run_dispatch

    return run_dispatch()


def execute_run(run_id: str) -> dict[str, Any]:
    from scheduling.dispatcher import execute_run as run

    return run(run_id)


def deliver_notification(delivery_id: str) -> str:
    """One attempt at delivering a run's notification (scheduling.notifications)."""
    from scheduling.notifications import deliver

    return deliver(delivery_id)


def embed_backfill() -> dict[str, Any]:
    # The cadence also folds the search statistics' delta rows (every tenant's: it is the
    # cluster's).
    report = {**jobs.embed_backfill(), "term_stats_compacted": compact_term_stats()}
    logger.info("maintenance embed_backfill", extra={"report": report})
    return report


def summarise() -> dict[str, Any]:
    report = jobs.summarise()
    logger.info("maintenance summarise", extra={"report": report})
    return report


def consolidate() -> dict[str, Any]:
    # What each deletion removed, in words, stays in the stored ConsolidationReport (which
    # forget-user redacts), never in the cluster's task results or the log.
    report = {key: value for key, value in jobs.consolidate().items() if key != "deletions"}
    logger.info("maintenance consolidate", extra={"report": report})
    return report


# --- the cluster's own schedules ---------------------------------------------------------------


@dataclass(frozen=True)
class ClusterSchedule:
    name: str
    func: str
    minutes: int  # 0: off, the row is removed
    first_delay: timedelta  # from the first registration to the first run
    cluster: str | None = None  # None: the default (schedules) cluster


def cluster_schedules() -> list[ClusterSchedule]:
    """Every schedule the clusters should have, as this start's settings say."""
    return [
        ClusterSchedule(DISPATCHER_NAME, DISPATCHER_FUNC, 1, timedelta(0)),
        *(
            ClusterSchedule(
                MAINTENANCE_PREFIX + job, f"scheduling.tasks.{job}", minutes, delay, MAINTENANCE
            )
            for job, (minutes, delay) in MAINTENANCE_JOBS.items()
        ),
    ]


def sync_cluster_schedules(schedule_model: Any = None) -> dict[str, str]:
    """Create, update or remove the cluster's schedules so they match `cluster_schedules()`.

    Idempotent; duplicates are removed. A period change keeps the next run unless it is further
    away than the new period. `schedule_model` is the historical model inside a migration.
    Returns what it did per schedule name: created, updated, unchanged or off.
    """
    if schedule_model is None:
        from django_q.models import Schedule as schedule_model
    now = timezone.now()
    return {spec.name: _sync_one(schedule_model, spec, now) for spec in cluster_schedules()}


def _sync_one(schedule_model: Any, spec: ClusterSchedule, now: Any) -> str:
    rows = list(schedule_model.objects.filter(name=spec.name).order_by("pk"))
    for extra in rows[1:]:
        extra.delete()
    row = rows[0] if rows else None
    if not spec.minutes:
        if row is not None:
            row.delete()
        return "off"
    if row is None:
        schedule_model.objects.create(
            name=spec.name,
            func=spec.func,
            schedule_type="I",
            minutes=spec.minutes,
            repeats=-1,
            next_run=now + spec.first_delay,
            cluster=spec.cluster,
        )
        return "created"
    changed = False
    wanted = (spec.func, "I", spec.minutes, -1, spec.cluster)
    if (row.func, row.schedule_type, row.minutes, row.repeats, row.cluster) != wanted:
        row.func, row.schedule_type, row.minutes, row.repeats, row.cluster = wanted
        changed = True
    if row.next_run is None or row.next_run > now + timedelta(minutes=spec.minutes):
        row.next_run = now + spec.first_delay
        changed = True
    if changed:
        row.save()
    return "updated" if changed else "unchanged"


def sync_on_cluster_start(sender: Any, **kwargs: Any) -> None:
    """Receiver of memoryhub.signals.cluster_starting: the cadences follow this start's settings."""
    sync_cluster_schedules()


def cluster_schedule_rows() -> list[dict[str, Any]]:
    """The cluster's schedules as stored, for `manage.py queue_status`; overdue by over 2
    minutes."""
    from django_q.models import Schedule

    now = timezone.now()
    return [
        {
            "name": s.name,
            "func": s.func,
            "cluster": s.cluster or settings.Q_CLUSTER["name"],
            "next_run": s.next_run.isoformat() if s.next_run else None,
            "overdue": bool(s.next_run and s.next_run < now - timedelta(minutes=2)),
        }
        for s in Schedule.objects.order_by("name")
    ]
