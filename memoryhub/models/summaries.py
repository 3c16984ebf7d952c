"""The rolling summary of a session and its summary tree (docs/event-log.md#summaries)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from accounts.models import Channel, Tenant, Workspace
from accounts.querysets import SessionScopedQuerySet
from memoryhub.models.sessions import Session
from memoryhub.searchable import Searchable


class RollingSummary(models.Model):
    """The rolling summary of a session (docs/event-log.md#summaries): compare-and-swap on epoch."""

    session = models.OneToOneField(
        Session, on_delete=models.CASCADE, related_name="rolling_summary"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    text = models.TextField(blank=True, default="")
    epoch = models.IntegerField(default=0)
    upper_sequence = models.BigIntegerField(
        default=0, help_text="Last event sequence the summary covers."
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "rolling summaries"

    def __str__(self) -> str:
        return f"summary of {self.session_id} (epoch {self.epoch})"


SUMMARY_LEVELS = ("leaf", "branch", "root")


class SummaryNodeQuerySet(SessionScopedQuerySet):
    user_field = "user_id"  # a node keeps its session's user


class SummaryNode(models.Model):
    """A node of a session's summary tree (docs/event-log.md#summaries).

    A leaf condenses a contiguous run of events (its sources: the session's events with sequence
    in [sequence_start, sequence_end]); a branch condenses leaves, the root condenses branches.
    Children point at their parent, so a node expands to `children` and, through its span, to
    the source events.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    session = models.ForeignKey(
        "memoryhub.Session", on_delete=models.CASCADE, related_name="summary_nodes"
    )
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, related_name="children", null=True, blank=True
    )
    user_id = models.CharField(max_length=200, blank=True, default="")
    level = models.CharField(max_length=10, choices=[(lv, lv) for lv in SUMMARY_LEVELS])
    depth = models.IntegerField(default=0, help_text="0 for leaves, +1 per level above.")
    text = models.TextField()
    sequence_start = models.BigIntegerField()
    sequence_end = models.BigIntegerField()
    source_count = models.IntegerField(
        default=0, help_text="Events (leaf) or child nodes (branch, root)."
    )
    token_count = models.IntegerField(default=0)
    summariser = models.CharField(max_length=100, blank=True, default="")
    model = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text='The model that wrote it: "extractive", or the HTTP summariser\'s model.',
    )
    earliest_at = models.DateTimeField(
        null=True, blank=True, help_text="Time of the first event covered."
    )
    latest_at = models.DateTimeField(
        null=True, blank=True, help_text="Time of the last event covered."
    )
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = SummaryNodeQuerySet.as_manager()
    # An import merging into a stored session keeps that session's own tree (derived from its
    # events; the summariser goes on from the appended ones) instead of adding the file's.
    transfer_keep_stored_for_session = True

    class Meta:
        ordering = ["session_id", "depth", "sequence_start"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(sequence_end__gte=models.F("sequence_start")),
                name="summary_node_span",
            ),
        ]
        indexes = [
            models.Index(
                fields=["session", "level", "sequence_start"], name="summary_node_session_level"
            ),
            models.Index(fields=["tenant", "-created_at"], name="summary_node_tenant_created"),
            models.Index(fields=["tenant", "user_id"], name="summary_node_tenant_user"),
        ]

    def __str__(self) -> str:
        return f"{self.level} {self.session_id}#{self.sequence_start}-{self.sequence_end}"

    def as_searchable(self) -> Searchable:
        return Searchable(
            kind="summary",
            source_id=str(self.pk),
            tenant_id=self.tenant_id,
            text=self.text,
            # Dated by what it summarises (its last event), not by the summariser's run: a context
            # block shows a memory's own date, and a date the query names finds the summary of then.
            created_at=self.latest_at or self.created_at,
            workspace_id=self.workspace_id,
            channel_id=self.channel_id,
            session_id=self.session_id,
            tier="conversation",
            lifetime="long_term",
            importance=0.5,
            user_id=self.user_id,
            sequence_start=self.sequence_start,
            sequence_end=self.sequence_end,
            metadata={"summary_id": self.pk, "level": self.level, "depth": self.depth},
        )
