"""A session's scratchpad: its working state (docs/memory-model.md#scratchpad)."""

from __future__ import annotations

import json

from django.db import models
from django.utils import timezone

from accounts.models import Tenant


class Scratchpad(models.Model):
    """A session's working state (docs/memory-model.md#scratchpad): at most 32 items, a write
    replaces the whole pad."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.OneToOneField(
        "memoryhub.Session", on_delete=models.CASCADE, related_name="scratchpad"
    )
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
    # Any JSON value (docs/memory-model.md#scratchpad): a string of at most
    # memoryhub.scratchpad.MAX_CHARS characters, or another value whose compact JSON has at most
    # that many (memoryhub.scratchpad checks it). A JSON null is stored as SQL NULL (what Django
    # writes for None).
    value = models.JSONField(blank=True, null=True, default=str)

    class Meta:
        ordering = ["scratchpad_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["scratchpad", "key"], name="scratchpad_item_unique_key"
            ),
            models.UniqueConstraint(
                fields=["scratchpad", "position"], name="scratchpad_item_unique_position"
            ),
        ]

    def before_import_merge(self) -> None:
        """An import merging into a stored scratchpad adds this item after the stored ones."""
        last = ScratchpadItem.objects.filter(scratchpad_id=self.scratchpad_id).aggregate(
            m=models.Max("position")
        )["m"]
        self.position = (last + 1) if last is not None else 0

    def __str__(self) -> str:
        shown = (
            self.value
            if isinstance(self.value, str)
            else json.dumps(self.value, ensure_ascii=False)
        )
        return f"{self.key}: {shown[:60]}"
