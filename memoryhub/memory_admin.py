"""Admin for notes, facts, scratchpads and summaries. Imported by memoryhub.admin.

Edits made here are announced to retrieval like API writes (memory_saved / memory_deleted), so
the search index follows what operators change. Scratchpads are the agent's working state:
shown read-only, with a "Working note" badge.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import connection, transaction
from django.db.models import Count, QuerySet
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from memoryhub.models import Fact, Note, Scratchpad, ScratchpadItem, SummaryNode
from memoryhub.signals import memory_deleted, memory_saved

WORKING_NOTE_BADGE = (
    '<span style="background:#fff3cd;color:#7a5b00;border:1px solid #e6c96b;border-radius:8px;'
    'padding:1px 7px;font-size:11px;font-weight:600;white-space:nowrap">Working note</span>'
)


class TagListFilter(admin.SimpleListFilter):
    """Filter by one tag (the most used tags of the table are offered)."""

    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        table = model_admin.model._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT tag, count(*) FROM (SELECT unnest(tags) AS tag FROM {table}) t "  # noqa: S608 - our table
                "GROUP BY tag ORDER BY count(*) DESC, tag LIMIT 30"
            )
            return [(tag, f"{tag} ({n})") for tag, n in cursor.fetchall()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(tags__contains=[self.value()]) if self.value() else queryset


class SearchableAdmin(admin.ModelAdmin):
    """Keeps the search index in step with admin edits and deletions."""

    kind = ""

    def source_id(self, obj: Any) -> str:
        return str(obj.as_searchable().source_id)

    def save_model(self, request: HttpRequest, obj: Any, form: ModelForm, change: bool) -> None:
        with transaction.atomic():
            if hasattr(obj, "updated_at") and change:
                obj.updated_at = timezone.now()
            super().save_model(request, obj, form, change)
            memory_saved.send(sender=type(obj), kind=self.kind, instance=obj)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        with transaction.atomic():
            memory_deleted.send(sender=type(obj), kind=self.kind, tenant_id=obj.tenant_id, source_id=self.source_id(obj))
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with transaction.atomic():
            for obj in queryset:
                memory_deleted.send(sender=type(obj), kind=self.kind, tenant_id=obj.tenant_id,
                                    source_id=self.source_id(obj))
            super().delete_queryset(request, queryset)

    @admin.action(description="Re-index selected (replace their search chunks)")
    def reindex(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = 0
        with transaction.atomic():
            for obj in queryset:
                memory_saved.send(sender=type(obj), kind=self.kind, instance=obj)
                count += 1
        self.message_user(request, f"Re-indexed {count} item(s).")


@admin.register(Note)
class NoteAdmin(SearchableAdmin):
    kind = "note"
    list_display = ["note_id", "short_content", "tenant", "workspace", "tier", "source", "tags", "user_id", "updated_at"]
    list_filter = ["tier", "source", TagListFilter, "tenant", ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant", "workspace"]
    search_fields = ["note_id", "content", "user_id", "=session__external_id"]
    raw_id_fields = ["tenant", "workspace", "channel", "session"]
    readonly_fields = ["created_at", "updated_at"]
    date_hierarchy = "updated_at"
    actions = ["reindex"]

    @admin.display(description="Content")
    def short_content(self, obj: Note) -> str:
        return obj.content[:80]


@admin.register(Fact)
class FactAdmin(SearchableAdmin):
    kind = "fact"
    list_display = ["id", "short_content", "category", "key", "tier", "lifetime", "source", "importance",
                    "access_count", "tenant", "updated_at"]
    list_filter = ["tier", "lifetime", "source", "category", TagListFilter, "tenant",
                   ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["content", "category", "key", "user_id"]
    raw_id_fields = ["tenant", "workspace", "channel", "session", "source_session"]
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
    list_display = ["id", "level", "session", "sequence_start", "sequence_end", "source_count", "summariser",
                    "tenant", "created_at"]
    list_filter = ["level", "summariser", "tenant", ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["session", "tenant"]
    search_fields = ["text", "=session__external_id"]
    raw_id_fields = ["tenant", "workspace", "channel", "session", "parent"]
    readonly_fields = ["source_events", "created_at"]
    inlines = [SummaryChildInline]
    actions = ["reindex"]

    @admin.display(description="Source events")
    def source_events(self, obj: SummaryNode) -> str:
        if obj.pk is None:
            return "-"
        events = list(obj.session.events.filter(sequence__gte=obj.sequence_start, sequence__lte=obj.sequence_end)
                      .order_by("sequence")[:50])
        url = (reverse("admin:memoryhub_event_changelist")
               + f"?session__id__exact={obj.session_id}")
        rows = format_html_join("", "<li>#{} <b>{}</b>: {}</li>",
                                ((e.sequence, e.role, e.text[:160]) for e in events))
        return format_html('<ul style="margin:0">{}</ul><a href="{}">all events of the session</a>', rows, url)


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
    """The agent manages its scratchpad: operators read it (S9: read-only, "Working note" badge)."""

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
