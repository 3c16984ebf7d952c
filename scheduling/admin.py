"""Operator admin for schedules and runs. django-q2 registers its own admin (queued tasks,
successes, failures with resubmit, its schedules, including `scheduling:dispatch`)."""

from __future__ import annotations

import json
from datetime import UTC
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import pluralize
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join

from memoryhub.admin.base import counted, titled
from memoryhub.errors import DomainError
from retrieval.admin_helpers import confirm_page, confirmed
from retrieval.lifecycle.consolidation import run_consolidation
from scheduling import authority, notifications, services, webhooks
from scheduling import cadence as cadence_maths
from scheduling.actions import REGISTRY, ParamsError, check_params
from scheduling.dispatcher import run_now
from scheduling.models import Delivery, DeliveryStatus, Run, Schedule, Webhook

CADENCE_FIELDS = ("cadence_type", "cadence_value", "timezone")


class ScheduleForm(forms.ModelForm):
    """The API's checks in the admin: a valid cadence (when it changes) and params fit for the
    action."""

    action = forms.ChoiceField(choices=[(name, name) for name in sorted(REGISTRY)])

    class Meta:
        model = Schedule
        fields = "__all__"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if any(name in self.changed_data for name in CADENCE_FIELDS) and all(
            data.get(n) for n in CADENCE_FIELDS
        ):
            try:
                cadence = cadence_maths.validate(
                    data["cadence_type"],
                    data["cadence_value"],
                    data["timezone"],
                    now=timezone.now(),
                )
            except cadence_maths.CadenceError as exc:
                raise forms.ValidationError(
                    {"timezone" if "timezone" in exc.field else "cadence_value": exc.message}
                ) from None
            data["cadence_value"] = cadence.value
            self.instance.next_run_at = cadence_maths.next_run(cadence, timezone.now())
            data["next_run_at"] = self.instance.next_run_at
        if data.get("action"):
            try:
                data["params"] = check_params(
                    data["action"], data.get("params"), data.get("goal") or ""
                )
            except ParamsError as exc:
                raise forms.ValidationError({"params": exc.message}) from None
        self._check_agent_webhook(data)
        return data

    def _check_agent_webhook(self, data: dict[str, Any]) -> None:
        """As the API: an agent_goal schedule needs somewhere to send its goal
        (webhook_required)."""
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
    fields = [
        "started_at",
        "finished_at",
        "status",
        "error",
        "output_summary",
        "turn_count",
        "cost",
        "notified",
    ]
    readonly_fields = fields
    ordering = ["-started_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = [
        "name",
        "tenant",
        "action",
        "cadence",
        "status",
        "next_run_local",
        "last_run_status",
        "consecutive_failures",
        "user_id",
    ]
    list_filter = ["status", "action", "cadence_type", "last_run_status", "tenant"]
    search_fields = ["name", "goal", "user_id", "channel"]
    readonly_fields = [
        "id",
        "next_run_local",
        "last_run_at",
        "last_run_status",
        "consecutive_failures",
        "created_at",
        "updated_at",
    ]
    list_select_related = ["tenant"]
    autocomplete_fields = ["workspace"]
    inlines = [RunInline]
    actions = ["run_now_action", "pause_action", "resume_action"]

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        # Made or changed by the operator: it acts with the operator's authority (the tenant's).
        authority.stamp(obj, None)
        super().save_model(request, obj, form, change)

    @admin.display(description="cadence")
    def cadence(self, obj: Schedule) -> str:
        try:
            return cadence_maths.describe(obj.cadence())
        except cadence_maths.CadenceError:
            return f"{obj.cadence_type} {obj.cadence_value} (invalid)"

    @admin.display(description="next run (schedule's zone)", ordering="next_run_at")
    def next_run_local(self, obj: Schedule) -> str:
        """On the schedule's wall clock, written as the console writes every date (2026-07-01
        09:00)."""
        if obj.next_run_at is None:
            return "—"
        try:
            local = obj.next_run_at.astimezone(cadence_maths.zone(obj.timezone))
        except cadence_maths.CadenceError:
            local = obj.next_run_at.astimezone(UTC)
        return f"{date_format(local, 'DATETIME_FORMAT')} {local:%Z} ({obj.timezone})"

    @admin.action(description="Run now…")
    def run_now_action(
        self, request: HttpRequest, queryset: QuerySet[Schedule]
    ) -> HttpResponse | None:
        if not confirmed(request):
            rows = [
                row
                for schedule in queryset.select_related("tenant")
                for row in _run_preview(schedule)
            ]
            return confirm_page(
                request,
                self,
                queryset,
                action="run_now_action",
                danger=False,
                intro="These schedules will run now (their next due time does not change). "
                "A consolidation is previewed below: the same steps, rolled back.",
                headers=["Schedule", "Tenant", "What it does", "What it would change"],
                rows=rows,
                button=f"Run {counted(queryset.count(), 'schedule')} now",
            )
        for schedule in queryset:
            run_now(schedule)
        self.message_user(request, f"{counted(queryset.count(), 'run')} enqueued.")
        return None

    @admin.action(description="Pause")
    def pause_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.pause, "paused")

    @admin.action(description="Resume")
    def resume_action(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        self._each(request, queryset, services.resume, "resumed")

    def _each(
        self, request: HttpRequest, queryset: QuerySet[Schedule], change: Any, done: str
    ) -> None:
        count = 0
        for schedule in queryset:
            try:
                change(schedule)
                count += 1
            except DomainError as exc:
                self.message_user(
                    request, f"{schedule.name}: {exc.message}", level=messages.WARNING
                )
        self.message_user(request, f"{counted(count, 'schedule')} {done}.")


class DeliveryInline(admin.StackedInline):
    model = Delivery
    extra = 0
    can_delete = False
    fields = [
        "status",
        "attempts",
        "max_attempts",
        "last_status_code",
        "last_error",
        "next_attempt_at",
        "delivered_at",
        "url",
        "webhook",
        "payload",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _run_preview(schedule: Schedule) -> list[list[str]]:
    """Rows of the run-now confirmation: the action in words and, for a consolidation that deletes,
    what its dry run would delete."""
    spec = REGISTRY.get(schedule.action)
    about = spec.description if spec else schedule.action
    head = [schedule.name, schedule.tenant.name, about]
    if schedule.action != "consolidate" or (schedule.params or {}).get("dry_run"):
        return [[*head, "—"]]
    preview = run_consolidation(tenant_id=schedule.tenant_id, dry_run=True)
    counts = preview["counts"]
    summary = (
        f"{counts.get('promoted', 0)} promoted, {counts.get('pruned', 0)} pruned, "
        f"{counts.get('merged', 0)} merged, {counts.get('capped', 0)} capped"
        + (
            f" ({counts['held_for_review']} held for review)"
            if counts.get("held_for_review")
            else ""
        )
    )
    return [[*head, summary]] + [
        ["", "", f"would {d['step']}", d["text"]] for d in preview["deletions"][:200]
    ]


def output_table(text: str) -> str:
    """A run's output: a JSON object as a table of its keys, a list of objects as rows; text as
    is."""
    try:
        value = json.loads(text) if text else None
    except ValueError:
        value = None
    if isinstance(value, dict):
        rows = (
            (k, v if isinstance(v, (str, int, float)) else json.dumps(v, ensure_ascii=False))
            for k, v in sorted(value.items())
        )
        return format_html(
            "<table>{}</table>", format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", rows)
        )
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        keys = sorted({k for v in value for k in v})
        head = format_html_join("", "<th>{}</th>", ((k,) for k in keys))
        body = format_html_join(
            "",
            "<tr>{}</tr>",
            (
                (format_html_join("", "<td>{}</td>", ((v.get(k, ""),) for k in keys)),)
                for v in value
            ),
        )
        return format_html("<table><tr>{}</tr>{}</table>", head, body)
    return format_html('<div style="white-space: pre-wrap">{}</div>', text or "—")


# How much of a run's output its row in the list shows; its page shows all of it.
OUTPUT_WORDS_CHARS = 120


def output_words(output: str, summary: str) -> str:
    """A run's output as a list's cell reads it: a JSON object as "key: value" pairs, a list by its
    length, else its summary as written; cut at a word, with "…", past OUTPUT_WORDS_CHARS."""
    try:
        value = json.loads(output) if output else None
    except ValueError:
        value = None
    if isinstance(value, dict):
        said = "; ".join(
            f"{k}: {v if isinstance(v, (str, int, float)) else json.dumps(v, ensure_ascii=False)}"
            for k, v in sorted(value.items())
        )
    elif isinstance(value, list):
        said = f"{len(value)} item{pluralize(len(value))}"
    else:
        said = summary or "—"
    if len(said) <= OUTPUT_WORDS_CHARS:
        return said
    return said[:OUTPUT_WORDS_CHARS].rsplit(" ", 1)[0].rstrip(";:,") + "…"


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = [
        "started_at",
        "schedule",
        "tenant",
        "status",
        "error",
        "finished_at",
        "turn_count",
        "cost",
        "notification",
        "output_in_words",
    ]
    list_filter = [
        ("status", titled("run status")),
        ("manual", titled("started by hand (run now)")),
        ("error", titled("error")),
        "tenant",
        ("delivery__status", titled("notification")),
    ]
    search_fields = ["output", "schedule__name"]
    list_select_related = ["schedule", "tenant", "delivery"]
    fields = [
        "schedule",
        "tenant",
        "status",
        "error",
        "manual",
        "due_at",
        "started_at",
        "finished_at",
        "turn_count",
        "cost",
        "output_summary",
        "output_as_table",
        "notified",
    ]
    readonly_fields = fields
    date_hierarchy = "started_at"
    inlines = [DeliveryInline]

    @admin.display(description="output", ordering="output_summary")
    def output_in_words(self, obj: Run) -> str:
        return output_words(obj.output, obj.output_summary)

    @admin.display(description="output")
    def output_as_table(self, obj: Run) -> str:
        return output_table(obj.output)

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
    list_display = [
        "created_at",
        "run",
        "tenant",
        "status",
        "attempts",
        "max_attempts",
        "last_status_code",
        "last_error",
        "next_attempt_at",
        "delivered_at",
    ]
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
    """The secret is never shown here: blank keeps the stored one (or generates one for a new
    webhook)."""

    new_secret = forms.CharField(
        required=False,
        label="Secret",
        max_length=200,
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave blank to keep the current secret, or to generate one for a new webhook "
        "(shown once after saving). At least 16 characters when given.",
    )

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
            self.message_user(
                request,
                f"Signing secret of this webhook (shown only now): {obj.secret}",
                level=messages.WARNING,
            )
