"""Sessions and their event log in the admin: a transcript page per session, forgetting with a
confirmation page that lists what goes; Django's plain delete is replaced by that forget."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db import transaction
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html

from memoryhub import conversations
from memoryhub.admin import transcript
from memoryhub.admin.base import counted
from memoryhub.admin.paginator import EstimatedCountPaginator
from memoryhub.models import (
    Event,
    Session,
)
from memoryhub.sessions import delete_session

FORGET_PREVIEW_LIMIT = 100


class OwnerFilter(admin.SimpleListFilter):
    """One end user's sessions, by user_id exactly (the end users page links here): a text search
    for the name would also list other people's sessions that mention it."""

    title = "end user"
    parameter_name = "user_id"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        chosen = self.value()
        # not a list of every user: there may be millions
        return [(chosen, chosen)] if chosen else []

    def queryset(self, request: HttpRequest, queryset: QuerySet[Session]) -> QuerySet[Session]:
        return queryset.filter(user_id=self.value()) if self.value() else queryset


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = [
        "external_id",
        "title",
        "tenant",
        "agent",
        "user_id",
        "status",
        "event_count",
        "transcript_link",
        "updated_at",
    ]
    list_filter = [
        OwnerFilter,
        "status",
        "tenant",
        "workspace",
        ("updated_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["tenant", "workspace", "channel"]
    search_fields = ["external_id", "title", "user_id", "persistence_key", "ref_code", "agent"]
    autocomplete_fields = ["workspace", "channel"]
    readonly_fields = ["ref_code", "last_sequence", "event_count", "ended_at", "transcript_link"]
    date_hierarchy = "updated_at"
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    actions = ["archive_sessions", "forget_sessions"]

    def get_urls(self) -> list[URLPattern]:
        own = [
            path(
                "<path:object_id>/transcript/",
                self.admin_site.admin_view(transcript.transcript_view),
                name="memoryhub_session_transcript",
            )
        ]
        return own + super().get_urls()

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # "Forget" is the deletion, with its confirmation page
        return actions

    def has_delete_permission(self, request: HttpRequest, obj: Session | None = None) -> bool:
        return False

    @admin.display(description="Transcript")
    def transcript_link(self, obj: Session) -> str:
        if obj.pk is None:
            return "—"
        url = reverse("admin:memoryhub_session_transcript", args=[obj.pk])
        return format_html('<a href="{}">read {}</a>', url, counted(obj.event_count, "message"))

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
        self.message_user(
            request, f"Archived {counted(len(sessions), 'session')}; cleared {_counts(cleared)}."
        )

    @admin.action(description="Forget selected sessions (delete with all derived data)…")
    def forget_sessions(
        self, request: HttpRequest, queryset: QuerySet[Session]
    ) -> HttpResponse | None:
        blocked = list(
            queryset.filter(tenant__immutable_transcript=True).values_list("external_id", flat=True)
        )
        if blocked:
            self.message_user(
                request,
                f"{', '.join(blocked[:10])} belong{'s' if len(blocked) == 1 else ''} to a tenant"
                " with an immutable transcript: forget their user instead.",
                messages.ERROR,
            )
            return None
        if request.POST.get("confirm") == "yes":
            names = list(queryset.values_list("external_id", flat=True))
            total = sum(sum(delete_session(s).values()) for s in queryset)
            self.message_user(
                request,
                f"Forgot {counted(len(names), 'session')} ({', '.join(names[:10])}): "
                f"{counted(total, 'row')} deleted.",
                messages.SUCCESS,
            )
            return None
        return self._confirm_forget(request, queryset)

    def _confirm_forget(self, request: HttpRequest, queryset: QuerySet[Session]) -> HttpResponse:
        sessions = list(
            queryset.select_related("tenant").annotate(
                n_notes=Count("notes", distinct=True),
                n_facts=Count("facts", distinct=True),
                n_summaries=Count("summary_nodes", distinct=True),
            )[:FORGET_PREVIEW_LIMIT]
        )
        first = {}
        for s in sessions:
            first[s.pk] = [e.text for e in Event.objects.filter(session=s).order_by("sequence")[:3]]
        context = {
            **self.admin_site.each_context(request),
            "title": "Forget these sessions?",
            "opts": self.model._meta,
            "sessions": [(s, first[s.pk]) for s in sessions],
            "more": max(queryset.count() - len(sessions), 0),
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "selected": queryset.values_list("pk", flat=True),
        }
        return TemplateResponse(request, "admin/memoryhub/session/forget_confirm.html", context)


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """The event log is append-only: operators read it (best as a transcript); they do not edit
    it."""

    list_display = [
        "id",
        "session_link",
        "tenant",
        "sequence",
        "speaker",
        "role",
        "short_content",
        "tool_name",
        "created_at",
    ]
    list_filter = ["role", "tenant", ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["session", "tenant"]
    search_fields = ["=session__external_id", "content", "tool_name"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    ordering = ["-id"]

    def get_ordering(self, request: HttpRequest) -> list[str]:
        # One session's events read as a conversation: oldest first.
        return ["sequence"] if "session__id__exact" in request.GET else ["-id"]

    @admin.display(description="Session", ordering="session__external_id")
    def session_link(self, obj: Event) -> str:
        url = reverse("admin:memoryhub_session_transcript", args=[obj.session_id])
        return format_html(
            '<a href="{}?around={}#m{}">{}</a>',
            url,
            obj.sequence,
            obj.sequence,
            obj.session.external_id,
        )

    @admin.display(description="Speaker")
    def speaker(self, obj: Event) -> str:
        return transcript.speaker(obj, obj.session)

    @admin.display(description="Content")
    def short_content(self, obj: Event) -> str:
        text = obj.text
        return text if len(text) <= 300 else text[:297] + "…"

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        # Removing single events would leave the session's counters wrong (and fail in the
        # database for immutable transcripts): events go with their session or their user.
        return False


def _counts(cleared: dict[str, int]) -> str:
    return f"{counted(cleared.get('notes', 0), 'note')}, {counted(cleared.get('facts', 0), 'fact')}"
