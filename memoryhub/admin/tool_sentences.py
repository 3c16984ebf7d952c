"""Tool-call sentences in the admin: read them, or delete one to have it written again."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from memoryhub.admin.paginator import EstimatedCountPaginator
from memoryhub.models import ToolCallSentence


@admin.register(ToolCallSentence)
class ToolCallSentenceAdmin(admin.ModelAdmin):
    list_display = ["event", "tenant", "model", "text", "created_at"]
    list_filter = ["model", "tenant"]
    list_select_related = ["event", "tenant"]
    search_fields = ["text", "=event__session__external_id"]
    raw_id_fields = ["event"]
    readonly_fields = ["event", "tenant", "model", "created_at"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # written by the summarise lane
