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
    status = models.CharField(max_length=10, choices=ScheduleStatus.choices, default=ScheduleStatus.ACTIVE)
    created_at = models.DateTimeField(default=dj_timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    next_run_at = models.DateTimeField(null=True, blank=True)
    last_run_at = models.DateTimeField(null=True, blank=True)
    last_run_status = models.CharField(max_length=10, blank=True, default="")
    consecutive_failures = models.PositiveIntegerField(default=0)

    objects = KeyScopedQuerySet.as_manager()

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
        return f"{self.schedule_id} @ {self.started_at:%Y-%m-%d %H:%M:%S} {self.status}"
