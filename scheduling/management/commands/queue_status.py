"""`manage.py queue_status`: the lanes and the embedding backlog per tenant (with an ETA), django-q2
queue depth and failures, cluster schedules and schedule health."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand
from django.db.models import Count
from django.utils import timezone

from memoryhub.models import StepFailure
from memoryhub.plumbing.background import live_workers
from memoryhub.session_work import due_sessions
from memoryhub.tasks import queue_counts
from retrieval.embedding import backlog, embedding_rate


def queue_status() -> dict[str, Any]:
    from scheduling.models import Run, Schedule
    from scheduling.tasks import cluster_schedule_rows

    now = timezone.now()
    day_ago = now - timedelta(days=1)
    queue = queue_counts(recent_failures=5)
    return {
        "lanes": [
            {
                "lane": w.lane,
                "worker": w.name,
                "busy": w.busy,
                "rate": round(w.rate, 2),
                "done": w.done,
                "failed": w.failed,
                "empty_steps": w.empty_steps,
                "model_share": None if w.model_share is None else round(w.model_share, 3),
                "seen": w.seen_at.isoformat(),
            }
            for w in live_workers()
        ],
        "embedding_backlog": [
            {k: v for k, v in row.items() if k != "tenant_id"} for row in backlog()
        ],
        "embedding_rate_per_second": round(embedding_rate(), 2),
        # The summarise lane's own definition of its work (memoryhub.session_work.due_sessions).
        "sessions_due": due_sessions().count(),
        "sessions_set_aside": StepFailure.objects.filter(set_aside=True).count(),
        "queued_tasks": queue["queued"],
        "succeeded_24h": queue["succeeded_24h"],
        "failed_24h": queue["failed_24h"],
        "failed_total": queue["failed_total"],
        "recent_failures": [
            {
                "name": f.name,
                "func": f.func,
                "stopped": f.stopped.isoformat(),
                "result": str(f.result)[:200],
            }
            for f in queue["recent_failures"]
        ],
        "cluster_schedules": cluster_schedule_rows(),
        "schedules": {
            "by_status": dict(
                Schedule.objects.values_list("status")
                .annotate(n=Count("pk"))
                .values_list("status", "n")
            ),
            "overdue": (
                Schedule.objects.filter(
                    status="active", next_run_at__lt=now - timedelta(minutes=2)
                ).count()
            ),
            "failing": Schedule.objects.filter(consecutive_failures__gt=0).count(),
        },
        "runs_open": Run.objects.filter(status__in=["queued", "running"]).count(),
        "runs_failed_24h": Run.objects.filter(status="failed", started_at__gte=day_ago).count(),
    }


class Command(BaseCommand):
    help = (
        "Show django-q2 queue depth and failures, the cluster's schedules and the health of"
        " schedules."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        status = queue_status()
        if options["json"]:
            self.stdout.write(json.dumps(status, indent=2))
            return
        self.write_lanes(status)
        self.stdout.write(f"queued tasks: {status['queued_tasks']}")
        self.stdout.write(
            f"tasks in 24h: {status['succeeded_24h']} succeeded, {status['failed_24h']} failed "
            f"({status['failed_total']} failures stored)"
        )
        for failure in status["recent_failures"]:
            self.stdout.write(
                f"  failed {failure['stopped']} {failure['func']}: {failure['result']}"
            )
        self.stdout.write("cluster schedules:")
        for s in status["cluster_schedules"]:
            self.stdout.write(
                f"  {s['name']}: {s['func']} next"
                f" {s['next_run']}{' OVERDUE' if s['overdue'] else ''}"
            )
        health = status["schedules"]
        self.stdout.write(
            f"schedules: {health['by_status'] or 'none'}; overdue {health['overdue']}, "
            f"failing {health['failing']}; runs open {status['runs_open']}, "
            f"failed in 24h {status['runs_failed_24h']}"
        )

    def write_lanes(self, status: dict[str, Any]) -> None:
        self.stdout.write("lanes:" if status["lanes"] else "lanes: none running (manage.py work)")
        for w in status["lanes"]:
            self.stdout.write(
                f"  {w['lane']} on {w['worker']}: {'busy' if w['busy'] else 'idle'}, "
                f"{w['rate']}/s while busy, {w['done']} done, {w['failed']} failed"
                + (
                    f", {w['empty_steps']} EMPTY STEPS WITH WORK WAITING"
                    if w["empty_steps"]
                    else ""
                )
            )
        self.stdout.write(
            f"embedding backlog ({status['embedding_rate_per_second']}/s):"
            if status["embedding_backlog"]
            else "embedding backlog: none"
        )
        for row in status["embedding_backlog"]:
            eta = "no rate yet" if row["eta_seconds"] is None else f"ETA {row['eta_seconds']:.0f} s"
            self.stdout.write(
                f"  {row['tenant']}: {row['waiting']} waiting ({eta}), {row['set_aside']} set"
                f" aside, {row['sentences_waiting']} waiting for sentence vectors"
            )
        self.stdout.write(f"sessions due for the summarise lane: {status['sessions_due']}")
        self.stdout.write(f"sessions set aside: {status['sessions_set_aside']}")
