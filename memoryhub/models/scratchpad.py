"""A session's scratchpad: its working state (S5)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Tenant


class Scratchpad(models.Model):
    """A session's working state (S5): at most 32 items, a write replaces the whole pad."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.OneToOneField("memoryhub.Session", on_delete=models.CASCADE, related_name="scratchpad")
    version = models.IntegerField(default=0, help_text="Bumped by every write and clear.")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "scratchpad"

    def __str__(self) -> str:
        return f"scratchpad of {self.session_id}"


class ScratchpadItem(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    scratchpad = models.ForeignKey(Scratchpad, on_delete=models.CASCADE, related_name="items")
    position = models.IntegerField()
    key = models.CharField(max_length=240)
    value = models.CharField(max_length=240, blank=True, default="")

    class Meta:
        ordering = ["scratchpad_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["scratchpad", "key"], name="scratchpad_item_unique_key"),
            models.UniqueConstraint(fields=["scratchpad", "position"], name="scratchpad_item_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.key}: {self.value[:60]}"
