"""Samples of each tenant's running totals: the dashboard's time series (arrivals, embedding
backlog, embedding rate, ETA).

A stored event or chunk carries the time it was written, not the time it arrived: an import of
last year's chats arrives today but is dated last year. The totals sampled over time say what
arrived when, and the number of chunks still without an embedding, sampled, is the backlog.
`record_samples` is cheap (one aggregate per table) and throttled: the dashboard calls it on
every load and auto-refresh, and a cadence may call it too.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection
from django.db.models import Count, Max, Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.models import MetricSample, Session

SAMPLE_EVERY_SECONDS = 30
KEEP_DAYS = 35
RATE_WINDOW = timedelta(minutes=10)


def _chunk_totals() -> dict[int, tuple[int, int]]:
    """Per tenant: (chunks, chunks without an embedding). Empty while retrieval is not installed."""
    try:
        chunk = apps.get_model("retrieval", "Chunk")
    except LookupError:
        return {}
    rows = (chunk.objects.order_by().values("tenant_id")
            .annotate(n=Count("id"), pending=Count("id", filter=Q(embedding__isnull=True)))
            .values_list("tenant_id", "n", "pending"))
    return {tenant_id: (n, pending) for tenant_id, n, pending in rows}


def sample_every() -> float:
    """Seconds between samples (MEMORYHUB_METRICS_SAMPLE_SECONDS, default 30)."""
    return float(getattr(settings, "MEMORYHUB_METRICS_SAMPLE_SECONDS", SAMPLE_EVERY_SECONDS))


def record_samples(*, now: datetime | None = None, min_interval: float | None = None) -> int:
    """Store one sample per tenant unless the newest is younger than `min_interval` seconds
    (default: sample_every()). Returns how many were stored. Two callers racing may both store
    one: harmless."""
    now = now or timezone.now()
    min_interval = sample_every() if min_interval is None else min_interval
    newest = MetricSample.objects.aggregate(at=Max("at"))["at"]
    if newest is not None and (now - newest).total_seconds() < min_interval:
        return 0
    events = dict(Session.objects.order_by().values("tenant_id")
                  .annotate(n=Coalesce(Sum("event_count"), 0)).values_list("tenant_id", "n"))
    chunks = _chunk_totals()
    rows = [MetricSample(tenant_id=tenant_id, at=now, events=events.get(tenant_id, 0),
                         chunks=chunks.get(tenant_id, (0, 0))[0], pending_embedding=chunks.get(tenant_id, (0, 0))[1])
            for tenant_id in Tenant.objects.values_list("pk", flat=True)]
    MetricSample.objects.bulk_create(rows)
    MetricSample.objects.filter(at__lt=now - timedelta(days=KEEP_DAYS)).delete()
    return len(rows)


def _tenant_sql(tenant_id: int | None) -> tuple[str, list[Any]]:
    return ("AND tenant_id = %s", [tenant_id]) if tenant_id is not None else ("", [])


def arrivals(*, since: datetime, bucket: str, tenant_id: int | None = None) -> list[tuple[datetime, int, int, int]]:
    """Per time bucket (a PostgreSQL interval such as '1 day' or '15 minutes'): events that
    arrived, chunks embedded, and the backlog (chunks without an embedding) at the bucket's end.

    Arrivals are the growth of a tenant's totals between consecutive samples (shrinking, as when
    a session is forgotten, counts as none); buckets are aligned to the server's local midnight.
    """
    where, params = _tenant_sql(tenant_id)
    table = MetricSample._meta.db_table
    origin = timezone.localtime(since).replace(hour=0, minute=0, second=0, microsecond=0)
    sql = f"""
        WITH steps AS (
            SELECT tenant_id, at, pending_embedding,
                   greatest(events - lag(events) OVER w, 0) AS arrived,
                   greatest((chunks - pending_embedding) - lag(chunks - pending_embedding) OVER w, 0) AS embedded
            FROM {table} WHERE at >= %s - interval '1 hour' {where}
            WINDOW w AS (PARTITION BY tenant_id ORDER BY at)
        ), binned AS (
            SELECT date_bin(%s::interval, at, %s) AS bucket, tenant_id, arrived, embedded,
                   last_value(pending_embedding) OVER (PARTITION BY date_bin(%s::interval, at, %s), tenant_id
                       ORDER BY at ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS pending
            FROM steps WHERE at >= %s
        ), per_tenant AS (
            SELECT bucket, tenant_id, sum(arrived) AS arrived, sum(embedded) AS embedded, max(pending) AS pending
            FROM binned GROUP BY bucket, tenant_id
        )
        SELECT bucket, sum(arrived)::bigint, sum(embedded)::bigint, sum(pending)::bigint
        FROM per_tenant GROUP BY bucket ORDER BY bucket
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [since, *params, bucket, origin, bucket, origin, since])
        return [(row[0], int(row[1]), int(row[2]), int(row[3])) for row in cursor.fetchall()]


def embedding_progress(*, tenant_id: int | None = None, now: datetime | None = None) -> dict[str, Any]:
    """The backlog now, the rate it has been embedded at over the last ten minutes of samples
    (chunks a second) and the ETA at that rate (None when nothing was embedded meanwhile)."""
    now = now or timezone.now()
    qs = MetricSample.objects.filter(at__gte=now - RATE_WINDOW)
    if tenant_id is not None:
        qs = qs.filter(tenant_id=tenant_id)
    moments = list(qs.values("at").annotate(embedded=Sum("chunks") - Sum("pending_embedding"),
                                            pending=Sum("pending_embedding"), events=Sum("events"))
                   .order_by("at"))
    if not moments:
        return {"pending": None, "rate": None, "eta_seconds": None, "arrival_rate": None, "window_seconds": 0}
    first, last = moments[0], moments[-1]
    seconds = (last["at"] - first["at"]).total_seconds()
    rate = max(last["embedded"] - first["embedded"], 0) / seconds if seconds > 0 else None
    arrival = max(last["events"] - first["events"], 0) / seconds if seconds > 0 else None
    pending = int(last["pending"])
    eta = 0.0 if pending == 0 else (pending / rate if rate else None)
    return {"pending": pending, "rate": rate, "eta_seconds": eta, "arrival_rate": arrival,
            "window_seconds": seconds, "sampled_at": last["at"]}
