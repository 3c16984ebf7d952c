"""Schedules (docs/lanes-and-schedules.md#schedules) and their runs (`schedule_runs`), per
tenant."""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone as dj_timezone

from accounts.models import ApiKey, Tenant, Workspace
from accounts.querysets import KeyScopedQuerySet

SUMMARY_CHARS = 500


class ScheduleQuerySet(KeyScopedQuerySet):
    """A key sees a schedule when it sees the row (tenant, workspace, owner) AND the schedule acts
    within the key's limits: a workspace-limited key only schedules that act in its workspace, a
    user-limited key only schedules that act as its user (not shared ones, not tenant-wide
    maintenance), so that no run output shows more than the key may read."""

    def visible_to(self, key: ApiKey) -> ScheduleQuerySet:
        return (
            super()
            .visible_to(key)
            .acting_within(workspace_id=key.workspace_id, user_id=key.user_id)
        )

    def acting_within(self, *, workspace_id: int | None, user_id: str) -> ScheduleQuerySet:
        """Schedules whose authority lies within these limits (None / "": no limit)."""
        qs = self
        if workspace_id is not None:
            qs = qs.filter(authority_workspace_id=workspace_id)
        if user_id:
            qs = qs.filter(authority_user_id=user_id)
        return qs

    def within_export(self, *, workspace_id: int | None, user_id: str) -> ScheduleQuerySet:
        """A workspace's or a user's export (memoryhub.transfer) carries the schedules acting
        there."""
        return self.acting_within(workspace_id=workspace_id, user_id=user_id)

    def within_authority(self, authority: ApiKey) -> ScheduleQuerySet:
        """The schedules an authority may change: its tenant, its workspace, its user's own rows
        (a user-limited authority changes no shared row)."""
        qs = self.filter(tenant_id=authority.tenant_id)
        if authority.workspace_id is not None:
            qs = qs.filter(workspace_id=authority.workspace_id)
        if authority.user_id:
            qs = qs.filter(user_id=authority.user_id)
        return qs


class RunQuerySet(KeyScopedQuerySet):
    workspace_field = "schedule__workspace_id"
    user_field = "schedule__user_id"

    def visible_to(self, key: ApiKey) -> RunQuerySet:
        """The runs of the schedules the key sees (ScheduleQuerySet.visible_to: one rule for
        both)."""
        return self.filter(
            tenant_id=key.tenant_id, schedule__in=Schedule.objects.visible_to(key).values("pk")
        )

    def within_export(self, *, workspace_id: int | None, user_id: str) -> RunQuerySet:
        """The runs of the schedules a workspace's or a user's export carries: their outputs say
        what their schedule's authority read."""
        return self.filter(
            schedule__in=Schedule.objects.acting_within(
                workspace_id=workspace_id, user_id=user_id
            ).values("pk")
        )

    def prune_history(self, schedule_id: Any, *, keep: int, spare: Any = None) -> int:
        """Delete all but the newest `keep` finished runs of a schedule (open runs are never
        pruned)."""
        newest = (
            self.filter(schedule_id=schedule_id)
            .order_by("-started_at", "-pk")
            .values_list("pk", flat=True)
        )
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
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, null=True, blank=True, related_name="schedules"
    )
    user_id = models.CharField(max_length=200, blank=True, default="")
    name = models.CharField(max_length=200)
    goal = models.TextField(blank=True, default="")
    action = models.CharField(max_length=50)
    params = models.JSONField(default=dict, blank=True)
    cadence_type = models.CharField(max_length=10, choices=CadenceType.choices)
    cadence_value = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64, default="UTC")
    notification_policy = models.CharField(
        max_length=20, choices=NotificationPolicy.choices, default=NotificationPolicy.ALWAYS
    )
    channel = models.CharField(max_length=100, blank=True, default="")
    # where in the channel the schedule was made (a thread, a chat), so that its
    # notifications can be routed back there. Opaque to MemoryHub; sent with every notification.
    channel_context_id = models.CharField(max_length=200, blank=True, default="")
    status = models.CharField(
        max_length=10, choices=ScheduleStatus.choices, default=ScheduleStatus.ACTIVE
    )
    created_at = models.DateTimeField(default=dj_timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_run_status = models.CharField(max_length=10, blank=True, default="")
    consecutive_failures = models.PositiveIntegerField(default=0)
    # The authority its runs act with (scheduling.authority): the key that created it or last
    # changed it, its limits as they applied to this schedule, and its scopes. Not exported: an
    # imported schedule takes the importing key's. No scopes at all: no authority, runs refuse.
    authority_key = models.ForeignKey(
        ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    authority_key_prefix = models.CharField(
        max_length=32,
        blank=True,
        default="",
        editable=False,
        help_text="The key's prefix; empty: no key (the operator).",
    )
    authority_workspace = models.ForeignKey(
        Workspace,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        editable=False,
        help_text="Empty: every workspace of the tenant.",
    )
    authority_user_id = models.CharField(
        max_length=200,
        blank=True,
        default="",
        editable=False,
        help_text="Empty: every user of the tenant.",
    )
    authority_scopes = ArrayField(
        models.CharField(max_length=10), default=list, blank=True, editable=False
    )

    objects = ScheduleQuerySet.as_manager()

    def transfer_identity(self) -> dict[str, Any]:
        """How an import with on_conflict skip/merge recognises a stored schedule (names are not
        unique, but a second one of the same name, place and user is what a re-import would
        make)."""
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
    # (the user was told); the attempts are in its Delivery.
    notified = models.BooleanField(default=False)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["schedule", "-started_at"], name="run_history"),
            models.Index(
                fields=["status", "started_at"],
                name="run_open",
                condition=Q(status__in=["queued", "running"]),
            ),
        ]
        constraints = [
            # Belt and braces for the row locks: one run per due time of a schedule.
            models.UniqueConstraint(
                fields=["schedule", "due_at"],
                name="run_once_per_due_time",
                condition=Q(due_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.schedule_id} @ {self.started_at:%Y-%m-%d %H:%M} {self.status}"

    @classmethod
    def forget_user_text(cls, tenant_id: int, user_id: str) -> dict[str, int]:
        """Forget-user (memoryhub.forget): a consolidation run's output lists what it deleted, in
        words, with each owner; the user's entries are redacted there, in the summary and in the
        run's notification. (Their own schedules' runs are deleted with the schedules.)"""
        import json

        from memoryhub.forget import redact_deletions

        tenant_name = (
            Tenant.objects.filter(pk=tenant_id).values_list("name", flat=True).first() or ""
        )
        runs = deliveries = 0
        needle = f'"user_id": {json.dumps(user_id)}'  # how ActionResult.text() writes it
        for run in cls.objects.select_for_update().filter(
            tenant_id=tenant_id, output__contains=needle
        ):
            try:
                output = json.loads(run.output)
            except ValueError:
                continue
            if not isinstance(output, dict):
                continue
            output["deletions"], count = redact_deletions(
                output.get("deletions"), tenant_name=tenant_name, user_id=user_id
            )
            if not count:
                continue
            run.output = json.dumps(output, default=str, sort_keys=True)
            run.output_summary = run.output[:SUMMARY_CHARS]
            run.save(update_fields=["output", "output_summary"])
            runs += 1
            delivery = Delivery.objects.select_for_update().filter(run=run).first()
            if delivery is not None and isinstance(delivery.payload.get("run"), dict):
                delivery.payload["run"]["output_summary"] = run.output_summary
                delivery.save(update_fields=["payload"])
                deliveries += 1
        return {cls._meta.label: runs, Delivery._meta.label: deliveries}


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
    webhook = models.ForeignKey(
        Webhook, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries"
    )
    url = models.CharField(max_length=2000, blank=True, default="")  # where the last attempt went
    payload = models.JSONField(default=dict)
    status = models.CharField(
        max_length=12, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
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
            models.Index(
                fields=["next_attempt_at"], name="delivery_due", condition=Q(status="pending")
            ),
        ]

    def __str__(self) -> str:
        return f"notification of run {self.run_id}: {self.status}"
