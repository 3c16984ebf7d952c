"""Schedules (seed 000 `schedules`) and their runs (`schedule_runs`), per tenant."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.db.models import Q
from django.utils import timezone as dj_timezone

from accounts.models import Tenant, Workspace
from accounts.querysets import KeyScopedQuerySet

SUMMARY_CHARS = 500


class RunQuerySet(KeyScopedQuerySet):
    workspace_field = "schedule__workspace_id"
    user_field = "schedule__user_id"

    def prune_history(self, schedule_id: Any, *, keep: int, spare: Any = None) -> int:
        """Delete all but the newest `keep` finished runs of a schedule (open runs are never pruned)."""
        newest = self.filter(schedule_id=schedule_id).order_by("-started_at", "-pk").values_list("pk", flat=True)
        old = list(newest[keep:])
        if spare is not None:
            old = [pk for pk in old if pk != spare]
        if not old:
            return 0
        open_states = [RunStatus.QUEUED, RunStatus.RUNNING]
        deleted, _ = self.filter(pk__in=old).exclude(status__in=open_states).delete()
        return deleted


class CadenceType(models.TextChoices):
    CRON = "cron"
    ONCE = "once"
    INTERVAL = "interval"


class ScheduleStatus(models.TextChoices):
    ACTIVE = "active"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"


class NotificationPolicy(models.TextChoices):
    ALWAYS = "always"
    ON_FAILURE = "on_failure"
    ON_SUCCESS = "on_success"
    NEVER = "never"


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Schedule(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="schedules")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, null=True, blank=True,
                                  related_name="schedules")
    user_id = models.CharField(max_length=200, blank=True, default="")
    name = models.CharField(max_length=200)
    goal = models.TextField(blank=True, default="")
    action = models.CharField(max_length=50)
    params = models.JSONField(default=dict, blank=True)
    cadence_type = models.CharField(max_length=10, choices=CadenceType.choices)
    cadence_value = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64, default="UTC")
    notification_policy = models.CharField(max_length=20, choices=NotificationPolicy.choices,
                                           default=NotificationPolicy.ALWAYS)
    channel = models.CharField(max_length=100, blank=True, default="")
    # Seed 000: where in the channel the schedule was made (a thread, a chat), so that its
    # notifications can be routed back there. Opaque to MemoryHub; sent with every notification.
    channel_context_id = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(max_length=10, choices=ScheduleStatus.choices, default=ScheduleStatus.ACTIVE)
    created_at = models.DateTimeField(default=dj_timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_run_status = models.CharField(max_length=10, blank=True, default="")
    consecutive_failures = models.PositiveIntegerField(default=0)

    objects = KeyScopedQuerySet.as_manager()

    def transfer_identity(self) -> dict[str, Any]:
        """How an import with on_conflict skip/merge recognises a stored schedule (names are not
        unique, but a second one of the same name, place and user is what a re-import would make)."""
        return {"workspace_id": self.workspace_id, "user_id": self.user_id, "name": self.name}

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["tenant", "user_id"], name="sched_user"),
            models.Index(fields=["next_run_at"], name="sched_due", condition=Q(status="active")),
            models.Index(fields=["tenant", "user_id", "status"], name="sched_user_status"),
            models.Index(fields=["tenant", "user_id", "name"], name="sched_user_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.action}, {self.cadence_type} {self.cadence_value})"

    def cadence(self):  # type: ignore[no-untyped-def]
        from scheduling.cadence import Cadence

        return Cadence(self.cadence_type, self.cadence_value, self.timezone)


class Run(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="schedule_runs")
    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="runs")
    # The due time the dispatcher claimed this run for (null for "run now").
    due_at = models.DateTimeField(null=True, blank=True)
    manual = models.BooleanField(default=False)
    started_at = models.DateTimeField(default=dj_timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=RunStatus.choices, default=RunStatus.QUEUED)
    error = models.CharField(max_length=100, blank=True, default="")
    output_summary = models.CharField(max_length=SUMMARY_CHARS, blank=True, default="")
    output = models.TextField(blank=True, default="")
    turn_count = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0.0)
    # True once the run's notification was delivered to the tenant's notification webhook
    # (seed 000: "whether the user was notified"); the attempts are in its Delivery.
    notified = models.BooleanField(default=False)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["schedule", "-started_at"], name="run_history"),
            models.Index(fields=["status", "started_at"], name="run_open",
                         condition=Q(status__in=["queued", "running"])),
        ]
        constraints = [
            # Belt and braces for the row locks: one run per due time of a schedule.
            models.UniqueConstraint(fields=["schedule", "due_at"], name="run_once_per_due_time",
                                    condition=Q(due_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.started_at:%Y-%m-%d %H:%M} {self.status}"


class WebhookKind(models.TextChoices):
    AGENT = "agent"  # agent_goal runs POST their goal here and record the reply
    NOTIFICATION = "notification"  # finished runs are announced here, as their policy asks


class Webhook(models.Model):
    """A tenant's endpoint for one kind of call, with the secret its bodies are signed with.

    The secret is stored as given (it must be usable to sign) and shown only when it is made.
    """

    exportable = False  # configuration with a secret: never written into a tenant's export file

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhooks")
    kind = models.CharField(max_length=20, choices=WebhookKind.choices)
    url = models.CharField(max_length=2000)  # checked by webhooks.check_url (http or https only)
    secret = models.CharField(max_length=200)
    description = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        ordering = ["kind", "created_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "kind"], name="webhook_one_per_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} webhook {self.url}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # to be attempted at next_attempt_at
    DELIVERED = "delivered"
    FAILED = "failed"  # every attempt failed
    NO_WEBHOOK = "no_webhook"  # the policy asked for it, but the tenant has no notification webhook


class Delivery(models.Model):
    """The notification of one finished run: what is sent, and how sending it went."""

    exportable = False  # operations data: an imported run was not notified in its new tenant

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="deliveries")
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="delivery")
    webhook = models.ForeignKey(Webhook, on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="deliveries")
    url = models.CharField(max_length=2000, blank=True, default="")  # where the last attempt went
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=12, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField(default=1)
    last_error = models.CharField(max_length=500, blank=True, default="")
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=dj_timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "deliveries"
        indexes = [
            models.Index(fields=["next_attempt_at"], name="delivery_due", condition=Q(status="pending")),
        ]

    def __str__(self) -> str:
        return f"notification of run {self.run_id}: {self.status}"
