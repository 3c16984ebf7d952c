"""The dashboard's charts as plain data (time axis in epoch seconds, one list per series), drawn by
uPlot in the browser and refreshed as JSON. Every chart can be narrowed to one tenant, except the
task queue's (django-q2 knows no tenants)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.apps import apps
from django.db.models import Count, Model, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from memoryhub import metrics
from memoryhub.models import ApiUsage, Event
from memoryhub.tasks import finished_tasks

CHART_DAYS = 30
BACKLOG_HOURS = 24
BACKLOG_BUCKET = "15 minutes"
GREEN, BLUE, BROWN, RED, GREY = "#5b8a3c", "#417690", "#8a5b3c", "#ba2121", "#999999"


@dataclass
class Series:
    label: str
    values: list[float | None]
    color: str = BLUE
    bars: bool = False
    scale: str = "y"  # "y": counts; "ms": milliseconds (right axis)
    summed: bool = True  # False for a level (a backlog), whose sum over time means nothing


@dataclass
class Chart:
    id: str
    title: str
    x: list[float]
    series: list[Series]
    note: str = ""
    daily: bool = True
    totals: dict[str, float] = field(default_factory=dict)
    # The time the x axis shows, [start, end] in epoch seconds, whatever the rows cover: a chart of
    # the last 24 hours with one bucket of data still spans the 24 hours (its ticks are hours).
    span: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["totals"] = {
            s.label: round(sum(v or 0 for v in s.values), 1)
            for s in self.series
            if s.scale == "y" and s.summed
        }
        return data


def _model(label: str) -> type[Model] | None:
    try:
        return apps.get_model(label)
    except LookupError:
        return None


def _days() -> list[date]:
    start = timezone.localdate() - timedelta(days=CHART_DAYS - 1)
    return [start + timedelta(days=i) for i in range(CHART_DAYS)]


def _epoch(day: date) -> float:
    return timezone.make_aware(datetime.combine(day, datetime.min.time())).timestamp()


def _start() -> datetime:
    return timezone.make_aware(datetime.combine(_days()[0], datetime.min.time()))


def _per_day(qs: QuerySet[Any], field_name: str, days: list[date]) -> list[float | None]:
    counts = dict(
        qs.filter(**{f"{field_name}__gte": _start()})
        .annotate(day=TruncDate(field_name))
        .values("day")
        .annotate(n=Count("pk"))
        .values_list("day", "n")
    )
    return [float(counts.get(d, 0)) for d in days]


def _for_tenant(qs: QuerySet[Any], tenant_id: int | None) -> QuerySet[Any]:
    return qs.filter(tenant_id=tenant_id) if tenant_id is not None else qs


def events_chart(tenant_id: int | None) -> Chart:
    days = _days()
    arrived = {
        b.date(): a
        for b, a, _, _ in metrics.arrivals(since=_start(), bucket="1 day", tenant_id=tenant_id)
    }
    return Chart(
        "events",
        "Events per day",
        [_epoch(d) for d in days],
        [
            Series(
                "arrived (counted as appended)",
                [float(arrived.get(d, 0)) for d in days],
                GREEN,
                bars=True,
            ),
            Series(
                "dated that day (their own created_at)",
                _per_day(_for_tenant(Event.objects.all(), tenant_id), "created_at", days),
                GREY,
            ),
        ],
        note=(
            "Arrived: events counted as they were appended, i.e. by ingest time. An import "
            "of old chats arrives today but is dated in the past: the grey line shows its dates."
        ),
    )


def chunks_chart(tenant_id: int | None) -> Chart | None:
    chunk = _model("retrieval.Chunk")
    if chunk is None:
        return None
    days = _days()
    embedded = {
        b.date(): e
        for b, _, e, _ in metrics.arrivals(since=_start(), bucket="1 day", tenant_id=tenant_id)
    }
    stored = _for_tenant(chunk.objects.filter(embedding__isnull=False), tenant_id)
    return Chart(
        "chunks",
        "Chunks embedded per day",
        [_epoch(d) for d in days],
        [
            Series(
                "embedded (counted as embedded)",
                [float(embedded.get(d, 0)) for d in days],
                GREEN,
                bars=True,
            ),
            Series("still stored, by indexing time", _per_day(stored, "indexed_at", days), GREY),
        ],
        note=(
            "Embedded: chunks counted as they got their embedding (deletions do not lower it). "
            "The grey line counts the chunks that still exist by their indexed_at."
        ),
    )


def backlog_chart(tenant_id: int | None) -> Chart:
    now = timezone.now()
    since = now - timedelta(hours=BACKLOG_HOURS)
    rows = metrics.arrivals(since=since, bucket=BACKLOG_BUCKET, tenant_id=tenant_id)
    return Chart(
        "backlog",
        f"Embedding backlog, last {BACKLOG_HOURS} hours",
        [r[0].timestamp() for r in rows],
        [
            Series(
                "chunks waiting for an embedding",
                [None if r[3] is None else float(r[3]) for r in rows],
                RED,
                summed=False,
            ),
            Series("events arrived", [float(r[1]) for r in rows], GREEN, bars=True),
            Series("chunks embedded", [float(r[2]) for r in rows], BLUE, bars=True),
        ],
        daily=False,
        span=[since.timestamp(), now.timestamp()],
        note=(
            f"{BACKLOG_BUCKET} buckets. Arrivals and embeddings are counted as they happen; the"
            f" backlog is sampled (every {metrics.sample_every():g} s while the dashboard is open):"
            " a gap in its line means no sample was taken then."
        ),
    )


def usage_chart(name: str, title: str, tenant_id: int | None) -> Chart:
    days = _days()
    qs = _for_tenant(ApiUsage.objects.filter(name=name, day__gte=days[0]), tenant_id)
    rows = {
        d: (n, e, ms)
        for d, n, e, ms in (
            qs.values("day")
            .annotate(n=Sum("requests"), e=Sum("errors"), ms=Sum("total_ms"))
            .values_list("day", "n", "e", "ms")
        )
    }
    return Chart(
        name,
        title,
        [_epoch(d) for d in days],
        [
            Series(
                "requests",
                [float(rows[d][0]) if d in rows else 0.0 for d in days],
                BROWN,
                bars=True,
            ),
            Series("errors", [float(rows[d][1]) if d in rows else 0.0 for d in days], RED),
            Series(
                "mean ms",
                [
                    round(rows[d][2] / rows[d][0], 1) if d in rows and rows[d][0] else None
                    for d in days
                ],
                BLUE,
                scale="ms",
            ),
        ],
        note="Counted by the API for each request (mean latency on the right axis, in ms).",
    )


def runs_chart(tenant_id: int | None) -> Chart | None:
    run = _model("scheduling.Run")
    if run is None:
        return None
    days = _days()
    qs = _for_tenant(run.objects.filter(started_at__gte=_start()), tenant_id)
    counts: dict[tuple[date, str], int] = {}
    for day, status, n in (
        qs.annotate(day=TruncDate("started_at"))
        .values("day", "status")
        .annotate(n=Count("pk"))
        .values_list("day", "status", "n")
    ):
        key = (day, status if status in ("succeeded", "failed") else "queued or running")
        counts[key] = counts.get(key, 0) + n
    return Chart(
        "runs",
        "Schedule runs per day, by outcome",
        [_epoch(d) for d in days],
        [
            Series(
                "succeeded",
                [float(counts.get((d, "succeeded"), 0)) for d in days],
                GREEN,
                bars=True,
            ),
            Series("failed", [float(counts.get((d, "failed"), 0)) for d in days], RED, bars=True),
            Series(
                "queued or running",
                [float(counts.get((d, "queued or running"), 0)) for d in days],
                GREY,
            ),
        ],
    )


def tasks_chart() -> Chart:
    days = _days()
    return Chart(
        "tasks",
        "Background tasks per day (all tenants)",
        [_epoch(d) for d in days],
        [
            Series(
                "succeeded",
                _per_day(finished_tasks(success=True), "stopped", days),
                GREEN,
                bars=True,
            ),
            Series(
                "failed", _per_day(finished_tasks(success=False), "stopped", days), RED, bars=True
            ),
        ],
        note="django-q2 keeps every failure and only the latest successes.",
    )


def all_charts(tenant_id: int | None) -> list[dict[str, Any]]:
    charts = [
        backlog_chart(tenant_id),
        events_chart(tenant_id),
        chunks_chart(tenant_id),
        usage_chart("search", "Searches per day and their latency", tenant_id),
        usage_chart("context", "Context requests per day and their latency", tenant_id),
        runs_chart(tenant_id),
        tasks_chart(),
    ]
    return [c.as_dict() for c in charts if c is not None]


def embedding_figures(tenant_id: int | None) -> dict[str, Any]:
    progress = metrics.embedding_progress(tenant_id=tenant_id)
    chunk = _model("retrieval.Chunk")
    if chunk is not None:  # the backlog now, whether or not a sample was just taken
        # The embed lane's own definition of its work (retrieval's ChunkQuerySet.embedding_waiting).
        progress["pending"] = _for_tenant(chunk.objects.embedding_waiting(), tenant_id).count()
        if progress["pending"] == 0:
            progress["eta_seconds"] = 0.0
        elif progress["rate"]:  # at the last ten minutes' rate
            progress["eta_seconds"] = progress["pending"] / progress["rate"]
    errors = (
        _for_tenant(
            chunk.objects.filter(embedding__isnull=True).exclude(embedding_error=""), tenant_id
        ).count()
        if chunk is not None
        else 0
    )
    return {**progress, "embedding_errors": errors}
