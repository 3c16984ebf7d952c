"""Figures of a bench.pipeline run that is still draining (or was cut short with --keep-data):
schedule lateness so far, and the raw model on a sample of the chunks the lanes embedded since a
given time (the same function, backend, threads and niceness as the bench's own raw figure), in a
process of its own against that run's data folder.

    nice -n 10 .venv/bin/python -m bench.pipeline_partial /tmp/memoryhub-bench-XXXX 2026-11-23T21:19:44+00:00 800

The lane's own figures (drain rate, CPU per chunk) are the lines the bench prints once a minute.
"""  # noqa: E501

from __future__ import annotations

import json
import math
import os
import statistics
import sys
from datetime import datetime
from pathlib import Path


def main() -> None:
    data_dir, since, sample = (
        Path(sys.argv[1]),
        datetime.fromisoformat(sys.argv[2]),
        int(sys.argv[3]),
    )
    # The run's PostgreSQL is already up (its `manage.py run` owns it): connect, never start one.
    os.environ.update(
        MEMORYHUB_DATA_DIR=str(data_dir),
        SECRET_KEY="bench-partial",
        LOG_LEVEL="WARNING",
        DATABASE_URL=f"postgresql://postgres@/memoryhub?host={data_dir / 'pg18'}",
        DJANGO_SETTINGS_MODULE="memoryhub.settings",
    )
    import django

    django.setup()

    from bench.pipeline import raw_throughput
    from scheduling.models import Run

    late = sorted(
        (r.started_at - r.due_at).total_seconds()
        for r in Run.objects.filter(status="succeeded", due_at__gte=since)
    )
    unfinished = list(
        Run.objects.filter(due_at__gte=since)
        .exclude(status="succeeded")
        .values_list("status", flat=True)
    )
    print(
        json.dumps(
            {
                "schedule_runs": len(late),
                "not_succeeded": unfinished,
                "lateness_p50_s": round(statistics.median(late), 2),
                "lateness_p95_s": round(late[max(0, math.ceil(0.95 * len(late)) - 1)], 2),
                "lateness_max_s": round(late[-1], 2),
            }
        ),
        flush=True,
    )
    if sample:
        from memoryhub.management.commands.work import NICE

        print(json.dumps(raw_throughput("minilm", since, sample, NICE)), flush=True)


if __name__ == "__main__":
    main()
