"""Sessions and their event log in the admin."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from memoryhub.admin.paginator import EstimatedCountPaginator
from memoryhub.models import (
    Event,
    Session,
)
from memoryhub.sessions import delete_session


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["external_id", "title", "tenant", "workspace", "channel", "agent", "user_id",
                    "status", "event_count", "updated_at"]
    list_filter = ["status", "tenant", "workspace", ("updated_at", admin.DateFieldListFilter)]
    list_select_related = ["tenant", "workspace", "channel"]
    search_fields = ["external_id", "title", "user_id", "persistence_key", "ref_code", "agent"]
    raw_id_fields = ["tenant", "workspace", "channel"]
    readonly_fields = ["ref_code", "last_sequence", "event_count", "events_link"]
    date_hierarchy = "updated_at"
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["archive_sessions", "forget_sessions"]

    @admin.display(description="Events")
    def events_link(self, obj: Session) -> str:
        url = reverse("admin:memoryhub_event_changelist") + f"?session__id__exact={obj.pk}"
        return format_html('<a href="{}">{} events</a>', url, obj.event_count)

    @admin.action(description="Archive selected sessions")
    def archive_sessions(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        count = queryset.exclude(status="archived").update(status="archived", updated_at=timezone.now())
        self.message_user(request, f"Archived {count} session(s).")

    @admin.action(description="Forget selected sessions (delete with all derived data)")
    def forget_sessions(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        blocked = queryset.filter(tenant__immutable_transcript=True).count()
        if blocked:
            self.message_user(request, f"{blocked} session(s) belong to tenants with an immutable "
                              "transcript; forget their user instead.", messages.ERROR)
            return
        total = sum(sum(delete_session(s).values()) for s in queryset)
        self.message_user(request, f"Deleted {total} row(s).")


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """The event log is append-only: operators read it; they do not edit it."""

    list_display = ["id", "session", "sequence", "role", "short_content", "tool_name", "importance", "created_at"]
    list_filter = ["role", "tenant", ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["session"]
    search_fields = ["=session__external_id", "content", "tool_name"]
    raw_id_fields = ["tenant", "session"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    ordering = ["-id"]

    @admin.display(description="Content")
    def short_content(self, obj: Event) -> str:
        text = obj.text
        return text if len(text) <= 120 else text[:117] + "…"

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        # Removing single events would leave the session's counters wrong (and fail in the
        # database for immutable transcripts): events go with their session or their user.
        return False
