"""55 rapid "run now" calls while the cluster executes the runs: no 500, no run left queued.

execute_run used to lock its run with select_related("schedule__tenant"), so FOR UPDATE took the
schedule and tenant rows too, and concurrent run-now inserts (which hold a key-share lock on the
schedule) and finishing runs (which lock run, then schedule) deadlocked with it.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import pytest
from django.db import connection

from scheduling.dispatcher import execute_run
from scheduling.models import Run
from tests.base import make_client, make_key, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)

CALLS = 55
CALLERS = 5
WORKERS = 2  # the cluster's default


def test_55_rapid_run_now_calls_all_finish(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False  # the runs are executed below, by two "cluster workers"
    # finishing runs prune history meanwhile
    monkeypatch.setattr("scheduling.actions.RUNS_KEPT", 10)
    client = make_client(make_key(make_tenant("alice")))
    created = client.post(
        "/api/v1/schedules/",
        {"name": "storm", "action": "summarise", "cadence": {"type": "interval", "value": "1h"}},
        format="json",
    )
    assert created.status_code == 201, created.content
    url = f"/api/v1/schedules/{created.json()['id']}/run/"
    runs: queue.Queue[str | None] = queue.Queue()
    statuses: list[int] = []
    errors: list[BaseException] = []

    def call(count: int) -> None:
        caller = make_client(client._credentials["HTTP_AUTHORIZATION"].split()[1])
        for _ in range(count):
            response = caller.post(url)
            statuses.append(response.status_code)
            if response.status_code == 202:
                runs.put(response.json()["id"])

    def work() -> None:
        while (run_id := runs.get()) is not None:
            execute_run(run_id)

    threads = [_thread(call, errors, CALLS // CALLERS) for _ in range(CALLERS)]
    workers = [_thread(work, errors) for _ in range(WORKERS)]
    for thread in threads:
        thread.join(120)
    for _ in workers:
        runs.put(None)
    for worker in workers:
        worker.join(120)
    assert not errors, errors
    assert statuses == [202] * CALLS, statuses
    assert not Run.objects.filter(status__in=["queued", "running"]).exists()


def _thread(target: Any, errors: list[BaseException], *args: Any) -> threading.Thread:
    def body() -> None:
        try:
            target(*args)
        except BaseException as exc:  # reported in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=body)
    thread.start()
    return thread
