"""Lanes in real processes: a schedule due during a 10k-chunk embedding backlog starts on time.

The clusters and lanes run as `manage.py run` starts them (its own list of commands), against the
test database, the maintenance cluster busy with consolidations meanwhile. Before lanes, one queue
held every append's tasks, and schedule runs waited behind thousands of them until the 900 s timeout
failed them unrun.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from memoryhub.management.commands.run import Command as RunCommand
from memoryhub.models import Worker
from memoryhub.tasks import MAINTENANCE, enqueue
from retrieval.models import Chunk
from scheduling.models import Run, Schedule
from tests.base import make_client, make_key, make_tenant, new_session
from tests.processes import Processes, base_env, wait_for

BACKLOG = 10_000


def make_backlog(tenant_id: int, session_pk: int) -> None:
    """10k chunks waiting for their vectors, as a bulk ingest leaves them (640-character texts)."""
    words = "the quick brown fox jumps over a lazy dog while ".split()
    chunks = []
    for i in range(BACKLOG):
        text = f"message {i}: " + " ".join(words[(i + j) % len(words)] for j in range(110))
        chunks.append(
            Chunk(
                tenant_id=tenant_id,
                session_id=session_pk,
                kind="event",
                text=text[:640],
                content_hash=hashlib.sha256(text.encode()).hexdigest(),
                sequence_start=i + 1,
                sequence_end=i + 1,
            )
        )
    Chunk.objects.bulk_create(chunks, batch_size=2000)


@pytest.mark.django_db(transaction=True)
def test_a_schedule_due_during_a_10k_chunk_backlog_starts_within_5_seconds(
    tmp_path: Path, settings
) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.models import Session

    settings.MEMORYHUB_TASKS_EAGER = False  # this process queues; the started ones work

    tenant = make_tenant("alice")
    new_session(make_client(make_key(tenant)), "ingest")
    make_backlog(tenant.pk, Session.objects.get(external_id="ingest").pk)
    for _ in range(20):  # bulk work for the maintenance cluster meanwhile: consolidations of it all
        enqueue("scheduling.tasks.consolidate", cluster=MAINTENANCE)
    env = base_env(MEMORYHUB_TASKS_EAGER="false")
    processes = Processes(tmp_path)
    try:
        # what `make run` starts
        for i, (_, command, extra) in enumerate(RunCommand().background_commands()):
            processes.start(f"{i}-{command[2]}", command, {**env, **extra})
        warm_up = Schedule.objects.create(
            tenant=tenant,
            name="warm-up",
            action="prune_runs",
            authority_scopes=["read", "write", "admin"],
            cadence_type="interval",
            cadence_value="3600",
            next_run_at=timezone.now(),
        )
        wait_for(
            lambda: Run.objects.filter(schedule=warm_up, status="succeeded").exists(),
            90,
            "the schedules cluster to run a first schedule",
            processes,
        )
        # Generous: CI once saw no vector 60 s after the first schedule ran (the timeout now also
        # prints what each database session waited on).
        wait_for(
            lambda: Chunk.objects.filter(embedding__isnull=False).exists(),
            120,
            "the embed lane to start",
            processes,
        )
        waiting = Chunk.objects.filter(embedding__isnull=True).count()
        due = timezone.now() + timedelta(seconds=3)
        schedule = Schedule.objects.create(
            tenant=tenant,
            name="on time",
            action="prune_runs",
            authority_scopes=["read", "write", "admin"],
            cadence_type="interval",
            cadence_value="3600",
            next_run_at=due,
        )
        run = wait_for(
            lambda: Run.objects.filter(schedule=schedule, status="succeeded").first(),
            60,
            "the schedule's run",
            processes,
        )
        left_then = (
            Chunk.objects.filter(indexed_at__gt=run.started_at, embedding__isnull=False).count()
            + Chunk.objects.filter(embedding__isnull=True).count()
        )
        busy = Worker.objects.filter(lane="embed").values_list("busy", flat=True).first()
    finally:
        processes.stop_all()
    lateness = (run.started_at - due).total_seconds()
    print(
        f"backlog at due time {waiting}, left when the run started {left_then}, lateness"
        f" {lateness:.2f} s"
    )
    # a backlog all along
    assert waiting > 1000 and left_then > 0 and busy, (waiting, left_then, busy)
    assert 0 <= lateness <= 5, f"started {lateness:.1f} s after its due time"
    assert run.due_at == due
