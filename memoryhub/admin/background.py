"""The background lanes in the admin: who is working, and the sessions set aside with their
error."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from memoryhub.admin.base import counted
from memoryhub.models import StepFailure, Worker
from memoryhub.session_work import retry_set_aside


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    """Read-only: each lane of `manage.py work` writes its own row every few seconds."""

    list_display = ["lane", "name", "busy", "rate", "done", "failed", "started_at", "seen_at"]
    list_filter = ["lane", "busy"]
    search_fields = ["name", "=lane"]
    ordering = ["lane", "name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Worker | None = None) -> bool:
        return False


@admin.register(StepFailure)
class StepFailureAdmin(admin.ModelAdmin):
    """Sessions a background step failed on; set-aside ones are skipped until retried here."""

    list_display = [
        "session",
        "tenant",
        "step",
        "attempts",
        "set_aside",
        "failed_at",
        "short_error",
    ]
    list_filter = ["set_aside", "step", "tenant"]
    search_fields = ["session__external_id", "error"]
    list_select_related = ["session", "tenant"]
    raw_id_fields = ["session", "tenant"]
    readonly_fields = ["tenant", "session", "step", "attempts", "error", "failed_at", "set_aside"]
    ordering = ["-failed_at"]
    actions = ["retry"]

    @admin.display(description="error")
    def short_error(self, obj: StepFailure) -> str:
        return obj.error[:120]

    @admin.action(description="Retry: make the selected sessions due again")
    def retry(self, request: HttpRequest, queryset: QuerySet[StepFailure]) -> None:
        count = retry_set_aside(list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{counted(count, 'session')} will be worked on again.")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
