"""Per-tenant request counters in the admin."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from memoryhub.models import (
    ApiUsage,
    Arrivals,
    MetricSample,
)


@admin.register(ApiUsage)
class ApiUsageAdmin(admin.ModelAdmin):
    """Read-only: the request middleware writes these counters."""

    list_display = ["day", "tenant", "name", "requests", "errors", "mean_ms"]
    list_filter = ["name", "tenant", "day"]
    search_fields = ["tenant__name", "=name"]
    list_select_related = ["tenant"]
    date_hierarchy = "day"
    ordering = ["-day", "tenant", "name"]

    @admin.display(description="mean ms")
    def mean_ms(self, obj: ApiUsage) -> float:
        return round(obj.total_ms / obj.requests, 1) if obj.requests else 0.0

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ApiUsage | None = None) -> bool:
        return False


@admin.register(MetricSample)
class MetricSampleAdmin(admin.ModelAdmin):
    """Read-only: the dashboard records these samples (its backlog chart)."""

    list_display = ["at", "tenant", "events", "chunks", "pending_embedding"]
    search_fields = ["tenant__name"]
    list_filter = ["tenant"]
    list_select_related = ["tenant"]
    date_hierarchy = "at"
    ordering = ["-at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: MetricSample | None = None) -> bool:
        return False


@admin.register(Arrivals)
class ArrivalsAdmin(admin.ModelAdmin):
    """Read-only: the append and the embed lane count these (the dashboard's arrivals and rates)."""

    list_display = ["minute", "tenant", "events", "embedded"]
    search_fields = ["tenant__name"]
    list_filter = ["tenant"]
    list_select_related = ["tenant"]
    date_hierarchy = "minute"
    ordering = ["-minute"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Arrivals | None = None) -> bool:
        return False
