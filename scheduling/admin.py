"""Operator admin for schedules and runs. django-q2 registers its own admin (queued tasks,
successes, failures with resubmit, its schedules, including `scheduling:dispatch`)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone

from memoryhub.errors import DomainError
from scheduling import cadence as cadence_maths
from scheduling import services
from scheduling.actions import REGISTRY, ParamsError, check_params
from scheduling.dispatcher import run_now
from scheduling.models import Run, Schedule

CADENCE_FIELDS = ("cadence_type", "cadence_value", "timezone")


class ScheduleForm(forms.ModelForm):
    """The API's checks in the admin: a valid cadence (when it changes) and params fit for the action."""

    action = forms.ChoiceField(choices=[(name, name) for name in sorted(REGISTRY)])

    class Meta:
        model = Schedule
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if any(name in self.changed_data for name in CADENCE_FIELDS) and all(data.get(n) for n in CADENCE_FIELDS):
            try:
                cadence = cadence_maths.validate(data["cadence_type"], data["cadence_value"], data["timezone"],
                                                 now=timezone.now())
            except cadence_maths.CadenceError as exc:
                raise forms.ValidationError(
                    {"timezone" if "timezone" in exc.field else "cadence_value": exc.message}) from None
            data["cadence_value"] = cadence.value
            self.instance.next_run_at = cadence_maths.next_run(cadence, timezone.now())
            data["next_run_at"] = self.instance.next_run_at
        if data.get("action"):
            try:
                data["params"] = check_params(data["action"], data.get("params"), data.get("goal") or "")
            except ParamsError as exc:
                raise forms.ValidationError({"params": exc.message}) from None
        return data


class RunInline(admin.TabularInline):
    model = Run
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["started_at", "finished_at", "status", "error", "output_summary", "turn_count", "cost"]
    readonly_fields = fields
    ordering = ["-started_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False



@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = ["name", "tenant", "action", "cadence", "status", "next_run_local", "last_run_status",
                    "consecutive_failures", "user_id"]
    list_filter = ["status", "action", "cadence_type", "last_run_status", "tenant"]
    search_fields = ["name", "goal", "user_id", "channel"]
    readonly_fields = ["id", "next_run_local", "last_run_at", "last_run_status", "consecutive_failures",
                       "created_at", "updated_at"]
    list_select_related = ["tenant"]
    inlines = [RunInline]
    actions = ["run_now_action", "pause_action", "resume_action"]

    @admin.display(description="cadence")
    def cadence(self, obj: Schedule) -> str:
        try:
            return cadence_maths.describe(obj.cadence())
        except cadence_maths.CadenceError:
            return f"{obj.cadence_type} {obj.cadence_value} (invalid)"

    @admin.display(description="next run (schedule's zone)", ordering="next_run_at")
    def next_run_local(self, obj: Schedule) -> str:
        return cadence_maths.format_in_timezone(obj.next_run_at, obj.timezone) or "—"

    @admin.action(description="Run now")
    def run_now_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            run_now(schedule)
        self.message_user(request, f"{queryset.count()} run(s) enqueued.")

    @admin.action(description="Pause")
    def pause_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.pause, "paused")

    @admin.action(description="Resume")
    def resume_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.resume, "resumed")

    def _each(self, request: HttpRequest, queryset: QuerySet[Schedule], change: Any, done: str) -> None:
        count = 0
        for schedule in queryset:
            try:
                change(schedule)
                count += 1
            except DomainError as exc:
                self.message_user(request, f"{schedule.name}: {exc.message}", level=messages.WARNING)
        self.message_user(request, f"{count} schedule(s) {done}.")


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["started_at", "schedule", "tenant", "status", "error", "manual", "finished_at",
                    "turn_count", "cost", "output_summary"]
    list_filter = ["status", "manual", "error", "tenant"]
    search_fields = ["output", "schedule__name"]
    list_select_related = ["schedule", "tenant"]
    readonly_fields = [f.name for f in Run._meta.concrete_fields]
    date_hierarchy = "started_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
