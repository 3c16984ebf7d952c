"""Queued work: enqueue by dotted path, on commit, onto a django-q2 cluster; the queue's counts;
the core's task entry points.

Only tasks.py modules import django_q. With MEMORYHUB_TASKS_EAGER (tests, one-off tools) the
function runs inline instead; the setting is read at call time, unlike Q_CLUSTER.
The counts live here, in the lowest layer that talks to the queue, so that the dashboard (core),
the stats endpoint (retrieval) and `manage.py queue_status` (scheduling) share one definition.

Two clusters share the queue tables, one per lane (settings.Q_CLUSTER and its ALT_CLUSTERS):
SCHEDULES runs user schedule runs and nothing else, MAINTENANCE the built-in cadences and bulk
jobs an operator asks for. Per-append work (chunks, embeddings, summaries, facts) is not queued
at all: the tables are its queue (memoryhub.plumbing.background).
"""

from __future__ import annotations

import logging
import signal
import threading
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.module_loading import import_string

logger = logging.getLogger(__name__)

SCHEDULES = "memoryhub"  # the default cluster (Q_CLUSTER["name"]): user schedule runs only
MAINTENANCE = "maintenance"  # Q_CLUSTER["ALT_CLUSTERS"]["maintenance"]: cadences and bulk jobs


# --- stopping a cluster within a supervisor's grace -----------------------------------------------
#
# django-q2 stops a cluster by letting each worker finish its task, however long (a schedule run
# waits up to scheduling.actions.AGENT_WEBHOOK_TIMEOUT_SECONDS on its webhook, a bulk job for
# hours): `run` then had to SIGKILL it. So a worker takes SIGTERM as "stop now": a task in progress
# is interrupted (Interrupted is raised inside it, where it can record itself), an idle worker
# exits. `manage.py run` sends it to the workers of a cluster still stopping after
# memoryhub.plumbing.supervision.CLUSTER_DRAIN_SECONDS; the clusters' main processes get SIGTERM as
# before.


class Interrupted(Exception):  # noqa: N818 - what happened to the task, not an error of its own
    """The cluster is stopping (SIGTERM) while this task runs."""


_worker = threading.local()


def _on_worker_spawn(**_: Any) -> None:
    signal.signal(signal.SIGTERM, _stop_worker)


def _task_started(**_: Any) -> None:
    _worker.busy = True


def _task_finished(**_: Any) -> None:
    _worker.busy = False


def _stop_worker(signum: int, frame: Any) -> None:
    if getattr(_worker, "busy", False):
        _worker.busy = False  # once: recording the interruption is not interrupted again
        raise Interrupted("MemoryHub is stopping")
    raise SystemExit(0)  # idle (waiting for a task): multiprocessing ends the worker quietly


def connect_worker_signals() -> None:
    """Called once at start (MemoryhubConfig.ready); the handlers act only in cluster workers."""
    from django_q.signals import post_execute_in_worker, post_spawn, pre_execute

    post_spawn.connect(_on_worker_spawn, dispatch_uid="memoryhub-worker-sigterm")
    pre_execute.connect(_task_started, dispatch_uid="memoryhub-task-started")
    post_execute_in_worker.connect(_task_finished, dispatch_uid="memoryhub-task-finished")


def enqueue(
    func_path: str, *args: Any, group: str | None = None, cluster: str | None = None, **kwargs: Any
) -> str | None:
    """Run `func_path(*args, **kwargs)` on `cluster` (default: the schedules cluster), or inline
    when eager. Returns the task id."""
    if settings.MEMORYHUB_TASKS_EAGER:
        import_string(func_path)(*args, **kwargs)
        return None
    from django_q.tasks import async_task

    options: dict[str, Any] = {"group": group} if group else {}
    if cluster and cluster != settings.Q_CLUSTER["name"]:
        options["cluster"] = cluster
    return async_task(func_path, *args, q_options=options, **kwargs)


def enqueue_on_commit(
    func_path: str, *args: Any, group: str | None = None, cluster: str | None = None, **kwargs: Any
) -> None:
    """Enqueue once the current transaction commits, so the task sees the rows it is about.

    With the default ORM broker the task row is written inside the current transaction (a
    transactional outbox: it commits or rolls back with the work it is about). With another
    broker (Redis) the tasks one transaction enqueues are sent together after it commits.
    """
    if settings.MEMORYHUB_TASKS_EAGER:
        transaction.on_commit(
            lambda: enqueue(func_path, *args, group=group, cluster=cluster, **kwargs)
        )
        return
    connection = transaction.get_connection()
    if not connection.in_atomic_block or _queue_is_in("default"):
        # The queue is a table of this database: a task written inside the transaction becomes
        # visible to the cluster exactly when the rows it is about commit, and vanishes with them
        # on a rollback. No commit of its own.
        enqueue(func_path, *args, group=group, cluster=cluster, **kwargs)
        return
    # Join the batch registered at exactly this savepoint depth, if any: a batch registered
    # inside a savepoint that rolls back is dropped by Django together with its tasks.
    savepoints = set(connection.savepoint_ids)
    for sids, func, _robust in reversed(connection.run_on_commit):
        if isinstance(func, _Batch) and sids == savepoints:
            func.tasks.append((func_path, args, group, cluster, kwargs))
            return
    batch = _Batch()
    batch.tasks.append((func_path, args, group, cluster, kwargs))
    transaction.on_commit(batch)


def queue_counts(*, recent_failures: int = 0) -> dict[str, Any]:
    """The task queue at a glance: tasks waiting (`queued`), finished in the last 24 hours
    (`succeeded_24h`, `failed_24h`), failures stored (`failed_total`), and the newest
    `recent_failures` failed tasks. Two queries, three with the failures."""
    from django_q.models import Failure, OrmQ, Task

    day_ago = timezone.now() - timedelta(days=1)
    # Success and Failure are proxies of Task: one pass over the table counts all three.
    finished = Task.objects.aggregate(
        succeeded_24h=Count("id", filter=Q(success=True, stopped__gte=day_ago)),
        failed_24h=Count("id", filter=Q(success=False, stopped__gte=day_ago)),
        failed_total=Count("id", filter=Q(success=False)),
    )
    failures = (
        list(
            Failure.objects.order_by("-stopped").only("id", "name", "func", "stopped", "result")[
                :recent_failures
            ]
        )
        if recent_failures
        else []
    )
    return {"queued": OrmQ.objects.count(), **finished, "recent_failures": failures}


def finished_tasks(*, success: bool) -> QuerySet[Any]:
    """Tasks the cluster finished (kept by django-q2: every failure, the latest successes)."""
    from django_q.models import Task

    return Task.objects.filter(success=success)


def _queue_is_in(alias: str) -> bool:
    """Whether the django-q2 broker is the ORM broker on database `alias`."""
    cluster = settings.Q_CLUSTER
    return cluster.get("orm") == alias and not cluster.get("redis")


class _Batch:
    """An on-commit callback that writes the queued tasks of one transaction at once."""

    def __init__(self) -> None:
        self.tasks: list[tuple[str, tuple, str | None, str | None, dict]] = []

    def __call__(self) -> None:
        with transaction.atomic():
            for func_path, args, group, cluster, kwargs in self.tasks:
                enqueue(func_path, *args, group=group, cluster=cluster, **kwargs)


# --- the core's task entry points (take ids, load, call a domain function) ---------------------


def build_summary_tree(session_pk: int, final: bool = False) -> int:
    """POST /sessions/{id}/summary/tree/ asks for this on the maintenance cluster."""
    from memoryhub.models import Session
    from memoryhub.summaries import build_tree

    session = Session.objects.filter(pk=session_pk).first()
    return build_tree(session, final=final) if session is not None else 0
