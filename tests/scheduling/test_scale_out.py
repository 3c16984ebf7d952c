"""Scale-out on real parts: two web servers and two worker sets (lanes + schedules cluster) against
one PostgreSQL and a real Redis (django-q2's broker). While events stream in through both web
servers and schedules fire every few seconds, one worker set is killed with SIGKILL mid-batch.
Afterwards every event was indexed once and embedded once, the killed set's batch was embedded
by the survivor, and every due time of every schedule has exactly one run, finished.

The kill is staged, not waited for by luck: the first half of the events is appended before any
embed lane runs (a backlog of several batches), then this test holds a SHARE lock on the chunk
table while both embed lanes start. Each claims a batch (FOR UPDATE SKIP LOCKED: not blocked by
SHARE) and then waits in its vector UPDATE (blocked by SHARE): both are inside a batch, visibly in
pg_stat_activity, for as long as the test wants. An earlier version waited for both lanes'
heartbeats to say busy while the backlog was over 50: that only happens during the few seconds the
stream lasts, and with the hash embedder and the one-statement vector write the lanes drain it as
fast as it comes, so on a quiet machine the moment never came.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.db.models import Count
from django.utils import timezone

from memoryhub.models import Event, Worker
from retrieval.embedding import BACKFILL_BATCH
from retrieval.models import Chunk
from scheduling.dispatcher import REQUEUE_SECONDS, RUN_TIMEOUT_SECONDS
from scheduling.models import Run, Schedule
from tests.base import make_key, make_tenant
from tests.processes import Processes, answers, base_env, free_port, wait_for

pytest.importorskip(
    "redis", reason="the redis client is not installed (pip install memoryhub[redis])"
)
REDIS = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(
    REDIS is None,
    reason="redis-server is not installed (Debian: apt-get install "
    "redis-server; .ci/run installs it)",
)

SESSIONS, BATCHES, PER_BATCH = 12, 10, 8  # 960 events, half before the embed lanes start
# chunks a lane claims at once: the first half leaves 480, i.e. 10 batches
EMBED_BATCH = BACKFILL_BATCH
INTERVAL = 5  # seconds between due times of each schedule
# retrieval.embedding._write_vectors
VECTOR_WRITE = f"UPDATE {Chunk._meta.db_table} c SET embedding"


def post(url: str, key: str, body: dict[str, Any]) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


def ingest(webs: list[str], key: str, batches: range, failures: list[str]) -> None:
    """Each session's batches alternate between the two web servers, several sessions at once."""

    def one_session(s: int) -> None:
        for b in batches:
            events = [
                {
                    "role": "user" if i % 2 == 0 else "assistant",
                    "content": f"session {s} batch {b} message {i}: "
                    + "lorem ipsum dolor " * (5 + i * 3),
                }
                for i in range(PER_BATCH)
            ]
            try:
                post(f"{webs[(s + b) % 2]}/api/v1/sessions/s{s}/events/", key, {"events": events})
            except Exception as exc:  # recorded, asserted on below
                failures.append(f"s{s} b{b}: {exc}")

    threads = [threading.Thread(target=one_session, args=(s,)) for s in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def lock_chunk_writes() -> psycopg.Connection[Any]:
    """A connection of its own holding SHARE on the chunk table until it is closed or rolled back:
    claims (ROW SHARE) go through, vector writes and new chunks (ROW EXCLUSIVE) wait."""
    params = connection.get_connection_params()
    for name in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(name, None)
    holder = psycopg.connect(**params)
    holder.execute(f"LOCK TABLE {Chunk._meta.db_table} IN SHARE MODE")
    return holder


def waiting_vector_writes() -> dict[str, int]:
    """application_name -> the transaction id of its embed lane, for lanes that hold a claimed
    batch and wait to write its vectors."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT application_name, backend_xid::text FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE %s",
            [VECTOR_WRITE + "%"],
        )
        return {name: int(xid) for name, xid in cursor.fetchall()}


def claimed_by(xid: int) -> list[int]:
    """The chunks a transaction holds FOR UPDATE (their xmax is its id while it lasts)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM {Chunk._meta.db_table} WHERE xmax::text = %s", [str(xid)])
        return sorted(row[0] for row in cursor.fetchall())


# The dispatcher's two passes over lost runs as they will run minutes from now, through the `now`
# they take (the clock they read): a run queued for over 5 s is then past REQUEUE_SECONDS (sent
# again), one running for over 30 s past RUN_TIMEOUT_SECONDS (failed). Nothing is rewritten.
LATER_PASSES = f"""
from datetime import timedelta
from django.utils import timezone
from scheduling.dispatcher import requeue_waiting_runs, time_out_stuck_runs
now = timezone.now()
time_out_stuck_runs(now + timedelta(seconds={RUN_TIMEOUT_SECONDS - 30}))
requeue_waiting_runs(now + timedelta(seconds={REQUEUE_SECONDS - 5}))
"""


def finish_what_the_killed_set_held(env: dict[str, str]) -> bool:
    """Whether every run finished. The killed set's runs stay queued (their task was taken from
    Redis by a killed worker) or running. The later passes run in a process configured as the
    worker sets are (a task they send again goes to Redis, where the survivor takes it), so that
    the survivor resends or fails them now instead of minutes later."""
    subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", LATER_PASSES],
        cwd=Path(__file__).parents[2],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return not Run.objects.filter(status__in=["queued", "running"]).exists()


def start_set(processes: Processes, name: str, env: dict[str, str]) -> list[Any]:
    """A worker set as `manage.py run` starts one (less the maintenance cluster): the schedules
    cluster and the dispatch lane now, the embed and summarise lanes later (start_lanes)."""
    return [
        processes.manage(f"{name}-cluster", "qcluster", env=env),
        processes.manage(f"{name}-dispatch", "work", "--lanes", "dispatch", "--nice", "0", env=env),
    ]


def start_lanes(processes: Processes, name: str, env: dict[str, str]) -> Any:
    return processes.manage(
        f"{name}-lanes",
        "work",
        "--lanes",
        "embed,summarise",
        env={**env, "PGAPPNAME": f"{name}-lanes"},
    )


@pytest.mark.django_db(transaction=True)
def test_two_webs_two_worker_sets_redis_and_a_sigkill(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    settings.MEMORYHUB_TASKS_EAGER = False
    redis_port = free_port()
    # Nothing inline in the started processes either (an inherited MEMORYHUB_TASKS_EAGER would let
    # the web servers embed and the lanes idle).
    env = base_env(
        Q_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0",
        MEMORYHUB_TASKS_EAGER="false",
        Q_WORKERS="2",
        WEB_WORKERS="1",
        MEMORYHUB_ADMIN_PASSWORD="x" * 12,
    )
    tenant = make_tenant("alice")
    key = make_key(tenant)
    processes = Processes(tmp_path)
    # stopped after the clusters, so that their logs end without broker errors
    broker = Processes(tmp_path)
    holder = None
    try:
        broker.start(
            "redis",
            [
                str(REDIS),
                "--port",
                str(redis_port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            env,
        )
        webs = []
        for name in ("web-a", "web-b"):  # one after the other: the first start bootstraps
            port = free_port()
            processes.manage(name, "run", "--no-cluster", "--port", str(port), env=env)
            webs.append(f"http://127.0.0.1:{port}")
            wait_for(
                lambda port=port: answers(f"http://127.0.0.1:{port}/api/v1/health/"),
                120,
                f"{name} to serve",
                processes,
            )
        sets = {name: start_set(processes, name, env) for name in ("set-a", "set-b")}
        wait_for(
            lambda: Worker.objects.filter(lane="dispatch").count() == 2,
            120,
            "both dispatch lanes",
            processes,
        )
        first_due = timezone.now() + timedelta(seconds=3)
        schedules = [
            Schedule.objects.create(
                tenant=tenant,
                name=f"every {INTERVAL}s #{i}",
                action="prune_runs",
                authority_scopes=["read", "write", "admin"],
                cadence_type="interval",
                cadence_value=str(INTERVAL),
                next_run_at=first_due,
            )
            for i in range(3)
        ]
        failures: list[str] = []
        ingest(webs, key, range(BATCHES // 2), failures)  # no embed lane yet: all of it waits
        assert Chunk.objects.filter(embedding__isnull=True).count() >= 2 * EMBED_BATCH

        holder = lock_chunk_writes()
        for name in ("set-a", "set-b"):
            sets[name].append(start_lanes(processes, name, env))
        lanes = wait_for(
            lambda: (w := waiting_vector_writes()).keys() >= {"set-a-lanes", "set-b-lanes"} and w,
            120,
            "both embed lanes inside a batch",
            processes,
            every=0.1,
        )
        held_by_a = claimed_by(lanes["set-a-lanes"])
        assert 0 < len(held_by_a) <= EMBED_BATCH and not set(held_by_a) & set(
            claimed_by(lanes["set-b-lanes"])
        )
        streaming = threading.Thread(
            target=ingest, args=(webs, key, range(BATCHES // 2, BATCHES), failures)
        )
        streaming.start()  # its appends wait for the lock a moment, then go on during the kill
        for process in sets["set-a"]:
            processes.kill(process)  # its transaction dies with its connection, uncommitted
        killed_at = timezone.now()
        holder.rollback()
        streaming.join(120)
        assert not streaming.is_alive()
        wait_for(
            lambda: not Chunk.objects.filter(embedding__isnull=True).exists(),
            120,
            "every chunk embedded by the surviving set",
            processes,
        )
        time.sleep(INTERVAL * 3)  # due times after the kill, run by the survivor alone
        Schedule.objects.update(status="paused")
        wait_for(
            lambda: finish_what_the_killed_set_held(env),
            300,
            "every claimed run finished",
            processes,
            every=2,
        )
    finally:
        if holder is not None:
            holder.close()
        processes.stop_all()
        broker.stop_all()
    assert not failures, failures
    # Every event indexed once (one chunk each: they are all shorter than a chunk) and embedded
    # once.
    assert Event.objects.count() == SESSIONS * BATCHES * PER_BATCH
    per_event = (
        Chunk.objects.filter(kind="event")
        .values("session_id", "sequence_start")
        .annotate(n=Count("id"))
    )
    assert per_event.count() == Event.objects.count() and {row["n"] for row in per_event} == {1}
    assert set(Chunk.objects.values_list("embedding_attempts", flat=True)) == {1}  # summaries' too
    # The killed set's batch was rolled back (its write would date from before the kill) and
    # embedded afterwards by the survivor, once.
    redone = Chunk.objects.filter(pk__in=held_by_a)
    assert redone.filter(embedding__isnull=False, indexed_at__gt=killed_at).count() == len(
        held_by_a
    )
    # Every due time of every schedule ran once, before and after the kill, and finished.
    for schedule in schedules:
        dues = list(
            Run.objects.filter(schedule=schedule).order_by("due_at").values_list("due_at", "status")
        )
        times = [due for due, _ in dues]
        assert times[0] == first_due and times[-1] > killed_at, times
        assert all(
            b - a == timedelta(seconds=INTERVAL) for a, b in zip(times, times[1:], strict=False)
        ), times
        assert {status for _, status in dues} <= {"succeeded"} | {"failed"}, dues
        lost = [due for due, status in dues if status == "failed"]
        # Only a run that was executing in the killed set may fail (its timeout); none is lost
        # unrun.
        assert len(lost) <= 1, (
            lost,
            Run.objects.filter(status="failed").values_list("output", flat=True),
        )
