"""What the admin pages of searchable memories (notes, facts, summaries) share."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db import connection, transaction
from django.db.models import QuerySet
from django.forms import ModelForm
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme

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


def counted(count: int, noun: str, plural: str = "") -> str:
    """A number with its noun as one says it: 1 schedule, 2 schedules, 1 memory, 3 memories."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def titled(title: str) -> type[admin.FieldListFilter]:
    """A field's usual list filter (as a bare field name in list_filter gets) under a title in the
    operator's words: Django titles it by the field's verbose name, which gave one list two
    "By status" and a "By manual"."""

    class Titled(admin.FieldListFilter):
        def __new__(
            cls,
            field: Any,
            request: HttpRequest,
            params: Any,
            model: Any,
            model_admin: Any,
            field_path: str,
        ) -> Any:
            chosen = admin.FieldListFilter.create(
                field, request, params, model, model_admin, field_path
            )
            chosen.title = title
            return chosen

    return Titled


IMPORTANCE_HELP = "From 0 (trivial) to 1 (vital); 1 is also what pinning sets."


class ImportanceField(forms.FloatField):
    """Importance with the range said in words (the database's check would only name its
    constraint)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            min_value=0.0,
            max_value=1.0,
            help_text=IMPORTANCE_HELP,
            error_messages={
                "min_value": "Importance is between 0 and 1; %(limit_value)s is the lowest.",
                "max_value": (
                    "Importance is between 0 and 1: use 1 for the most important memories (or pin"
                    " it)."
                ),
            },
            **kwargs,
        )


class MemoryForm(forms.ModelForm):
    importance = ImportanceField()


class ScopeNamed(admin.ModelAdmin):
    """A model's `tier` shown as the API names it, `scope`: its column, its filter and its field on
    a change form, editable or read-only."""

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        if "tier" in form.base_fields:
            form.base_fields["tier"].label = "Scope"
        return form

    @admin.display(description="scope", ordering="tier")
    def scope(self, obj: Any) -> str:
        """The model's tier, named as the API names it (`scope`)."""
        return obj.tier


class SearchableAdmin(ScopeNamed):
    """Keeps the search index in step with admin edits and deletions; after a save, goes back to
    the page the edit was opened from (`?next=`, e.g. the memory explorer)."""

    kind = ""
    # Tenants are few (a select); the rest are looked up by name as you type.
    autocomplete_fields = ["workspace", "channel", "session"]

    def _next(self, request: HttpRequest) -> str:
        target = request.GET.get("next", "")
        ok = target and url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()})
        return target if ok else ""

    def response_change(self, request: HttpRequest, obj: Any) -> HttpResponse:
        target = self._next(request)
        if target and "_continue" not in request.POST and "_addanother" not in request.POST:
            self.message_user(request, f"Saved {obj}; its search entries were re-derived.")
            return HttpResponseRedirect(target)
        return super().response_change(request, obj)

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
            memory_deleted.send(
                sender=type(obj),
                kind=self.kind,
                tenant_id=obj.tenant_id,
                source_id=self.source_id(obj),
            )
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        with transaction.atomic():
            for obj in queryset:
                memory_deleted.send(
                    sender=type(obj),
                    kind=self.kind,
                    tenant_id=obj.tenant_id,
                    source_id=self.source_id(obj),
                )
            super().delete_queryset(request, queryset)

    @admin.action(description="Re-index selected (replace their search chunks)")
    def reindex(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        count = 0
        with transaction.atomic():
            for obj in queryset:
                memory_saved.send(sender=type(obj), kind=self.kind, instance=obj)
                count += 1
        self.message_user(request, f"Re-indexed {counted(count, 'item')}.")
