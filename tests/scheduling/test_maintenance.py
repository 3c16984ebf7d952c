"""The clusters' own schedules (built-in cadences on the maintenance cluster, the dispatcher):
registered by migration, kept in step with settings by one function, moved task paths rewritten;
the maintenance jobs do real work."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.models import OrmQ, Schedule

from memoryhub.models import RollingSummary
from memoryhub.tasks import MAINTENANCE
from retrieval.models import Chunk
from scheduling import tasks
from tests.base import post_events

pytestmark = pytest.mark.django_db

# Embedding and summarising are the work lanes' (manage.py work): their cadences are off by default.
NAMES = {"memoryhub:consolidate"}


def schedules() -> dict[str, Schedule]:
    return {s.name: s for s in Schedule.objects.filter(name__startswith="memoryhub:")}


def test_the_migration_registered_every_cadence_on_the_maintenance_cluster() -> None:
    rows = schedules()
    assert set(rows) == NAMES
    assert rows["memoryhub:consolidate"].func == "scheduling.tasks.consolidate"
    assert rows["memoryhub:consolidate"].minutes == 6 * 60  # the default interval
    assert all(row.repeats == -1 and row.schedule_type == Schedule.MINUTES for row in rows.values())
    # never in front of user schedules
    assert {row.cluster for row in rows.values()} == {MAINTENANCE}
    assert Schedule.objects.get(name="scheduling:dispatch").cluster is None  # the default cluster


def _cadence(monkeypatch, job: str, minutes: int) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setitem(tasks.MAINTENANCE_JOBS, job, (minutes, tasks.MAINTENANCE_JOBS[job][1]))


def test_sync_is_idempotent_and_follows_the_cadences(monkeypatch) -> None:
    assert set(tasks.sync_cluster_schedules().values()) == {"unchanged", "off"}
    _cadence(monkeypatch, "summarise", 15)
    Schedule.objects.create(name="memoryhub:summarise", func="x.y", schedule_type="I", minutes=1)
    Schedule.objects.create(name="memoryhub:summarise", func="x.y", schedule_type="I", minutes=1)
    _cadence(monkeypatch, "embed_backfill", 2)
    _cadence(monkeypatch, "consolidate", 0)
    done = tasks.sync_cluster_schedules()
    assert done == {
        "scheduling:dispatch": "unchanged",
        "memoryhub:embed_backfill": "created",
        "memoryhub:summarise": "updated",
        "memoryhub:consolidate": "off",
    }
    rows = schedules()
    assert set(rows) == {"memoryhub:embed_backfill", "memoryhub:summarise"}
    assert Schedule.objects.filter(name="memoryhub:summarise").count() == 1  # the duplicate is gone
    assert rows["memoryhub:summarise"].func == "scheduling.tasks.summarise"
    assert rows["memoryhub:summarise"].cluster == MAINTENANCE
    assert rows["memoryhub:embed_backfill"].minutes == 2
    assert rows["memoryhub:embed_backfill"].next_run <= timezone.now() + timedelta(minutes=2)
    _cadence(monkeypatch, "consolidate", 60)
    assert tasks.sync_cluster_schedules()["memoryhub:consolidate"] == "created"


def test_a_missed_cadence_runs_once_on_the_maintenance_cluster(monkeypatch) -> None:
    from django_q import scheduler as q_scheduler
    from django_q.brokers import get_broker
    from django_q.conf import Conf

    # The cluster's scheduler starts by closing stale connections: not the test's own one.
    monkeypatch.setattr(q_scheduler, "close_old_django_connections", lambda: None)
    Schedule.objects.filter(name="memoryhub:consolidate").update(
        next_run=timezone.now() - timedelta(days=3)
    )
    Schedule.objects.exclude(name="memoryhub:consolidate").update(
        next_run=timezone.now() + timedelta(hours=1)
    )
    q_scheduler.scheduler(broker=get_broker())  # the schedules cluster's scheduler leaves it alone
    assert not OrmQ.objects.exists()
    monkeypatch.setattr(Conf, "CLUSTER_NAME", MAINTENANCE)
    q_scheduler.scheduler(broker=get_broker(MAINTENANCE))
    queued = [(row.key, row.task["func"]) for row in OrmQ.objects.all()]
    # once, not once per missed period
    assert queued == [(MAINTENANCE, "scheduling.tasks.consolidate")]
    assert schedules()["memoryhub:consolidate"].next_run > timezone.now()


def test_embed_backfill_embeds_what_was_left_without_a_vector(
    alice, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        post_events(
            alice, "s1", {"role": "user", "content": "The spare key is under the blue pot."}
        )
    assert Chunk.objects.count() == 1
    Chunk.objects.update(embedding=None, embedding_model="")
    report = tasks.embed_backfill()
    assert report["embedded"] == 1 and report["remaining"] == 0
    assert Chunk.objects.get().embedding is not None


def test_summarise_rolls_the_summary_of_a_due_session(alice, settings, monkeypatch) -> None:
    # nothing summarised on append: the cadence must do it
    monkeypatch.setattr("memoryhub.summaries.AUTO_SUMMARISE", False)
    monkeypatch.setattr("memoryhub.summaries.BUDGET", 100)
    monkeypatch.setattr("memoryhub.summaries.MAX_SHARE", 1.0)
    post_events(
        alice, "s1", *[{"role": "user", "content": f"turn {i} " + "word " * 20} for i in range(12)]
    )
    assert not RollingSummary.objects.exists()
    tasks.summarise()
    assert RollingSummary.objects.filter(session__external_id="s1").exists()


def test_consolidate_reports_counts_without_id_lists(alice) -> None:
    from retrieval.lifecycle.models import ConsolidationReport

    post_events(alice, "s1", {"role": "user", "content": "hello"})
    report = tasks.consolidate()
    assert "ids" not in report and report["dry_run"] is False
    assert isinstance(report["counts"], dict)
    assert ConsolidationReport.objects.filter(pk=report["report_id"]).exists()


def test_starting_the_cluster_brings_its_schedules_in_step() -> None:
    from memoryhub.signals import cluster_starting

    Schedule.objects.filter(name__startswith="memoryhub:").delete()
    Schedule.objects.filter(name="scheduling:dispatch").update(func="x.y")
    cluster_starting.send(sender=None)  # what `manage.py run` sends before it starts the cluster
    assert set(schedules()) == NAMES
    assert Schedule.objects.get(name="scheduling:dispatch").func == "scheduling.tasks.dispatch"


def test_the_migration_rewrites_task_paths_that_moved() -> None:
    from django.apps import apps
    from django_q.models import Task
    from django_q.signing import SignedPackage

    migration = importlib.import_module("scheduling.migrations.0001_squashed_0005")
    old, new = "memoryhub.maintenance.summarise", "scheduling.tasks.summarise"
    Schedule.objects.create(name="memoryhub:summarise", func=old, schedule_type="I", minutes=15)
    now = timezone.now()
    Task.objects.create(
        id="a" * 32, name="failed-summarise", func=old, started=now, stopped=now, success=False
    )
    OrmQ.objects.create(
        key="default", payload=SignedPackage.dumps({"id": "b" * 32, "func": old, "args": ()})
    )
    OrmQ.objects.create(
        key="default", payload=SignedPackage.dumps({"id": "c" * 32, "func": "other.task"})
    )
    migration.rename(apps, migration.MOVED)
    assert Schedule.objects.get(name="memoryhub:summarise").func == new
    assert Task.objects.get(name="failed-summarise").func == new
    assert sorted(row.task["func"] for row in OrmQ.objects.all()) == ["other.task", new]
    migration.rename(apps, {n: o for o, n in migration.MOVED.items()})  # the way back
    assert Schedule.objects.get(name="memoryhub:summarise").func == old


def test_the_lanes_migration_renames_the_tree_task_and_drops_per_append_tasks() -> None:
    from django.apps import apps
    from django_q.signing import SignedPackage

    migration = importlib.import_module("scheduling.migrations.0001_squashed_0005")
    for i, func in enumerate(
        [
            "memoryhub.memory_tasks.build_summary_tree",
            "memoryhub.memory_tasks.summarise_session",
            "memoryhub.memory_tasks.extract_facts",
            "retrieval.tasks.index_events",
        ]
    ):
        OrmQ.objects.create(
            key="memoryhub",
            payload=SignedPackage.dumps({"id": f"{i:032d}", "func": func, "args": ()}),
        )
    migration.lanes_forwards(apps, None)
    # Still importable: index_events stays for tasks queued before the upgrade.
    assert sorted(row.task["func"] for row in OrmQ.objects.all()) == [
        "memoryhub.tasks.build_summary_tree",
        "retrieval.tasks.index_events",
    ]
