"""`Worker`: the heartbeat row of a running lane, written by the lane loop (background.py).

A model of the memoryhub app kept here, beside the loop that writes it, so that plumbing never
imports the domain's models; `memoryhub.models` re-exports it for the admin and the migrations.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class Worker(models.Model):
    """One running lane of `manage.py work` (a thread on some machine), as it last reported itself.

    `rate` is what the lane achieves while it has work (items per busy second, smoothed): the
    backlog's ETA divides by the sum of the live workers' rates.
    """

    lane = models.CharField(max_length=30)
    name = models.CharField(max_length=200, help_text="host:pid")
    started_at = models.DateTimeField(default=timezone.now)
    seen_at = models.DateTimeField(default=timezone.now)
    done = models.BigIntegerField(default=0, help_text="Items done since the worker started.")
    failed = models.BigIntegerField(
        default=0, help_text="Items that failed since the worker started."
    )
    rate = models.FloatField(default=0.0, help_text="Items per busy second, smoothed.")
    busy = models.BooleanField(default=False, help_text="Whether its last step found work.")
    model_share = models.FloatField(
        null=True,
        blank=True,
        help_text=(
            "Share of its busy time spent inside the model (embed lane): its throughput against the"
            " model's own rate on the same texts, measured side by side."
        ),
    )
    empty_steps = models.BigIntegerField(
        default=0,
        help_text="Steps that found nothing while work the lane can do waited (a bug it reports).",
    )

    exportable = False  # operations data, not memory

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lane", "name"], name="worker_unique_lane_name")
        ]

    def __str__(self) -> str:
        return f"{self.lane} on {self.name}"
