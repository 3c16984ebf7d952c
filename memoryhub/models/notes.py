"""Notes an agent keeps explicitly (docs/memory-model.md#notes)."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone

from accounts.models import Channel, Tenant, Workspace
from accounts.querysets import KeyScopedQuerySet
from memoryhub.models.pinning import PinnableMemory
from memoryhub.searchable import TIER_CHOICES, Searchable

MAX_TAG_LEN = 64  # the tag column's width


def new_note_id() -> str:
    return f"note-{uuid.uuid4()}"


class Note(PinnableMemory):
    """A note an agent keeps explicitly (docs/memory-model.md#notes): identified by `note_id`,
    replaced whole on update."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    session = models.ForeignKey(
        "memoryhub.Session", on_delete=models.CASCADE, related_name="notes", null=True, blank=True
    )
    note_id = models.CharField(
        max_length=200, default=new_note_id, help_text="note-<uuid> when not given."
    )
    user_id = models.CharField(max_length=200, blank=True, default="")
    content = models.TextField()
    source = models.CharField(max_length=100, blank=True, default="")
    tags = ArrayField(models.CharField(max_length=MAX_TAG_LEN), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    tier = models.CharField(max_length=20, choices=TIER_CHOICES, default="workspace")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = KeyScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "note_id"], name="note_unique_note_id"),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0.0, importance__lte=1.0),
                name="note_importance_range",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "-updated_at"], name="note_tenant_updated"),
            models.Index(fields=["tenant", "user_id"], name="note_tenant_user"),
            GinIndex(fields=["tags"], name="note_tags"),
        ]

    def __str__(self) -> str:
        return self.note_id

    def as_searchable(self) -> Searchable:
        return Searchable(
            kind="note",
            source_id=self.note_id,
            tenant_id=self.tenant_id,
            text=self.content,
            created_at=self.created_at,
            workspace_id=self.workspace_id,
            channel_id=self.channel_id,
            session_id=self.session_id,
            tier=self.tier,
            lifetime="long_term",
            importance=self.importance,
            tags=tuple(self.tags),
            user_id=self.user_id,
            metadata={
                "note_id": self.note_id,
                "source": self.source,
                **(self.metadata or {}),
                **self.pin_metadata(),
            },
        )
