"""The dispatcher: claims due schedules, records runs, executes them on the cluster.

`dispatch()` is called every second by the dispatch lane (DispatchLane, run by `manage.py work`),
so a run starts within about a second of its due time. Runs execute on the schedules cluster,
which runs nothing else: no backlog of other work can delay them (actions that are bulk work go
to the maintenance cluster). Claiming locks due rows with SELECT … FOR UPDATE SKIP LOCKED, so two
dispatchers (two clusters) never claim the same due time: the second skips rows the first holds, and
once the first commits the row's next_run_at has moved on. A unique (schedule, due_at) constraint
backs this up. Creating the run and moving next_run_at happen in one transaction, as do recording a
run's outcome and updating the schedule (failure streak, pause, completion) and pruning its history.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import QuerySet
from django.dispatch import Signal
from django.utils import timezone

from memoryhub.plumbing.background import StepResult
from memoryhub.tasks import SCHEDULES, Interrupted, enqueue_on_commit
from scheduling import actions, authority, notifications
from scheduling import cadence as cadence_maths
from scheduling.actions import REGISTRY, ActionError, ActionResult
from scheduling.models import (
    SUMMARY_CHARS,
    CadenceType,
    NotificationPolicy,
    Run,
    RunStatus,
    Schedule,
    ScheduleStatus,
)

logger = logging.getLogger(__name__)

EXECUTE = "scheduling.tasks.execute_run"
DISPATCH_BATCH = 100  # due schedules one dispatcher pass claims at most
# This many failed runs in a row pause the schedule (its owner resumes it once the cause is fixed).
MAX_FAILURES = 3
# A run still running this long after it started is marked failed (timeout: its worker was lost, or
# its action too slow). A run that is still queued is never failed for waiting: it is sent to the
# cluster again after REQUEUE_SECONDS (its task was lost with a broker or a killed worker).
RUN_TIMEOUT_SECONDS = 900
REQUEUE_SECONDS = 300
# Sent after a run finished when the schedule's notification policy asks for it (run=Run); the
# notification itself is delivered by scheduling.notifications.
run_notification = Signal()


def dispatch(
    now: datetime | None = None, *, on_claimed: Callable[[list[Run]], None] | None = None
) -> dict[str, int]:
    """One pass: time out stuck runs, send lost ones again, then claim every due schedule and
    enqueue its run."""
    now = now or timezone.now()
    timed_out = time_out_stuck_runs(now)
    notifications.retry_due(now)
    requeued = requeue_waiting_runs(now)
    claimed = 0
    batch = DISPATCH_BATCH
    while True:
        runs = _claim_batch(now, batch, on_claimed)
        claimed += len(runs)
        if len(runs) < batch:
            break
    if claimed or timed_out or requeued:
        logger.info(
            "schedules dispatched",
            extra={"claimed": claimed, "timed_out": timed_out, "requeued": requeued},
        )
    return {"claimed": claimed, "timed_out": timed_out, "requeued": requeued}


def due_schedules(now: datetime) -> QuerySet[Schedule]:
    """Schedules due at `now`: the one definition the dispatcher claims by (and its lane's
    has_work)."""
    return Schedule.objects.filter(status=ScheduleStatus.ACTIVE, next_run_at__lte=now)


def _claim_batch(
    now: datetime, batch: int, on_claimed: Callable[[list[Run]], None] | None
) -> list[Run]:
    runs: list[Run] = []
    with transaction.atomic():
        due = list(
            due_schedules(now).select_for_update(skip_locked=True).order_by("next_run_at")[:batch]
        )
        for schedule in due:
            due_at = schedule.next_run_at
            assert due_at is not None
            try:
                following = cadence_maths.next_after_due(schedule.cadence(), due_at, now)
            except cadence_maths.CadenceError as exc:
                # A cadence broken behind the API's back (a hand edit) must not block the others.
                logger.error(
                    "schedule has an invalid cadence",
                    extra={"schedule": str(schedule.pk), "error": exc.message},
                )
                schedule.status, schedule.next_run_at = ScheduleStatus.FAILED, None
                schedule.save(update_fields=["status", "next_run_at", "updated_at"])
                continue
            run = Run.objects.create(
                tenant_id=schedule.tenant_id, schedule=schedule, due_at=due_at, started_at=now
            )
            schedule.next_run_at = following
            schedule.save(update_fields=["next_run_at", "updated_at"])
            _enqueue_run(run, schedule)
            runs.append(run)
        if on_claimed is not None:
            on_claimed(runs)
    return runs


def run_now(schedule: Schedule) -> Run:
    """A manual run, enqueued at once; the schedule's next_run_at is unchanged."""
    with transaction.atomic():
        run = Run.objects.create(tenant_id=schedule.tenant_id, schedule=schedule, manual=True)
        _enqueue_run(run, schedule)
    return run


def _enqueue_run(run: Run, schedule: Schedule) -> None:
    """On the cluster of the action's lane: schedules, or maintenance for bulk jobs."""
    action = REGISTRY.get(schedule.action)
    lane = action.lane if action is not None else SCHEDULES
    enqueue_on_commit(EXECUTE, str(run.pk), group="schedules", cluster=lane)


def execute_run(run_id: str) -> dict[str, Any]:
    """Run a queued run's action and record its outcome (the cluster's task)."""
    with transaction.atomic():
        # Lock the run row only: FOR UPDATE over the join also locked the schedule and the tenant,
        # and deadlocked with run-now inserts and finishing runs.
        run = (
            Run.objects.select_for_update(of=("self",))
            .select_related("schedule__tenant")
            .filter(pk=run_id)
            .first()
        )
        if run is None or run.status != RunStatus.QUEUED:
            return {"run": run_id, "skipped": "not queued"}
        run.status = RunStatus.RUNNING
        run.started_at = timezone.now()
        run.save(update_fields=["status", "started_at"])
    schedule = run.schedule
    action = REGISTRY.get(schedule.action)
    try:
        if action is None:
            raise ActionError(f"Unknown action {schedule.action!r}.")
        # Checked when the run starts, not only when the schedule was made: a revoked key's
        # schedules stop acting for it.
        result = action.run(schedule, run, authority.for_run(schedule))
        ok, text, turns, cost, error = True, result.text(), result.turn_count, result.cost, ""
    except authority.Refused as exc:
        ok, text, turns, cost, error = False, exc.message, 0, 0.0, exc.code
    # the cluster is stopping (memoryhub.tasks): say so rather than stay "running"
    except Interrupted:
        connection.close()  # the signal may have cut a query short
        # Failed, not sent again: the action may have had effects (an agent acting on its goal).
        ok, text, turns, cost, error = (
            False,
            "Interrupted: MemoryHub was stopping while this run was in "
            "progress; it did not finish.",
            0,
            0.0,
            "interrupted",
        )
    except ActionError as exc:
        ok, text, turns, cost, error = False, exc.output, exc.turn_count, exc.cost, "action_failed"
    except Exception as exc:  # any failure of the job is a failed run, never a stuck one
        logger.exception(
            "scheduled action failed", extra={"run": run_id, "action": schedule.action}
        )
        ok, text, turns, cost, error = (
            False,
            f"{exc.__class__.__name__}: {exc}",
            0,
            0.0,
            "exception",
        )
    finish_run(
        run.pk,
        succeeded=ok,
        output=text,
        turn_count=turns,
        cost=cost,
        error=error,
        expect=RunStatus.RUNNING,
    )
    return {"run": run_id, "status": RunStatus.SUCCEEDED if ok else RunStatus.FAILED}


def finish_run(
    run_id: Any,
    *,
    succeeded: bool,
    output: str,
    turn_count: int = 0,
    cost: float = 0.0,
    error: str = "",
    expect: str | None = None,
    now: datetime | None = None,
) -> Run | None:
    """Record a run's outcome and update its schedule, in one transaction."""
    now = now or timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status not in (RunStatus.QUEUED, RunStatus.RUNNING):
            return None  # already finished (e.g. timed out and then came back): first outcome wins
        if expect is not None and run.status != expect:
            return None
        schedule = Schedule.objects.select_for_update().get(pk=run.schedule_id)
        status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
        run.status, run.finished_at, run.error = status, now, error
        run.output, run.output_summary = output, output[:SUMMARY_CHARS]
        run.turn_count, run.cost = turn_count, cost
        run.save()
        schedule.last_run_at, schedule.last_run_status = now, status
        schedule.consecutive_failures = 0 if succeeded else schedule.consecutive_failures + 1
        if (
            schedule.cadence_type == CadenceType.ONCE
            and not run.manual
            and schedule.status == ScheduleStatus.ACTIVE
        ):
            schedule.status = ScheduleStatus.COMPLETED if succeeded else ScheduleStatus.FAILED
            schedule.next_run_at = None
        elif (
            not succeeded
            and schedule.status == ScheduleStatus.ACTIVE
            and schedule.consecutive_failures >= MAX_FAILURES
        ):
            schedule.status = ScheduleStatus.PAUSED
            logger.warning(
                "schedule paused after repeated failures",
                extra={"schedule": str(schedule.pk), "failures": schedule.consecutive_failures},
            )
        schedule.save(
            update_fields=[
                "last_run_at",
                "last_run_status",
                "consecutive_failures",
                "status",
                "next_run_at",
                "updated_at",
            ]
        )
        if _notify_wanted(schedule.notification_policy, succeeded):
            # delivered after commit, `notified` once it is
            notifications.record_delivery(run, schedule, now)
            transaction.on_commit(lambda: run_notification.send(sender=Run, run=run))
        Run.objects.prune_history(schedule.pk, keep=actions.RUNS_KEPT)
    return run


def _notify_wanted(policy: str, succeeded: bool) -> bool:
    return (
        policy == NotificationPolicy.ALWAYS
        or (policy == NotificationPolicy.ON_FAILURE and not succeeded)
        or (policy == NotificationPolicy.ON_SUCCESS and succeeded)
    )


def time_out_stuck_runs(now: datetime | None = None) -> int:
    """Runs running longer than the timeout (a worker killed mid-run) become failed. A queued run
    is never failed for waiting: it never got a worker (see requeue_waiting_runs)."""
    now = now or timezone.now()
    limit = now - timedelta(seconds=RUN_TIMEOUT_SECONDS)
    stuck = list(
        Run.objects.filter(status=RunStatus.RUNNING, started_at__lt=limit).values_list(
            "pk", "status"
        )
    )
    done = 0
    for run_id, status in stuck:
        message = (
            f"Timed out: still {status} after {RUN_TIMEOUT_SECONDS}s "
            "(worker lost or action too slow)."
        )
        if finish_run(
            run_id, succeeded=False, output=message, error="timeout", expect=status, now=now
        ):
            done += 1
    return done


def requeue_waiting_runs(now: datetime | None = None) -> int:
    """Send runs queued for longer than REQUEUE_SECONDS to the cluster again:
    their task was lost (a Redis broker's worker killed after taking it). A duplicate is harmless:
    execute_run starts a run only while it is queued, under a row lock."""
    now = now or timezone.now()
    limit = now - timedelta(seconds=REQUEUE_SECONDS)
    done = 0
    with transaction.atomic():
        waiting = list(
            Run.objects.select_for_update(skip_locked=True, of=("self",))
            .select_related("schedule")
            .filter(status=RunStatus.QUEUED, started_at__lt=limit)[:100]
        )
        for run in waiting:
            run.started_at = now  # a queued run's started_at is when it was last sent
            run.save(update_fields=["started_at"])
            _enqueue_run(run, run.schedule)
            done += 1
    if done:
        logger.warning("schedule runs sent again after waiting", extra={"runs": done})
    return done


class DispatchLane:
    """The dispatcher as a lane of `manage.py work`: a pass every second (a claim query on a
    partial index when nothing is due)."""

    name = "dispatch"
    listens = False
    idle_seconds = 1.0

    def step(self) -> StepResult:
        return StepResult(done=dispatch()["claimed"])

    def has_work(self, before: datetime | None = None) -> bool:
        """Whether a schedule was due before `before` (memoryhub.plumbing.background asks after an
        empty step) that this lane could claim now: by the claim's definition, less the rows
        another dispatcher holds."""
        with transaction.atomic():
            rows = due_schedules(before or timezone.now()).select_for_update(skip_locked=True)
            return bool(list(rows.values_list("pk", flat=True)[:1]))


__all__ = [
    "ActionResult",
    "dispatch",
    "execute_run",
    "finish_run",
    "run_now",
    "time_out_stuck_runs",
]
