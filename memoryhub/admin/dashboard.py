"""The operator dashboard: memory per tenant, the embedding backlog with its rate and ETA,
activity charts by ingest time, searches and their latency, schedule runs by outcome, the task
queue. One page in the admin, narrowed to a tenant with ?tenant=, refreshing itself from
dashboard/data/ (JSON). Every load records a metrics sample (throttled): see memoryhub.metrics.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.apps import apps
from django.contrib import admin
from django.db.models import Count, Model, Q, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from accounts.models import Tenant
from memoryhub import metrics
from memoryhub.admin import dashboard_series
from memoryhub.models import ApiUsage, Session, StepFailure
from memoryhub.plumbing.background import lane_rate, live_workers, round_robin_etas
from memoryhub.plumbing.supervision import read_restarts
from memoryhub.session_work import due_sessions
from memoryhub.tasks import queue_counts

CHART_DAYS = dashboard_series.CHART_DAYS
REFRESH_CHOICES = (0, 5, 15, 60)  # seconds; 0: off
# What higher layers add to each tenant's row, by name: a count per tenant among the ids given,
# by their own definition (retrieval adds "sentences_waiting", the chunks searchable by their own
# vector whose sentence vectors the embed lane has still to write; the core never imports it).
TENANT_COUNTS: dict[str, Callable[[list[int]], dict[int, int]]] = {}


def _model(label: str) -> type[Model] | None:
    try:
        return apps.get_model(label)
    except LookupError:
        return None


def _add_counts(rows: dict[int, dict[str, Any]], label: str, name: str) -> None:
    model = _model(label)
    if model is None:
        return
    for tenant_id, n in (
        model.objects.filter(tenant_id__in=rows)
        .values("tenant_id")
        .annotate(n=Count("pk"))
        .values_list("tenant_id", "n")
    ):
        rows[tenant_id][name] = n


def tenant_rows(tenant_id: int | None = None) -> list[dict[str, Any]]:
    """Per tenant: sessions, events, chunks with embedding coverage, notes, facts, schedules,
    searches over the chart's days with their mean latency, and what TENANT_COUNTS adds."""
    tenants = Tenant.objects.order_by("name")
    if tenant_id is not None:
        tenants = tenants.filter(pk=tenant_id)
    rows = {t.pk: {"tenant": t, "sessions": 0, "events": 0} for t in tenants}
    for tid, sessions, events in (
        Session.objects.filter(tenant_id__in=rows)
        .values("tenant_id")
        .annotate(n=Count("id"), e=Coalesce(Sum("event_count"), 0))
        .values_list("tenant_id", "n", "e")
    ):
        rows[tid].update(sessions=sessions, events=events)
    chunk = _model("retrieval.Chunk")
    if chunk is not None:
        for tid, total, embedded, errors in (
            chunk.objects.filter(tenant_id__in=rows)
            .values("tenant_id")
            .annotate(
                n=Count("id"),
                e=Count("id", filter=Q(embedding__isnull=False)),
                f=Count("id", filter=Q(embedding__isnull=True) & ~Q(embedding_error="")),
            )
            .values_list("tenant_id", "n", "e", "f")
        ):
            rows[tid].update(
                chunks=total,
                embedded=embedded,
                embedding_errors=errors,
                coverage=round(100 * embedded / total, 1) if total else 100.0,
            )
        _backlog(chunk, rows)
    for name, count in TENANT_COUNTS.items():
        for tid, n in count(list(rows)).items():
            rows[tid][name] = n
    for label, name in (
        ("memoryhub.Note", "notes"),
        ("memoryhub.Fact", "facts"),
        ("scheduling.Schedule", "schedules"),
    ):
        _add_counts(rows, label, name)
    start = timezone.localdate() - timedelta(days=CHART_DAYS - 1)
    for tid, n, total_ms in (
        ApiUsage.objects.filter(name="search", day__gte=start, tenant_id__in=rows)
        .values("tenant_id")
        .annotate(n=Sum("requests"), ms=Sum("total_ms"))
        .values_list("tenant_id", "n", "ms")
    ):
        rows[tid].update(searches=n, search_ms=round(total_ms / n, 1) if n else None)
    return list(rows.values())


def _backlog(chunk: type[Model], rows: dict[int, dict[str, Any]]) -> None:
    """The embed lane's queue per tenant: chunks waiting, set aside, and when the last one will have
    its vector at the lanes' measured rate (tenants take turns)."""
    # retrieval's ChunkQuerySet: the lane's own definition of its work, and its one per-tenant count
    mine: Any = chunk.objects.filter(tenant_id__in=rows)
    waiting, aside = mine.embedding_waiting().per_tenant(), mine.embedding_set_aside().per_tenant()
    for tenant_id in set(waiting) | set(aside):
        rows[tenant_id].update(waiting=waiting.get(tenant_id, 0), set_aside=aside.get(tenant_id, 0))
    for tenant_id, eta in round_robin_etas(waiting, lane_rate("embed")).items():
        rows[tenant_id]["eta"] = None if eta is None else timedelta(seconds=round(eta))


def _tenant_filter(request: HttpRequest) -> Tenant | None:
    value = request.GET.get("tenant", "")
    return Tenant.objects.filter(pk=int(value)).first() if value.isdigit() else None


def dashboard_data(tenant: Tenant | None) -> dict[str, Any]:
    """Everything the page draws that changes: the charts and the backlog figures."""
    metrics.record_samples()
    tenant_id = tenant.pk if tenant else None
    return {
        # the console's time zone, as its pages show
        "generated_at": timezone.localtime().isoformat(),
        "tenant": tenant.name if tenant else None,
        "embedding": dashboard_series.embedding_figures(tenant_id),
        "charts": dashboard_series.all_charts(tenant_id),
        # the charts' times read as the console's dates
        "time_zone": timezone.get_current_timezone_name(),
    }


def dashboard_view(request: HttpRequest) -> HttpResponse:
    tenant = _tenant_filter(request)
    refresh = request.GET.get("refresh", "15")
    context = {
        **admin.site.each_context(request),
        "title": "MemoryHub dashboard" + (f": {tenant.name}" if tenant else ""),
        "tenant": tenant,
        "all_tenants": Tenant.objects.order_by("name"),
        "tenants": tenant_rows(tenant.pk if tenant else None),
        "queue": queue_counts(recent_failures=10),
        "workers": live_workers(),
        "set_aside_sessions": StepFailure.objects.filter(set_aside=True).count(),
        "sessions_due": due_sessions().count(),  # the summarise lane's own definition of its work
        # processes `manage.py run` restarted (memoryhub.plumbing.supervision)
        "restarts": read_restarts(),
        "data": dashboard_data(tenant),
        "chart_days": CHART_DAYS,
        "refresh": int(refresh) if refresh.isdigit() and int(refresh) in REFRESH_CHOICES else 15,
        "refresh_choices": REFRESH_CHOICES,
    }
    return TemplateResponse(request, "admin/memoryhub/dashboard.html", context)


def dashboard_data_view(request: HttpRequest) -> JsonResponse:
    """The page's auto-refresh: charts and figures as JSON (the same as the page was drawn with)."""
    queue = queue_counts()
    return JsonResponse(
        {
            **dashboard_data(_tenant_filter(request)),
            "queue": {k: queue[k] for k in ("queued", "succeeded_24h", "failed_24h")},
        }
    )
