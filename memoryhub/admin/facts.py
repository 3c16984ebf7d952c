"""Facts in the admin."""

from __future__ import annotations

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.utils import timezone

from memoryhub import facts
from memoryhub.admin.base import MemoryForm, SearchableAdmin, TagListFilter
from memoryhub.models import (
    Fact,
    FactVersion,
)
from memoryhub.signals import memory_deleted, memory_saved


class FactVersionInline(admin.TabularInline):
    """The fact's history (SPEC S12), oldest first: read-only, as it is the record of what was true."""

    model = FactVersion
    fk_name = "fact"
    verbose_name = "version"
    verbose_name_plural = "History (every version of the content, oldest first)"
    fields = ["content", "source", "change", "valid_from", "valid_to", "closed_by"]
    readonly_fields = fields
    ordering = ["valid_from", "id"]
    extra = 0
    can_delete = False
    show_change_link = False

    def has_add_permission(self, request: HttpRequest, obj: Fact | None = None) -> bool:
        return False


@admin.register(Fact)
class FactAdmin(SearchableAdmin):
    kind = "fact"
    list_display = ["id", "short_content", "user_id", "category", "key", "tier", "lifetime", "source", "importance",
                    "access_count", "tenant", "valid_from", "updated_at"]
    list_filter = ["tier", "lifetime", "source", "category", TagListFilter, "tenant",
                   ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["content", "category", "key", "user_id"]
    form = MemoryForm
    autocomplete_fields = ["workspace", "channel", "session", "source_session"]
    readonly_fields = ["scope_key", "access_count", "accessed_at", "created_at", "updated_at", "valid_from"]
    date_hierarchy = "updated_at"
    actions = ["reindex", "pin", "unpin"]
    inlines = [FactVersionInline]

    def save_model(self, request: HttpRequest, obj: Fact, form: ModelForm, change: bool) -> None:
        # An operator's edit of the content is a new version like any other (S12), opened before the
        # save announces it, so that the old content's chunks are closed rather than replaced.
        with transaction.atomic():
            if change and any(name in form.changed_data for name in facts.VERSIONED):
                facts.open_version(obj, change="updated", at=timezone.now(), source="operator")
            super().save_model(request, obj, form, change)
            if not change:
                facts.open_version(obj, change="created", at=obj.created_at, source="operator")
                obj.save(update_fields=["valid_from"])

    def delete_model(self, request: HttpRequest, obj: Fact) -> None:
        self.delete_queryset(request, Fact.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Fact]) -> None:
        # History stays (S12): the facts' chunks are closed, not deleted; their versions close on delete.
        with transaction.atomic():
            at = timezone.now()
            for fact in queryset:
                memory_deleted.send(sender=Fact, kind="fact", tenant_id=fact.tenant_id, source_id=str(fact.pk),
                                    closed_at=at)
            queryset.delete()

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
