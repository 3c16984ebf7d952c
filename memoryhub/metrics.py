"""The dashboard's time series: what arrived when (events appended, chunks embedded), counted as
it happens, and samples of each tenant's embedding backlog.

Arrivals are counted by the processes that append and embed (`arrived`, batched into the
Arrivals table, one row per tenant and minute): the dashboard reads what happened in the last
minutes or days whether or not it was open then. A stored event or chunk carries the time it was
written, not the time it arrived (an import of last year's chats arrives today but is dated last
year), so the tables alone cannot say it.

The backlog (chunks still without an embedding) is a level, sampled: `record_samples` is cheap
(one aggregate per table) and throttled; the dashboard calls it on every load and auto-refresh.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.db import connection, transaction
from django.db.models import Count, Max, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.models import Arrivals, MetricSample, Session
from memoryhub.plumbing.counters import BatchedCounter, Counts

SAMPLE_EVERY_SECONDS = 30
KEEP_DAYS = 35
RATE_WINDOW = timedelta(minutes=10)


def _write_arrivals(counts: Counts) -> None:
    Arrivals.add(counts)  # type: ignore[arg-type]


# Per (tenant, minute): [events appended, chunks embedded], written every few seconds.
arrived = BatchedCounter("arrivals", _write_arrivals)


def count_arrivals(tenant_counts: dict[int, int], *, kind: str, at: datetime | None = None) -> None:
    """Count `kind` ("events" or "embedded") per tenant once the current transaction commits (a
    rolled-back append arrived nowhere)."""
    if not tenant_counts:
        return
    minute = float(int((at or timezone.now()).timestamp()) // 60 * 60)
    values = (1.0, 0.0) if kind == "events" else (0.0, 1.0)

    def add() -> None:
        for tenant_id, n in tenant_counts.items():
            arrived.add((tenant_id, minute), values[0] * n, values[1] * n)

    transaction.on_commit(add)


def recent_arrivals(
    *, tenant_id: int | None = None, now: datetime | None = None, window: timedelta = RATE_WINDOW
) -> dict[str, int]:
    """Events appended and chunks embedded in the last `window` (whole minutes, the current one
    included)."""
    now = now or timezone.now()
    start = now.replace(second=0, microsecond=0) - window + timedelta(minutes=1)
    qs = Arrivals.objects.filter(minute__gte=start)
    if tenant_id is not None:
        qs = qs.filter(tenant_id=tenant_id)
    row = qs.aggregate(events=Coalesce(Sum("events"), 0), embedded=Coalesce(Sum("embedded"), 0))
    return {"events": int(row["events"]), "embedded": int(row["embedded"])}


def _chunk_totals() -> dict[int, tuple[int, int]]:
    """Per tenant: (chunks, chunks waiting for the embed lane). Empty while retrieval is not
    installed."""
    try:
        chunk = apps.get_model("retrieval", "Chunk")
    except LookupError:
        return {}
    totals = dict(
        chunk.objects.order_by()
        .values("tenant_id")
        .annotate(n=Count("id"))
        .values_list("tenant_id", "n")
    )
    # Waiting: the embed lane's own definition (retrieval's ChunkQuerySet.embedding_waiting).
    waiting = dict(
        chunk.objects.embedding_waiting()
        .order_by()
        .values("tenant_id")
        .annotate(n=Count("id"))
        .values_list("tenant_id", "n")
    )
    return {tenant_id: (n, waiting.get(tenant_id, 0)) for tenant_id, n in totals.items()}


def sample_every() -> float:
    """Seconds between samples (SAMPLE_EVERY_SECONDS, read at each call)."""
    return float(SAMPLE_EVERY_SECONDS)


def record_samples(*, now: datetime | None = None, min_interval: float | None = None) -> int:
    """Store one sample per tenant unless the newest is younger than `min_interval` seconds
    (default: sample_every()). Returns how many were stored. Two callers racing may both store
    one: harmless."""
    now = now or timezone.now()
    min_interval = sample_every() if min_interval is None else min_interval
    newest = MetricSample.objects.aggregate(at=Max("at"))["at"]
    if newest is not None and (now - newest).total_seconds() < min_interval:
        return 0
    events = dict(
        Session.objects.order_by()
        .values("tenant_id")
        .annotate(n=Coalesce(Sum("event_count"), 0))
        .values_list("tenant_id", "n")
    )
    chunks = _chunk_totals()
    rows = [
        MetricSample(
            tenant_id=tenant_id,
            at=now,
            events=events.get(tenant_id, 0),
            chunks=chunks.get(tenant_id, (0, 0))[0],
            pending_embedding=chunks.get(tenant_id, (0, 0))[1],
        )
        for tenant_id in Tenant.objects.values_list("pk", flat=True)
    ]
    MetricSample.objects.bulk_create(rows)
    MetricSample.objects.filter(at__lt=now - timedelta(days=KEEP_DAYS)).delete()
    Arrivals.objects.filter(minute__lt=now - timedelta(days=KEEP_DAYS)).delete()
    return len(rows)


def _tenant_sql(tenant_id: int | None) -> tuple[str, list[Any]]:
    return ("AND tenant_id = %s", [tenant_id]) if tenant_id is not None else ("", [])


def arrivals(
    *, since: datetime, bucket: str, tenant_id: int | None = None
) -> list[tuple[datetime, int, int, int | None]]:
    """Per time bucket (a PostgreSQL interval such as '1 day' or '15 minutes') with anything to
    say: events that arrived and chunks embedded (the Arrivals counters), and the backlog (chunks
    without an embedding) at the bucket's last sample (None: no sample in it). Buckets are
    aligned to the server's local midnight."""
    where, params = _tenant_sql(tenant_id)
    origin = timezone.localtime(since).replace(hour=0, minute=0, second=0, microsecond=0)
    counted_sql = f"""
        SELECT date_bin(%s::interval, minute, %s) AS bucket, sum(events)::bigint, sum(embedded)::bigint
        FROM {Arrivals._meta.db_table} WHERE minute >= %s {where} GROUP BY 1
    """  # noqa: E501
    sampled_sql = f"""
        SELECT bucket, sum(pending)::bigint FROM (
            SELECT DISTINCT ON (bucket, tenant_id) bucket, pending FROM (
                SELECT date_bin(%s::interval, at, %s) AS bucket, tenant_id, at, pending_embedding AS pending
                FROM {MetricSample._meta.db_table} WHERE at >= %s {where}
            ) samples ORDER BY bucket, tenant_id, at DESC
        ) last_samples GROUP BY bucket
    """  # noqa: E501
    with connection.cursor() as cursor:
        cursor.execute(counted_sql, [bucket, origin, since, *params])
        counted = {row[0]: (int(row[1]), int(row[2])) for row in cursor.fetchall()}
        cursor.execute(sampled_sql, [bucket, origin, since, *params])
        pending = {row[0]: int(row[1]) for row in cursor.fetchall()}
    return [
        (b, *counted.get(b, (0, 0)), pending.get(b)) for b in sorted(set(counted) | set(pending))
    ]


def embedding_progress(
    *, tenant_id: int | None = None, now: datetime | None = None
) -> dict[str, Any]:
    """The last ten minutes: events arrived and chunks embedded (counted as they happened), their
    rates (a second, over the window) and the backlog's ETA at the embedding rate (None when
    nothing was embedded meanwhile). The backlog itself is the caller's (counted now)."""
    now = now or timezone.now()
    recent = recent_arrivals(tenant_id=tenant_id, now=now)
    seconds = RATE_WINDOW.total_seconds()
    return {
        "pending": None,
        "rate": recent["embedded"] / seconds,
        "eta_seconds": None,
        "arrival_rate": recent["events"] / seconds,
        "window_seconds": seconds,
        "arrived_recent": recent["events"],
        "embedded_recent": recent["embedded"],
    }
