"""What the background lanes leave in the tables: who is working (`Worker`, the lane loop's own row,
defined beside it in memoryhub/plumbing/workers.py) and what they set aside."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.models.sessions import Session
from memoryhub.plumbing.workers import Worker

__all__ = ["StepFailure", "Worker"]


class StepFailure(models.Model):
    """A background step that failed on one session. After memoryhub.session_work.MAX_ATTEMPTS
    failures in a row the session is set aside for that step (skipped, so it cannot stall the
    lane) until an operator retries it in the admin; a success removes the row."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    step = models.CharField(max_length=30, help_text="session (summaries, summary tree, facts)")
    attempts = models.IntegerField(default=0)
    error = models.TextField(blank=True, default="")
    failed_at = models.DateTimeField(default=timezone.now)
    set_aside = models.BooleanField(default=False)

    exportable = False  # operations data, not memory

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "step"], name="step_failure_unique")
        ]
        indexes = [models.Index(fields=["set_aside", "failed_at"], name="step_failure_aside")]

    def __str__(self) -> str:
        return f"{self.step} of session {self.session_id}: {self.error[:60]}"
