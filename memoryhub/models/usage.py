"""Per-tenant daily request counters (the dashboard's charts)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from django.db import models

from accounts.models import Tenant


class ApiUsage(models.Model):
    """Requests a tenant made per day to the read paths operators watch (searches, context),
    counted by the request middleware: the dashboard's charts."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    name = models.CharField(max_length=20)
    requests = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0, help_text="Answers with a 4xx or 5xx status.")
    total_ms = models.FloatField(default=0.0, help_text="Time spent answering, summed.")

    exportable = False  # operations data, not memory: left out of tenant exports

    class Meta:
        verbose_name = "API usage (per day)"
        verbose_name_plural = "API usage (per day)"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "day", "name"], name="api_usage_unique_day")
        ]
        indexes = [models.Index(fields=["day", "name"], name="api_usage_day_name")]

    def __str__(self) -> str:
        return f"{self.name} {self.day}: {self.requests}"

    @classmethod
    def add(cls, counts: dict[tuple[int, date, str], list[float]]) -> None:
        """Add counts {(tenant_id, day, name): [requests, errors, total_ms]}: one upsert
        statement."""
        from django.db import connection

        if not counts:
            return
        table = cls._meta.db_table
        rows = [(t, d, n, int(c[0]), int(c[1]), float(c[2])) for (t, d, n), c in counts.items()]
        values = ", ".join(
            ["(%s::bigint, %s::date, %s::text, %s::int, %s::int, %s::float8)"] * len(rows)
        )
        with connection.cursor() as cursor:
            # Joined with the tenants, so that counts of a tenant deleted meanwhile are dropped.
            cursor.execute(
                f"""
                INSERT INTO {table} (tenant_id, day, name, requests, errors, total_ms)
                SELECT v.tenant_id, v.day, v.name, v.requests, v.errors, v.total_ms
                FROM (VALUES {values}) AS v(tenant_id, day, name, requests, errors, total_ms)
                JOIN {Tenant._meta.db_table} tenant ON tenant.id = v.tenant_id
                ON CONFLICT (tenant_id, day, name) DO UPDATE SET
                    requests = {table}.requests + EXCLUDED.requests,
                    errors = {table}.errors + EXCLUDED.errors,
                    total_ms = {table}.total_ms + EXCLUDED.total_ms
                """,
                [v for row in rows for v in row],
            )


class MetricSample(models.Model):
    """A tenant's running totals at one moment (the dashboard's time series).

    Stored events and chunks carry the time they were written, not the time they arrived (an
    import of last year's chats arrives today); differences between samples say what arrived
    and what was embedded when, and the pending count over time is the embedding backlog.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()
    events = models.BigIntegerField(default=0, help_text="Events stored (all sessions).")
    chunks = models.BigIntegerField(default=0, help_text="Chunks stored.")
    pending_embedding = models.BigIntegerField(default=0, help_text="Chunks without an embedding.")

    exportable = False  # operations data, not memory: left out of tenant exports

    class Meta:
        indexes = [models.Index(fields=["at", "tenant"], name="metric_sample_at")]

    def __str__(self) -> str:
        return f"{self.tenant_id} at {self.at:%Y-%m-%d %H:%M}: {self.events} events"


class Arrivals(models.Model):
    """What arrived per tenant and minute, counted as it happens: events appended and chunks
    embedded (the dashboard's arrivals, rates and charts). Written in batches by the processes
    that append and embed (memoryhub.metrics.arrived), so that the figures say what happened
    whether or not anyone had the dashboard open; samples (MetricSample) only ever saw what
    changed between two loads of the page."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    minute = models.DateTimeField(help_text="The minute's start (UTC).")
    events = models.PositiveIntegerField(default=0, help_text="Events appended.")
    embedded = models.PositiveIntegerField(default=0, help_text="Chunks that got their embedding.")

    exportable = False  # operations data, not memory: left out of tenant exports

    class Meta:
        verbose_name_plural = "arrivals"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "minute"], name="arrivals_unique_minute")
        ]
        indexes = [models.Index(fields=["minute"], name="arrivals_minute")]

    def __str__(self) -> str:
        return (
            f"{self.tenant_id} {self.minute:%Y-%m-%d %H:%M}: {self.events} events, {self.embedded}"
            " embedded"
        )

    @classmethod
    def add(cls, counts: dict[tuple[int, float], list[float]]) -> None:
        """Add counts {(tenant_id, minute as epoch seconds): [events, embedded]}: one upsert."""
        from django.db import connection

        if not counts:
            return
        table = cls._meta.db_table
        rows = [
            (t, datetime.fromtimestamp(m, UTC), int(c[0]), int(c[1]))
            for (t, m), c in counts.items()
        ]
        values = ", ".join(["(%s::bigint, %s::timestamptz, %s::int, %s::int)"] * len(rows))
        with connection.cursor() as cursor:
            # Joined with the tenants: counts of a tenant deleted meanwhile are dropped.
            cursor.execute(
                f"""
                INSERT INTO {table} (tenant_id, minute, events, embedded)
                SELECT v.tenant_id, v.minute, v.events, v.embedded
                FROM (VALUES {values}) AS v(tenant_id, minute, events, embedded)
                JOIN {Tenant._meta.db_table} tenant ON tenant.id = v.tenant_id
                ORDER BY v.tenant_id, v.minute
                ON CONFLICT (tenant_id, minute) DO UPDATE SET
                    events = {table}.events + EXCLUDED.events,
                    embedded = {table}.embedded + EXCLUDED.embedded
                """,
                [v for row in rows for v in row],
            )
