"""`manage.py queue_status`: django-q2 queue depth, failures, cluster schedules and schedule health."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand
from django.db.models import Count
from django.utils import timezone

from memoryhub.tasks import queue_counts


def queue_status() -> dict[str, Any]:
    from scheduling.models import Run, Schedule
    from scheduling.tasks import cluster_schedule_rows

    now = timezone.now()
    day_ago = now - timedelta(days=1)
    queue = queue_counts(recent_failures=5)
    return {
        "queued_tasks": queue["queued"],
        "succeeded_24h": queue["succeeded_24h"],
        "failed_24h": queue["failed_24h"],
        "failed_total": queue["failed_total"],
        "recent_failures": [
            {"name": f.name, "func": f.func, "stopped": f.stopped.isoformat(), "result": str(f.result)[:200]}
            for f in queue["recent_failures"]
        ],
        "cluster_schedules": cluster_schedule_rows(),
        "schedules": {
            "by_status": dict(Schedule.objects.values_list("status").annotate(n=Count("pk")).values_list("status", "n")),
            "overdue": Schedule.objects.filter(status="active", next_run_at__lt=now - timedelta(minutes=2)).count(),
            "failing": Schedule.objects.filter(consecutive_failures__gt=0).count(),
        },
        "runs_open": Run.objects.filter(status__in=["queued", "running"]).count(),
        "runs_failed_24h": Run.objects.filter(status="failed", started_at__gte=day_ago).count(),
    }


class Command(BaseCommand):
    help = "Show django-q2 queue depth and failures, the cluster's schedules and the health of schedules."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        status = queue_status()
        if options["json"]:
            self.stdout.write(json.dumps(status, indent=2))
            return
        self.stdout.write(f"queued tasks: {status['queued_tasks']}")
        self.stdout.write(f"tasks in 24h: {status['succeeded_24h']} succeeded, {status['failed_24h']} failed "
                          f"({status['failed_total']} failures stored)")
        for failure in status["recent_failures"]:
            self.stdout.write(f"  failed {failure['stopped']} {failure['func']}: {failure['result']}")
        self.stdout.write("cluster schedules:")
        for s in status["cluster_schedules"]:
            self.stdout.write(f"  {s['name']}: {s['func']} next {s['next_run']}{' OVERDUE' if s['overdue'] else ''}")
        health = status["schedules"]
        self.stdout.write(f"schedules: {health['by_status'] or 'none'}; overdue {health['overdue']}, "
                          f"failing {health['failing']}; runs open {status['runs_open']}, "
                          f"failed in 24h {status['runs_failed_24h']}")
