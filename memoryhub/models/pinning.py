"""What notes and facts share: an importance an operator can pin and unpin."""

from __future__ import annotations

from django.db import models


class PinnableMemory(models.Model):
    importance = models.FloatField(default=0.5)
    # Pinned by an operator: importance 1 and never pruned, merged or capped; the importance it had
    # is kept so that unpinning gives it back. Its chunks carry both (they are re-derived from
    # here).
    pinned = models.BooleanField(default=False)
    importance_before_pin = models.FloatField(null=True, blank=True, editable=False)

    class Meta:
        abstract = True

    def pin_metadata(self) -> dict[str, bool]:
        return {"pinned": True} if self.pinned else {}
