"""What the memory lifecycle keeps: consolidation reports, deletions awaiting review, compressed
conversations, and an admin view (proxy) over retrieval's chunks as "memories"."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.models import Session
from retrieval.models import Chunk


class ConsolidationReport(models.Model):
    """One real consolidation run: counts per step and the ids it touched (docs/lifecycle.md)."""

    tenant = models.ForeignKey(
        Tenant,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        help_text="Empty: the run covered every tenant.",
    )
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.IntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    ids = models.JSONField(
        default=dict, blank=True, help_text="Ids touched per step (capped per step)."
    )
    deletions = models.JSONField(
        default=list,
        blank=True,
        help_text="What each deletion removed (or would remove, if held), in words.",
    )
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"consolidation {self.pk} at {self.started_at:%Y-%m-%d %H:%M}"

    @classmethod
    def forget_user_text(cls, tenant_id: int, user_id: str) -> dict[str, int]:
        """Forget-user (memoryhub.forget): the user's entries in the deletions of this tenant's
        reports and of the reports over every tenant are redacted."""
        from django.db.models import Q

        from memoryhub.forget import redact_deletions

        tenant_name = (
            Tenant.objects.filter(pk=tenant_id).values_list("name", flat=True).first() or ""
        )
        redacted = 0
        reports = cls.objects.select_for_update().filter(
            Q(tenant_id=tenant_id) | Q(tenant__isnull=True),
            deletions__contains=[{"user_id": user_id}],
        )
        for report in reports:
            report.deletions, count = redact_deletions(
                report.deletions, tenant_name=tenant_name, user_id=user_id
            )
            if count:
                report.save(update_fields=["deletions"])
                redacted += 1
        return {cls._meta.label: redacted}


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
    report = models.ForeignKey(
        ConsolidationReport, on_delete=models.CASCADE, related_name="pending"
    )
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


class ArchivedMemory(models.Model):
    """What a prune, merge or cap deleted, kept so that it can be read and restored.

    A note or fact is kept whole (`row`: its fields); a message's chunk is rebuilt from the event
    log, so its text and place are enough. Restoring re-creates the memory and re-indexes it.
    """

    class Reason(models.TextChoices):
        PRUNE = "prune"
        MERGE = "merge"
        CAP = "cap"
        FORGET = "forget"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=10, choices=Reason.choices)
    kind = models.CharField(max_length=10)
    source_id = models.CharField(max_length=200, blank=True, default="")
    session = models.ForeignKey(
        Session, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    sequence_start = models.BigIntegerField(null=True, blank=True)
    sequence_end = models.BigIntegerField(null=True, blank=True)
    user_id = models.CharField(max_length=200, blank=True, default="")
    text = models.TextField(blank=True, default="")
    row = models.JSONField(
        default=dict, blank=True, help_text="The source row's fields (notes, facts)."
    )
    survivor_text = models.TextField(
        blank=True, default="", help_text="Merge: what it was merged into."
    )
    chunk_id = models.BigIntegerField(
        null=True, blank=True, help_text="The deleted chunk (events)."
    )
    archived_at = models.DateTimeField(default=timezone.now)
    restored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-archived_at", "-id"]
        verbose_name = "archived memory"
        verbose_name_plural = "archived memories"
        indexes = [models.Index(fields=["tenant", "archived_at"], name="archived_tenant_time")]

    def __str__(self) -> str:
        return f"{self.reason}d {self.kind}: {self.text[:60]}"


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
