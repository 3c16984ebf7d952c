"""Facts in the admin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join

from memoryhub import facts
from memoryhub.admin.base import MemoryForm, SearchableAdmin, TagListFilter, counted, titled
from memoryhub.models import (
    Fact,
    FactVersion,
)
from memoryhub.signals import memory_deleted, memory_saved


def _when(at: Any) -> str:
    """A moment as every page of the console writes it (memoryhub/formats)."""
    return date_format(timezone.localtime(at), "DATETIME_FORMAT")


@admin.register(FactVersion)
class FactVersionAdmin(admin.ModelAdmin):
    """Every version of every fact, read-only: the record of what was true when."""

    list_display = [
        "fact_id",
        "short_content",
        "user_id",
        "source",
        "change",
        "valid_from",
        "valid_to",
        "closed_by",
        "tenant",
    ]
    list_filter = ["change", "closed_by", "tenant", ("valid_from", admin.DateFieldListFilter)]
    list_select_related = ["tenant"]
    search_fields = ["content", "key", "user_id", "=fact__id"]
    date_hierarchy = "valid_from"

    @admin.display(description="Content")
    def short_content(self, obj: FactVersion) -> str:
        return obj.content[:80]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: FactVersion | None = None) -> bool:
        return False


@admin.register(Fact)
class FactAdmin(SearchableAdmin):
    kind = "fact"
    list_display = [
        "id",
        "short_content",
        "user_id",
        "category",
        "key",
        "source",
        "importance",
        "uses",
        "tenant",
        "updated_at",
    ]
    list_filter = [
        ("tier", titled("scope")),
        "lifetime",
        "source",
        "category",
        TagListFilter,
        "tenant",
        ("updated_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["tenant"]
    search_fields = ["content", "category", "key", "user_id"]
    form = MemoryForm
    autocomplete_fields = ["workspace", "channel", "session", "source_session"]
    readonly_fields = [
        "applies_to",
        "uses",
        "last_used",
        "created_at",
        "updated_at",
        "valid_from",
        "history",
    ]
    # Left from before search counted per chunk (nothing writes them): the figures are
    # uses/last_used.
    exclude = ["access_count", "accessed_at"]
    date_hierarchy = "updated_at"
    actions = ["reindex", "pin", "unpin"]
    object_history_template = "admin/memoryhub/fact/object_history.html"

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """The History button shows the fact's versions (what it said, from when to when), with the
        console's own edits below them; Django's log alone knows only edits made here."""
        versions = (
            FactVersion.objects.filter(fact_id=object_id).order_by("valid_from", "id")
            if object_id.isdigit()
            else FactVersion.objects.none()
        )
        return super().history_view(
            request, object_id, {**(extra_context or {}), "versions": versions}
        )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Fact]:
        return facts.with_chunk_access(super().get_queryset(request))

    @admin.display(description="applies to")
    def applies_to(self, obj: Fact) -> str:
        """Where the fact holds, by name (its scope_key holds ids: "workspace:1")."""
        if obj.pk is None:
            return "—"
        place = {
            "conversation": obj.session.external_id if obj.session_id else "",
            "channel": f"#{obj.channel.name}" if obj.channel_id else "",
            "workspace": obj.workspace.name if obj.workspace_id else "",
        }.get(obj.tier, "")
        return (
            f"{obj.tier} {place}".strip()
            if obj.tier != "account"
            else "the whole account (every workspace)"
        )

    @admin.display(description="access count", ordering="chunk_access_count")
    def uses(self, obj: Fact) -> int:
        """Read where the API, the explorer and `manage.py stats` read it (memoryhub.facts.uses)."""
        return facts.uses(obj)

    @admin.display(description="last used")
    def last_used(self, obj: Fact) -> str:
        at = facts.last_used(obj)
        return date_format(timezone.localtime(at), "DATETIME_FORMAT") if at else "never"

    @admin.display(description="History (every version, oldest first)")
    def history(self, obj: Fact) -> str:
        versions = list(
            FactVersion.objects.filter(tenant_id=obj.tenant_id, fact_id=obj.pk).order_by(
                "valid_from", "id"
            )
        )
        if not versions:
            return "—"
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    v.content,
                    v.source,
                    v.change,
                    _when(v.valid_from),
                    f"{_when(v.valid_to)} ({v.closed_by})" if v.valid_to else "current",
                )
                for v in versions
            ),
        )
        return format_html(
            '<table class="fact-history"><thead><tr><th>Content</th><th>By</th><th>Opened by</th>'
            "<th>Valid from</th><th>Valid to</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    def save_model(self, request: HttpRequest, obj: Fact, form: ModelForm, change: bool) -> None:
        # An operator's edit of the content is a new version like any other
        # (docs/memory-model.md#fact-history), opened before the save announces it, so that the old
        # content's chunks are closed rather than replaced.
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
        # History stays (docs/memory-model.md#fact-history): the facts' chunks are closed, not
        # deleted; their versions close on delete.
        with transaction.atomic():
            at = timezone.now()
            for fact in queryset:
                memory_deleted.send(
                    sender=Fact,
                    kind="fact",
                    tenant_id=fact.tenant_id,
                    source_id=str(fact.pk),
                    closed_at=at,
                )
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
        self.message_user(
            request, f"Set importance {value} on {counted(queryset.count(), 'fact')}."
        )
