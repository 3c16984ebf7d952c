"""Sessions and their event log in the admin."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from memoryhub import conversations
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
    readonly_fields = ["ref_code", "last_sequence", "event_count", "ended_at", "events_link"]
    date_hierarchy = "updated_at"
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["archive_sessions", "forget_sessions"]

    @admin.display(description="Events")
    def events_link(self, obj: Session) -> str:
        url = reverse("admin:memoryhub_event_changelist") + f"?session__id__exact={obj.pk}"
        return format_html('<a href="{}">{} events</a>', url, obj.event_count)

    def save_model(self, request: HttpRequest, obj: Session, form: Any, change: bool) -> None:
        # A status changed in the form moves like one changed through the API (ended_at, and
        # archiving clears the conversation's memories); Session.clean has checked the move.
        previous = form.initial.get("status", obj.status) if change else obj.status
        with transaction.atomic():
            if change and "status" in form.changed_data:
                conversations.move(obj, obj.status)
            super().save_model(request, obj, form, change)
            cleared = conversations.after_move(obj, previous) if change else {}
        if any(cleared.values()):
            self.message_user(request, f"Cleared the conversation's memories: {_counts(cleared)}.")

    @admin.action(description="Archive selected sessions (clears their conversation-tier memories)")
    def archive_sessions(self, request: HttpRequest, queryset: QuerySet[Session]) -> None:
        cleared = {"notes": 0, "facts": 0}
        with transaction.atomic():
            sessions = list(queryset.exclude(status="archived").select_for_update())
            for session in sessions:
                previous = session.status
                session.updated_at = timezone.now()
                fields = conversations.move(session, "archived", now=session.updated_at)
                session.save(update_fields=[*fields, "updated_at"])
                for name, count in conversations.after_move(session, previous).items():
                    cleared[name] += count
        self.message_user(request, f"Archived {len(sessions)} session(s); cleared {_counts(cleared)}.")

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


def _counts(cleared: dict[str, int]) -> str:
    return f"{cleared.get('notes', 0)} note(s), {cleared.get('facts', 0)} fact(s)"
