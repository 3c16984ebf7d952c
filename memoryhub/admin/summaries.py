"""Rolling summaries and the summary tree in the admin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from memoryhub.admin.base import SearchableAdmin
from memoryhub.models import (
    RollingSummary,
    SummaryNode,
)


@admin.register(RollingSummary)
class RollingSummaryAdmin(admin.ModelAdmin):
    list_display = ["session", "tenant", "epoch", "upper_sequence", "updated_at"]
    list_filter = ["tenant"]
    list_select_related = ["session", "tenant"]
    search_fields = ["=session__external_id", "text"]
    autocomplete_fields = ["session"]


class SummaryChildInline(admin.TabularInline):
    model = SummaryNode
    fk_name = "parent"
    fields = ["level", "sequence_start", "sequence_end", "text"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    verbose_name = "child node"
    verbose_name_plural = "child nodes"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(SummaryNode)
class SummaryNodeAdmin(SearchableAdmin):
    kind = "summary"
    list_display = [
        "id",
        "level",
        "session",
        "sequence_start",
        "sequence_end",
        "earliest_at",
        "latest_at",
        "source_count",
        "summariser",
        "model",
        "tenant",
        "created_at",
    ]
    list_filter = [
        "level",
        "summariser",
        "model",
        "tenant",
        ("created_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["session", "tenant"]
    search_fields = ["text", "=session__external_id"]
    autocomplete_fields = ["workspace", "channel", "session", "parent"]
    readonly_fields = ["source_events", "created_at"]
    inlines = [SummaryChildInline]
    actions = ["reindex"]

    @admin.display(description="Source events")
    def source_events(self, obj: SummaryNode) -> str:
        if obj.pk is None:
            return "-"
        events = list(
            obj.session.events.filter(
                sequence__gte=obj.sequence_start, sequence__lte=obj.sequence_end
            ).order_by("sequence")[:50]
        )
        url = reverse("admin:memoryhub_event_changelist") + f"?session__id__exact={obj.session_id}"
        rows = format_html_join(
            "", "<li>#{} <b>{}</b>: {}</li>", ((e.sequence, e.role, e.text[:160]) for e in events)
        )
        return format_html(
            '<ul style="margin:0">{}</ul><a href="{}">all events of the session</a>', rows, url
        )
