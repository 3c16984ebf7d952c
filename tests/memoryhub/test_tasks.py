"""Queueing background work: the tasks of one transaction reach the queue together, after commit."""

from __future__ import annotations

import pytest
from django.db import transaction
from django_q.models import OrmQ

from memoryhub.tasks import _Batch, enqueue_on_commit
from tests.base import post_events

pytestmark = pytest.mark.django_db


def queued_funcs() -> list[str]:
    return [row.task["func"] for row in OrmQ.objects.order_by("pk")]


def test_an_append_queues_its_tasks_in_one_commit(alice, settings, django_capture_on_commit_callbacks) -> None:
    settings.MEMORYHUB_TASKS_EAGER = False
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        post_events(alice, "s1", *[{"role": "user", "content": f"m{i}"} for i in range(4)])
    assert not OrmQ.objects.exists()
    batches = [c for c in callbacks if isinstance(c, _Batch)]
    assert len(batches) == 1  # one batch, however many tasks
    batches[0]()
    funcs = queued_funcs()
    assert "retrieval.tasks.index_events" in funcs
    assert "memoryhub.memory_tasks.summarise_session" in funcs


def test_tasks_of_a_rolled_back_savepoint_are_dropped(settings, django_capture_on_commit_callbacks) -> None:
    settings.MEMORYHUB_TASKS_EAGER = False
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            enqueue_on_commit("math.sqrt", 1)
            try:
                with transaction.atomic():
                    enqueue_on_commit("math.sqrt", 2)
                    raise RuntimeError("roll back the savepoint")
            except RuntimeError:
                pass
            enqueue_on_commit("math.sqrt", 3)
    assert [row.task["args"] for row in OrmQ.objects.order_by("pk")] == [(1,), (3,)]


def test_a_rolled_back_transaction_queues_nothing(settings, django_capture_on_commit_callbacks) -> None:
    settings.MEMORYHUB_TASKS_EAGER = False
    with django_capture_on_commit_callbacks(execute=True):
        try:
            with transaction.atomic():
                enqueue_on_commit("math.sqrt", 1)
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
    assert not OrmQ.objects.exists()


def test_eager_mode_runs_the_task_after_commit(settings, django_capture_on_commit_callbacks) -> None:
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
