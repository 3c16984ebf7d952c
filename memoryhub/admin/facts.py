"""Facts in the admin."""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from memoryhub.admin.base import MemoryForm, SearchableAdmin, TagListFilter
from memoryhub.models import (
    Fact,
)
from memoryhub.signals import memory_saved


@admin.register(Fact)
class FactAdmin(SearchableAdmin):
    kind = "fact"
    list_display = ["id", "short_content", "category", "key", "tier", "lifetime", "source", "importance",
                    "access_count", "tenant", "updated_at"]
    list_filter = ["tier", "lifetime", "source", "category", TagListFilter, "tenant",
                   ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["content", "category", "key", "user_id"]
    form = MemoryForm
    autocomplete_fields = ["workspace", "channel", "session", "source_session"]
    readonly_fields = ["scope_key", "access_count", "accessed_at", "created_at", "updated_at"]
    date_hierarchy = "updated_at"
    actions = ["reindex", "pin", "unpin"]

    @admin.display(description="Content")
    def short_content(self, obj: Fact) -> str:
        return obj.content[:80]

    @admin.action(description="Pin selected (importance 1.0)")
    def pin(self, request: HttpRequest, queryset: QuerySet[Fact]) -> None:
        self._set_importance(request, queryset, 1.0)

    @admin.action(description="Unpin selected (importance 0.5)")
    def unpin(self, request: HttpRequest, queryset: QuerySet[Fact]) -> None:
        self._set_importance(request, queryset, 0.5)

    def _set_importance(self, request: HttpRequest, queryset: QuerySet[Fact], value: float) -> None:
        with transaction.atomic():
            for fact in queryset:
                fact.importance = value
                fact.updated_at = timezone.now()
                fact.save(update_fields=["importance", "updated_at"])
                memory_saved.send(sender=Fact, kind="fact", instance=fact)
        self.message_user(request, f"Set importance {value} on {queryset.count()} fact(s).")
