"""Queueing background work: a task reaches the cluster only with the rows it is about."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction
from django_q.models import OrmQ

from memoryhub.tasks import _Batch, enqueue_on_commit
from tests.base import post_events

pytestmark = pytest.mark.django_db


def queued_args() -> list[tuple]:
    return [row.task["args"] for row in OrmQ.objects.order_by("pk")]


@pytest.fixture
def cluster_mode(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False


@pytest.fixture
def redis_broker(settings, cluster_mode) -> None:  # type: ignore[no-untyped-def]
    # Only the batching is looked at: nothing is sent to this address.
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "orm": None, "redis": "redis://127.0.0.1:1/0"}


def test_an_append_queues_no_task(alice, cluster_mode, django_capture_on_commit_callbacks) -> None:
    # Chunks are written by the append itself; embeddings and summaries are the lanes' (the tables
    # are their queue): nothing per append reaches django-q2, in this transaction or after it.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        post_events(alice, "s1", *[{"role": "user", "content": f"m{i}"} for i in range(4)])
    assert not OrmQ.objects.exists()
    assert not [c for c in callbacks if isinstance(c, _Batch)]


def test_tasks_go_to_the_cluster_of_their_lane(cluster_mode) -> None:
    from memoryhub.tasks import MAINTENANCE

    enqueue_on_commit("math.sqrt", 1)
    enqueue_on_commit("math.sqrt", 2, cluster=MAINTENANCE)
    assert list(OrmQ.objects.order_by("pk").values_list("key", flat=True)) == [
        "memoryhub",
        MAINTENANCE,
    ]


def test_tasks_of_a_rolled_back_savepoint_are_dropped(cluster_mode) -> None:
    with transaction.atomic():
        enqueue_on_commit("math.sqrt", 1)
        try:
            with transaction.atomic():
                enqueue_on_commit("math.sqrt", 2)
                raise RuntimeError("roll back the savepoint")
        except RuntimeError:
            pass
        enqueue_on_commit("math.sqrt", 3)
    assert queued_args() == [(1,), (3,)]


def test_a_rolled_back_transaction_queues_nothing(cluster_mode) -> None:
    try:
        with transaction.atomic():
            enqueue_on_commit("math.sqrt", 1)
            assert queued_args() == [(1,)]
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert queued_args() == []


@pytest.mark.django_db(transaction=True)
def test_the_cluster_sees_a_task_only_once_its_rows_commit(settings) -> None:
    settings.MEMORYHUB_TASKS_EAGER = False
    seen: list[int] = []

    def look_from_another_connection() -> None:
        try:
            seen.append(OrmQ.objects.count())
        finally:
            connections.close_all()

    with transaction.atomic():
        enqueue_on_commit("math.sqrt", 1)
        other = threading.Thread(target=look_from_another_connection)
        other.start()
        other.join()
    other = threading.Thread(target=look_from_another_connection)
    other.start()
    other.join()
    assert seen == [0, 1]
    OrmQ.objects.all().delete()


def test_another_broker_gets_one_batch_after_commit(
    redis_broker, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            enqueue_on_commit("math.sqrt", 1)
            try:
                with transaction.atomic():
                    enqueue_on_commit("math.sqrt", 2)
                    raise RuntimeError("roll back the savepoint")
            except RuntimeError:
                pass
            enqueue_on_commit("math.sqrt", 3)
    batches = [c for c in callbacks if isinstance(c, _Batch)]
    assert len(batches) == 1
    assert [args for _, args, _, _, _ in batches[0].tasks] == [(1,), (3,)]
    assert not OrmQ.objects.exists()


def test_eager_mode_runs_the_task_after_commit(
    settings, django_capture_on_commit_callbacks
) -> None:
    seen: list[int] = []
    settings.MEMORYHUB_TASKS_EAGER = True
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with transaction.atomic():
            enqueue_on_commit("tests.memoryhub.test_tasks.record", seen, 7)
        assert seen == []
    for callback in callbacks:
        callback()
    assert seen == [7] and not OrmQ.objects.exists()


def record(seen: list[int], value: int) -> None:
    seen.append(value)


def test_queue_counts_counts_waiting_finished_and_failed_tasks(
    cluster_mode, django_assert_num_queries
) -> None:  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from django.utils import timezone
    from django_q.models import Task

    from memoryhub.tasks import queue_counts

    now = timezone.now()
    enqueue_on_commit("retrieval.tasks.embed_chunks", [1])  # outside a transaction: queued at once
    for i, (success, age) in enumerate(
        [(True, 1), (True, 30), (False, 2), (False, 3), (False, 48)]
    ):
        Task.objects.create(
            id=f"{i:032d}",
            name=f"task-{i}",
            func="x.y",
            started=now - timedelta(hours=age),
            stopped=now - timedelta(hours=age),
            success=success,
            result="r",
        )
    with django_assert_num_queries(2):
        counts = queue_counts()
    assert counts == {
        "queued": 1,
        "succeeded_24h": 1,
        "failed_24h": 2,
        "failed_total": 3,
        "recent_failures": [],
    }
    newest = queue_counts(recent_failures=2)["recent_failures"]
    assert [f.name for f in newest] == ["task-2", "task-3"]  # newest first, two of three
