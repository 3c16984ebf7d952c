"""Notes in the admin."""

from __future__ import annotations

from django.contrib import admin

from memoryhub.admin.base import MemoryForm, SearchableAdmin, TagListFilter, titled
from memoryhub.models import (
    Note,
)


@admin.register(Note)
class NoteAdmin(SearchableAdmin):
    kind = "note"
    list_display = [
        "note_id",
        "short_content",
        "tenant",
        "workspace",
        "scope",
        "source",
        "tags",
        "user_id",
        "updated_at",
    ]
    list_filter = [
        ("tier", titled("scope")),
        "source",
        TagListFilter,
        "tenant",
        ("updated_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["tenant", "workspace"]
    search_fields = ["note_id", "content", "user_id", "=session__external_id"]
    form = MemoryForm
    readonly_fields = ["created_at", "updated_at"]
    date_hierarchy = "updated_at"
    actions = ["reindex"]

    @admin.display(description="Content")
    def short_content(self, obj: Note) -> str:
        return obj.content[:80]
