"""The dispatcher: claiming, recording, failure streaks, one-shots, pruning, timeouts,
concurrency."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import Tenant
from scheduling.dispatcher import dispatch, execute_run
from scheduling.models import Delivery, Run, Schedule
from scheduling.tasks import DISPATCHER_FUNC, DISPATCHER_NAME, sync_cluster_schedules
from tests.base import make_tenant


def make_schedule(tenant: Tenant, **fields) -> Schedule:  # type: ignore[no-untyped-def]
    values = {
        "name": "job",
        "action": "summarise",
        "cadence_type": "interval",
        "cadence_value": "60",
        "next_run_at": timezone.now() - timedelta(seconds=1),
        # the operator's authority (the tenant's)
        "authority_scopes": ["read", "write", "admin"],
    }
    values.update(fields)
    return Schedule.objects.create(tenant=tenant, **values)


@pytest.fixture
def run_tasks(django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    """dispatch() with its enqueued runs executed as the cluster would after commit."""

    def go(now=None):  # type: ignore[no-untyped-def]
        with django_capture_on_commit_callbacks(execute=True):
            return dispatch(now)

    return go


@pytest.mark.django_db
def test_due_schedule_is_claimed_run_and_rescheduled(cast, run_tasks) -> None:  # type: ignore[no-untyped-def]
    schedule = make_schedule(cast.alice_tenant)
    due = schedule.next_run_at
    not_due = make_schedule(
        cast.alice_tenant, name="later", next_run_at=timezone.now() + timedelta(hours=1)
    )
    paused = make_schedule(cast.alice_tenant, name="paused", status="paused")
    now = timezone.now()
    assert run_tasks(now) == {"claimed": 1, "timed_out": 0, "requeued": 0}
    run = Run.objects.get()
    assert run.schedule_id == schedule.pk and run.due_at == due and run.status == "succeeded"
    schedule.refresh_from_db()
    assert schedule.next_run_at == due + timedelta(seconds=60)
    assert schedule.last_run_status == "succeeded" and schedule.consecutive_failures == 0
    assert not not_due.runs.exists() and not paused.runs.exists()
    # A second pass at the same moment finds nothing due: the due time ran once.
    assert run_tasks(now)["claimed"] == 0


@pytest.mark.django_db
def test_consecutive_failures_pause_the_schedule(cast, run_tasks, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("scheduling.dispatcher.MAX_FAILURES", 3)
    settings.MEMORYHUB_AGENT_WEBHOOK_URL = ""  # agent_goal fails: nothing to call
    schedule = make_schedule(cast.alice_tenant, action="agent_goal", goal="do things")
    now = timezone.now()
    for i in range(3):
        assert run_tasks(now + timedelta(minutes=i))["claimed"] == 1
        schedule.refresh_from_db()
        assert schedule.consecutive_failures == i + 1
    assert schedule.status == "paused"
    assert run_tasks(now + timedelta(minutes=10))["claimed"] == 0
    runs = list(schedule.runs.all())
    assert [r.status for r in runs] == ["failed"] * 3
    assert "No agent webhook configured" in runs[0].output and runs[0].error == "action_failed"


@pytest.mark.django_db
def test_a_broken_cadence_fails_its_schedule_without_blocking_others(cast, run_tasks) -> None:  # type: ignore[no-untyped-def]
    broken = make_schedule(
        cast.alice_tenant,
        name="broken",
        cadence_type="cron",
        cadence_value="not cron",
        next_run_at=timezone.now() - timedelta(minutes=5),
    )
    fine = make_schedule(cast.alice_tenant, name="fine")
    assert run_tasks()["claimed"] == 1
    broken.refresh_from_db()
    assert broken.status == "failed" and broken.next_run_at is None and not broken.runs.exists()
    assert fine.runs.get().status == "succeeded"


@pytest.mark.django_db
def test_success_resets_failure_streak(cast, run_tasks) -> None:  # type: ignore[no-untyped-def]
    schedule = make_schedule(cast.alice_tenant, consecutive_failures=2)
    run_tasks()
    schedule.refresh_from_db()
    assert schedule.consecutive_failures == 0 and schedule.status == "active"


@pytest.mark.django_db
def test_one_shot_completes(cast, run_tasks) -> None:  # type: ignore[no-untyped-def]
    at = timezone.now() - timedelta(seconds=5)
    schedule = make_schedule(
        cast.alice_tenant, cadence_type="once", cadence_value=at.isoformat(), next_run_at=at
    )
    assert run_tasks()["claimed"] == 1
    schedule.refresh_from_db()
    assert schedule.status == "completed" and schedule.next_run_at is None
    assert schedule.runs.get().status == "succeeded"


@pytest.mark.django_db
def test_history_is_pruned_to_newest_n(cast, run_tasks, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("scheduling.actions.RUNS_KEPT", 3)
    schedule = make_schedule(cast.alice_tenant)
    now = timezone.now()
    for i in range(5):
        run_tasks(now + timedelta(minutes=i))
    runs = list(schedule.runs.order_by("started_at"))
    assert len(runs) == 3
    assert runs[0].due_at > schedule.created_at + timedelta(minutes=1)  # the oldest two were pruned


@pytest.mark.django_db
def test_run_stuck_running_is_failed_by_timeout(cast, run_tasks, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("scheduling.dispatcher.RUN_TIMEOUT_SECONDS", 600)
    schedule = make_schedule(cast.alice_tenant, next_run_at=timezone.now() + timedelta(hours=1))
    stuck = Run.objects.create(
        tenant=cast.alice_tenant,
        schedule=schedule,
        status="running",
        started_at=timezone.now() - timedelta(minutes=11),
    )
    fresh = Run.objects.create(
        tenant=cast.alice_tenant,
        schedule=schedule,
        status="running",
        started_at=timezone.now() - timedelta(minutes=2),
    )
    assert run_tasks() == {"claimed": 0, "timed_out": 1, "requeued": 0}
    stuck.refresh_from_db()
    fresh.refresh_from_db()
    assert stuck.status == "failed" and stuck.error == "timeout" and stuck.finished_at
    assert fresh.status == "running"
    schedule.refresh_from_db()
    assert schedule.consecutive_failures == 1 and schedule.last_run_status == "failed"
    # The worker that was thought dead comes back: the first outcome (timeout) stands.
    assert execute_run(str(stuck.pk))["skipped"] == "not queued"
    stuck.refresh_from_db()
    assert stuck.status == "failed"


@pytest.mark.django_db
def test_dispatcher_is_registered_once_by_migration() -> None:
    from django_q.models import Schedule as QSchedule

    rows = QSchedule.objects.filter(name=DISPATCHER_NAME)
    assert rows.count() == 1
    row = rows.get()
    assert (row.func, row.schedule_type, row.minutes, row.repeats) == (DISPATCHER_FUNC, "I", 1, -1)
    assert sync_cluster_schedules()[DISPATCHER_NAME] == "unchanged"
    QSchedule.objects.filter(pk=row.pk).update(minutes=5)
    assert sync_cluster_schedules()[DISPATCHER_NAME] == "updated"
    assert QSchedule.objects.filter(name=DISPATCHER_NAME).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_dispatchers_never_run_the_same_due_time_twice(settings) -> None:  # type: ignore[no-untyped-def]
    """Dispatcher A holds its claim open while dispatcher B runs on another connection."""
    settings.MEMORYHUB_TASKS_EAGER = True
    tenant = make_tenant("concurrent")
    schedules = [make_schedule(tenant, name=f"job {i}") for i in range(3)]
    now = timezone.now()
    a_claimed = threading.Event()
    b_done = threading.Event()
    results: dict[str, dict[str, int]] = {}
    errors: list[BaseException] = []

    def hold(runs):  # type: ignore[no-untyped-def]
        if runs:
            a_claimed.set()
            assert b_done.wait(20), "dispatcher B never finished"

    def dispatcher(name: str, **kwargs) -> None:  # type: ignore[no-untyped-def]
        try:
            results[name] = dispatch(now, **kwargs)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    a = threading.Thread(target=dispatcher, args=("a",), kwargs={"on_claimed": hold})
    a.start()
    assert a_claimed.wait(20)
    b = threading.Thread(target=dispatcher, args=("b",))
    b.start()
    b.join(20)
    finished_while_a_held_its_locks = not b.is_alive()  # SKIP LOCKED: B did not wait for A
    b_done.set()
    a.join(20)
    assert not errors, errors
    assert finished_while_a_held_its_locks
    assert results["a"]["claimed"] == 3 and results["b"]["claimed"] == 0
    # Once A committed, a third pass at the same moment finds nothing due either.
    assert dispatch(now)["claimed"] == 0
    for schedule in schedules:
        runs = list(Run.objects.filter(schedule=schedule))
        assert len(runs) == 1 and runs[0].status == "succeeded"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "policy, wanted",
    [
        ("always", [True, True]),
        ("on_failure", [False, True]),
        ("on_success", [True, False]),
        ("never", [False, False]),
    ],
)
def test_notification_policy(cast, run_tasks, settings, policy, wanted) -> None:  # type: ignore[no-untyped-def]
    from scheduling.dispatcher import run_notification

    sent = []

    def receiver(sender, run, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(run.status)

    run_notification.connect(receiver)
    try:
        ok = make_schedule(cast.alice_tenant, name="ok", notification_policy=policy)
        bad = make_schedule(
            cast.alice_tenant, name="bad", action="agent_goal", goal="g", notification_policy=policy
        )
        settings.MEMORYHUB_AGENT_WEBHOOK_URL = ""
        run_tasks()
    finally:
        run_notification.disconnect(receiver)
    # A notification is due exactly where the policy asks for one (alice has no notification
    # webhook here, so it is recorded as no_webhook and nobody is marked notified).
    runs = [ok.runs.get(), bad.runs.get()]
    assert [Delivery.objects.filter(run=run).exists() for run in runs] == wanted
    assert set(Delivery.objects.values_list("status", flat=True)) <= {"no_webhook"}
    assert [run.notified for run in runs] == [False, False]
    assert sorted(sent) == sorted(
        s for s, n in zip(["succeeded", "failed"], wanted, strict=True) if n
    )


@pytest.mark.django_db
def test_an_empty_dispatch_step_while_a_schedule_is_due_is_counted(cast, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.models import Worker
    from memoryhub.plumbing import background
    from memoryhub.plumbing.background import Heartbeat
    from scheduling import dispatcher

    def empty_step_counted(lane: dispatcher.DispatchLane) -> int:
        beat = Heartbeat(lane.name)
        background._work_waits(
            lane, beat, timezone.now() + timedelta(seconds=background.WAITED_SECONDS + 1)
        )
        return beat.empty_steps

    later = timezone.now() + timedelta(hours=1)
    make_schedule(cast.alice_tenant, name="paused", status="paused")
    make_schedule(cast.alice_tenant, name="later", next_run_at=later + timedelta(hours=1))
    lane = dispatcher.DispatchLane()
    assert not lane.has_work(later)  # paused, or not due yet: no work
    make_schedule(cast.alice_tenant)
    # The normal path: the step claims it, and the empty step after it counts nothing.
    assert lane.step().done == 1
    assert not lane.step().found_work and empty_step_counted(lane) == 0
    # A step that passes a due schedule over is counted (Worker.empty_steps, on the dashboard).
    make_schedule(cast.alice_tenant, name="second")
    monkeypatch.setattr(dispatcher, "_claim_batch", lambda now, batch, on_claimed: [])
    assert not lane.step().found_work and empty_step_counted(lane) == 1
    assert Worker.objects.get(lane="dispatch").empty_steps == 1
