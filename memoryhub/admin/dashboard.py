"""The operator dashboard (S9): memory figures per tenant, the background lanes and their backlog,
activity charts, the task queue.

One page in the admin. Every figure is one aggregate query; areas whose models are not
installed are left out rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.db.models import Count, Model, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.background import lane_rate, live_workers, round_robin_etas
from memoryhub.models import ApiUsage, Event, Session, StepFailure
from memoryhub.tasks import finished_tasks, queue_counts

CHART_DAYS = 30


def _model(label: str) -> type[Model] | None:
    try:
        return apps.get_model(label)
    except LookupError:
        return None


@dataclass
class Bar:
    day: date
    value: int
    height: float  # percent of the tallest bar


@dataclass
class Chart:
    title: str
    bars: list[Bar]
    total: int
    colour: str = "#417690"


def daily(qs: QuerySet[Any], field: str, title: str, *, days: int = CHART_DAYS, colour: str = "#417690") -> Chart:
    """Rows per day over the last `days` days (empty days included), in the server's time zone."""
    start = timezone.localdate() - timedelta(days=days - 1)
    since = timezone.make_aware(timezone.datetime.combine(start, timezone.datetime.min.time()))
    counts = dict(
        qs.filter(**{f"{field}__gte": since})
        .annotate(day=TruncDate(field))
        .values("day")
        .annotate(n=Count("pk"))
        .values_list("day", "n")
    )
    return _chart(title, start, days, counts, colour)


def usage_daily(name: str, title: str, *, days: int = CHART_DAYS, colour: str = "#417690") -> Chart:
    """Requests per day to one counted endpoint (ApiUsage), all tenants together."""
    start = timezone.localdate() - timedelta(days=days - 1)
    counts = dict(ApiUsage.objects.filter(name=name, day__gte=start).values("day")
                  .annotate(n=Sum("requests")).values_list("day", "n"))
    return _chart(title, start, days, counts, colour)


def _chart(title: str, start: date, days: int, counts: dict[date, int], colour: str) -> Chart:
    values = [(start + timedelta(days=i), int(counts.get(start + timedelta(days=i), 0))) for i in range(days)]
    top = max((v for _, v in values), default=0) or 1
    return Chart(title, [Bar(d, v, round(100 * v / top, 1)) for d, v in values], sum(v for _, v in values), colour)


def tenant_rows() -> list[dict[str, Any]]:
    """Per tenant: sessions, events, chunks with embedding coverage, notes, facts, schedules."""
    rows = {t.pk: {"tenant": t, "sessions": 0, "events": 0} for t in Tenant.objects.order_by("name")}
    for tenant_id, sessions, events in (Session.objects.values("tenant_id")
                                        .annotate(n=Count("id"), e=Coalesce(Sum("event_count"), 0))
                                        .values_list("tenant_id", "n", "e")):
        rows[tenant_id].update(sessions=sessions, events=events)
    chunk = _model("retrieval.Chunk")
    if chunk is not None:
        for tenant_id, total, embedded, errors in (
            chunk.objects.values("tenant_id")
            .annotate(n=Count("id"), e=Count("id", filter=Q(embedding__isnull=False)),
                      f=Count("id", filter=Q(embedding__isnull=True) & ~Q(embedding_error="")))
            .values_list("tenant_id", "n", "e", "f")
        ):
            rows[tenant_id].update(chunks=total, embedded=embedded, embedding_errors=errors,
                                   coverage=round(100 * embedded / total, 1) if total else 100.0)
        _backlog(chunk, rows)
    for name, label in (("notes", "memoryhub.Note"), ("facts", "memoryhub.Fact"),
                        ("schedules", "scheduling.Schedule")):
        model = _model(label)
        if model is None:
            continue
        for tenant_id, n in model.objects.values("tenant_id").annotate(n=Count("pk")).values_list("tenant_id", "n"):
            rows[tenant_id][name] = n
    start = timezone.localdate() - timedelta(days=CHART_DAYS - 1)
    for tenant_id, n, total_ms in (ApiUsage.objects.filter(name="search", day__gte=start).values("tenant_id")
                                   .annotate(n=Sum("requests"), ms=Sum("total_ms"))
                                   .values_list("tenant_id", "n", "ms")):
        rows[tenant_id].update(searches=n, search_ms=round(total_ms / n, 1) if n else None)
    return list(rows.values())


def _backlog(chunk: type[Model], rows: dict[int, dict[str, Any]]) -> None:
    """The embed lane's queue per tenant: chunks waiting, set aside, and when the last one will have
    its vector at the lanes' measured rate (tenants take turns)."""
    limit = settings.MEMORYHUB_EMBED_MAX_ATTEMPTS
    waiting: dict[int, int] = {}
    for tenant_id, n, aside in (chunk.objects.filter(embedding__isnull=True).order_by().values("tenant_id")
                                .annotate(n=Count("id", filter=Q(embedding_attempts__lt=limit)),
                                          aside=Count("id", filter=Q(embedding_attempts__gte=limit)))
                                .values_list("tenant_id", "n", "aside")):
        rows[tenant_id].update(waiting=n, set_aside=aside)
        waiting[tenant_id] = n
    for tenant_id, eta in round_robin_etas({t: n for t, n in waiting.items() if n}, lane_rate("embed")).items():
        rows[tenant_id]["eta"] = None if eta is None else timedelta(seconds=round(eta))


def charts() -> list[Chart]:
    found = [daily(Event.objects.all(), "created_at", "Events stored per day"),
             usage_daily("search", "Searches per day", colour="#8a5b3c"),
             usage_daily("context", "Context requests per day", colour="#8a5b3c")]
    chunk = _model("retrieval.Chunk")
    if chunk is not None:
        found.append(daily(chunk.objects.all(), "indexed_at", "Chunks indexed per day", colour="#5b8a3c"))
    run = _model("scheduling.Run")
    if run is not None and _has_field(run, "started_at"):
        found.append(daily(run.objects.all(), "started_at", "Scheduled runs started per day"))
    found.append(daily(finished_tasks(success=True), "stopped", "Background tasks succeeded per day",
                       colour="#5b8a3c"))
    found.append(daily(finished_tasks(success=False), "stopped", "Background tasks failed per day",
                       colour="#ba2121"))
    return [c for c in found if c is not None]


def _has_field(model: type[Model], name: str) -> bool:
    return any(f.name == name for f in model._meta.get_fields())


def dashboard_view(request: HttpRequest) -> HttpResponse:
    context = {
        **admin.site.each_context(request),
        "title": "MemoryHub dashboard",
        "tenants": tenant_rows(),
        "queue": queue_counts(recent_failures=10),
        "workers": live_workers(),
        "set_aside_sessions": StepFailure.objects.filter(set_aside=True).count(),
        "charts": charts(),
        "chart_days": CHART_DAYS,
    }
    return TemplateResponse(request, "admin/memoryhub/dashboard.html", context)
