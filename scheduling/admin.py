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
from scheduling import notifications, services, webhooks
from scheduling.actions import REGISTRY, ParamsError, check_params
from scheduling.dispatcher import run_now
from scheduling.models import Delivery, DeliveryStatus, Run, Schedule, Webhook

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
        self._check_agent_webhook(data)
        return data

    def _check_agent_webhook(self, data: dict[str, Any]) -> None:
        """As the API: an agent_goal schedule needs somewhere to send its goal (webhook_required)."""
        changed = "action" in self.changed_data or "tenant" in self.changed_data
        if data.get("action") == "agent_goal" and data.get("tenant") and changed:
            try:
                webhooks.require_agent_webhook(data["tenant"].pk)
            except DomainError as exc:
                raise forms.ValidationError({"action": exc.message}) from None


class RunInline(admin.TabularInline):
    model = Run
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["started_at", "finished_at", "status", "error", "output_summary", "turn_count", "cost", "notified"]
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


class DeliveryInline(admin.StackedInline):
    model = Delivery
    extra = 0
    can_delete = False
    fields = ["status", "attempts", "max_attempts", "last_status_code", "last_error", "next_attempt_at",
              "delivered_at", "url", "webhook", "payload"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["started_at", "schedule", "tenant", "status", "error", "manual", "finished_at",
                    "turn_count", "cost", "notification", "output_summary"]
    list_filter = ["status", "manual", "error", "tenant", "delivery__status"]
    search_fields = ["output", "schedule__name"]
    list_select_related = ["schedule", "tenant", "delivery"]
    readonly_fields = [f.name for f in Run._meta.concrete_fields]
    date_hierarchy = "started_at"
    inlines = [DeliveryInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="notification")
    def notification(self, obj: Run) -> str:
        try:
            delivery = obj.delivery
        except Delivery.DoesNotExist:
            return "—"
        return f"{delivery.status} ({delivery.attempts}/{delivery.max_attempts})"


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "run", "tenant", "status", "attempts", "max_attempts", "last_status_code",
                    "last_error", "next_attempt_at", "delivered_at"]
    list_filter = ["status", "tenant"]
    search_fields = ["last_error", "url", "run__schedule__name"]
    list_select_related = ["run", "tenant"]
    readonly_fields = [f.name for f in Delivery._meta.concrete_fields]
    actions = ["retry_action"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Try again (failed or without a webhook)")
    def retry_action(self, request: HttpRequest, queryset: QuerySet[Delivery]) -> None:
        again = [notifications.retry(d) for d in queryset]
        count = sum(d.status == DeliveryStatus.PENDING for d in again)
        self.message_user(request, f"{count} delivery(ies) queued again.")


class WebhookForm(forms.ModelForm):
    """The secret is never shown here: blank keeps the stored one (or generates one for a new webhook)."""

    new_secret = forms.CharField(
        required=False, label="Secret", max_length=200, widget=forms.PasswordInput(render_value=False),
        help_text="Leave blank to keep the current secret, or to generate one for a new webhook "
                  "(shown once after saving). At least 16 characters when given.")

    class Meta:
        model = Webhook
        fields = ["tenant", "kind", "url", "description"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        try:
            if data.get("url"):
                webhooks.check_url(data["url"])
            if data.get("new_secret"):
                webhooks.check_secret(data["new_secret"])
        except DomainError as exc:
            field = "new_secret" if exc.code == "secret_too_short" else "url"
            raise forms.ValidationError({field: exc.message}) from None
        return data


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    form = WebhookForm
    list_display = ["tenant", "kind", "url", "description", "created_at"]
    list_filter = ["kind", "tenant"]
    search_fields = ["url", "description"]
    list_select_related = ["tenant"]

    def save_model(self, request: HttpRequest, obj: Webhook, form: Any, change: bool) -> None:
        generated = not obj.secret and not form.cleaned_data.get("new_secret")
        webhooks.save_webhook(obj, url=obj.url, secret=form.cleaned_data.get("new_secret") or "")
        if generated:
            self.message_user(request, f"Signing secret of this webhook (shown only now): {obj.secret}",
                              level=messages.WARNING)
