"""Scratchpads in the admin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest
from django.utils.safestring import mark_safe

from memoryhub.admin.base import WORKING_NOTE_BADGE
from memoryhub.models import Scratchpad, ScratchpadItem


class ScratchpadItemInline(admin.TabularInline):
    model = ScratchpadItem
    fields = ["badge", "key", "value"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["position"]

    @admin.display(description="")
    def badge(self, obj: ScratchpadItem) -> str:
        return mark_safe(WORKING_NOTE_BADGE)  # noqa: S308 - a constant

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Scratchpad)
class ScratchpadAdmin(admin.ModelAdmin):
    """The agent manages its scratchpad: operators read it (read-only, "Working note" badge)."""

    list_display = ["session", "badge", "item_count", "version", "tenant", "updated_at"]
    list_filter = ["tenant", ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["session", "tenant"]
    search_fields = ["=session__external_id", "items__key", "items__value"]
    fields = ["badge", "tenant", "session", "version", "updated_at"]
    readonly_fields = fields
    inlines = [ScratchpadItemInline]

    @admin.display(description="Kind")
    def badge(self, obj: Scratchpad) -> str:
        return mark_safe(WORKING_NOTE_BADGE)  # noqa: S308 - a constant

    @admin.display(description="Items", ordering="n_items")
    def item_count(self, obj: Scratchpad) -> int:
        return obj.n_items  # type: ignore[attr-defined]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scratchpad]:
        return super().get_queryset(request).annotate(n_items=Count("items"))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
