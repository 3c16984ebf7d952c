"""What the memory lifecycle keeps: consolidation reports, deletions awaiting review, compressed
conversations, and an admin view (proxy) over retrieval's chunks as "memories"."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.models import Session
from retrieval.models import Chunk


class ConsolidationReport(models.Model):
    """One real consolidation run: counts per step and the ids it touched (SPEC S8)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, null=True, blank=True, related_name="+",
                               help_text="Empty: the run covered every tenant.")
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.IntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    ids = models.JSONField(default=dict, blank=True, help_text="Ids touched per step (capped per step).")
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"consolidation {self.pk} at {self.started_at:%Y-%m-%d %H:%M}"


class PendingDeletion(models.Model):
    """A deletion consolidation wanted to make for a tenant that reviews deletions."""

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"

    class Step(models.TextChoices):
        PRUNE = "prune"
        MERGE = "merge"
        CAP = "cap"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    report = models.ForeignKey(ConsolidationReport, on_delete=models.CASCADE, related_name="pending")
    step = models.CharField(max_length=10, choices=Step.choices)
    chunk_ids = models.JSONField(default=list, help_text="Memories (chunks) this deletion removes.")
    # merge: the memory that survives and absorbs the others ({"survivor": id, "importance": …}).
    payload = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=150, blank=True, default="")
    outcome = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "pending review"
        indexes = [models.Index(fields=["tenant", "status"], name="pending_tenant_status")]

    def __str__(self) -> str:
        return f"{self.step} of {len(self.chunk_ids)} memories ({self.status})"


class CompressedConversation(models.Model):
    """A conversation consolidation has compressed into a summary, up to `upper_sequence`."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="+")
    upper_sequence = models.BigIntegerField(default=0)
    summary_ref = models.CharField(max_length=200, blank=True, default="")
    compressed_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.session_id} compressed to #{self.upper_sequence}"


class Memory(Chunk):
    """retrieval.Chunk seen as a memory in the admin (tier, lifetime, decay, bulk actions)."""

    class Meta:
        proxy = True
        verbose_name = "memory"
        verbose_name_plural = "memories"
