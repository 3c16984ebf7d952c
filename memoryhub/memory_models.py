"""Notes, facts, scratchpads and the summary tree (S5, S6). Imported by memoryhub.models.

Every row carries its tenant (no data crosses tenants) and, where a user owns it, a plain
`user_id` string: forget-user (memoryhub.lifecycle.forget) deletes by it. Rows tied to one
conversation point at its Session with CASCADE, so forgetting a session removes them too.
Searchable rows (notes, facts, summary nodes) describe themselves with `as_searchable()`.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone

from accounts.models import Channel, Tenant, Workspace
from memoryhub.searchable import LIFETIMES, TIERS, Searchable

__all__ = [
    "Fact",
    "LIFETIME_CHOICES",
    "Note",
    "SUMMARY_LEVELS",
    "Scratchpad",
    "ScratchpadItem",
    "SummaryNode",
    "TIER_CHOICES",
    "new_note_id",
]

TIER_CHOICES = [(t, t) for t in TIERS]
LIFETIME_CHOICES = [(lt, lt) for lt in LIFETIMES]
SUMMARY_LEVELS = ("leaf", "branch", "root")

MAX_TAGS = 16
MAX_TAG_LEN = 64


def new_note_id() -> str:
    return f"note-{uuid.uuid4()}"


class Note(models.Model):
    """A note an agent keeps explicitly (seed 000): identified by `note_id`, replaced whole on update."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    session = models.ForeignKey(
        "memoryhub.Session", on_delete=models.CASCADE, related_name="notes", null=True, blank=True
    )
    note_id = models.CharField(max_length=200, default=new_note_id, help_text="note-<uuid> when not given.")
    user_id = models.CharField(max_length=200, blank=True, default="")
    content = models.TextField()
    source = models.CharField(max_length=100, blank=True, default="")
    tags = ArrayField(models.CharField(max_length=MAX_TAG_LEN), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    tier = models.CharField(max_length=20, choices=TIER_CHOICES, default="workspace")
    importance = models.FloatField(default=0.5)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "note_id"], name="note_unique_note_id"),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0.0, importance__lte=1.0), name="note_importance_range"
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
            metadata={"note_id": self.note_id, "source": self.source, **(self.metadata or {})},
        )


class Fact(models.Model):
    """A long-term memory entry (S5; seeds 001, 003, 004). (scope, category, key) is unique when a key is set."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    # The conversation a conversation-tier fact belongs to (forgotten with it).
    session = models.ForeignKey(
        "memoryhub.Session", on_delete=models.CASCADE, related_name="facts", null=True, blank=True
    )
    # Provenance: the conversation the fact was learnt in (kept, unlinked, when that conversation goes).
    source_session = models.ForeignKey(
        "memoryhub.Session", on_delete=models.SET_NULL, related_name="+", null=True, blank=True
    )
    # "account", "workspace:<id>", "channel:<id>" or "conversation:<session pk>": the scope the
    # upsert key is unique in (one column, so that NULL foreign keys never defeat uniqueness).
    scope_key = models.CharField(max_length=100, editable=False)
    user_id = models.CharField(max_length=200, blank=True, default="")
    content = models.TextField()
    category = models.CharField(max_length=100, default="general")
    key = models.CharField(max_length=200, blank=True, default="")
    tier = models.CharField(max_length=20, choices=TIER_CHOICES, default="workspace")
    lifetime = models.CharField(max_length=20, choices=LIFETIME_CHOICES, default="long_term")
    source = models.CharField(max_length=100, default="agent")
    importance = models.FloatField(default=0.5)
    access_count = models.IntegerField(default=0)
    accessed_at = models.DateTimeField(null=True, blank=True)
    tags = ArrayField(models.CharField(max_length=MAX_TAG_LEN), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "scope_key", "category", "key"],
                condition=~models.Q(key=""),
                name="fact_unique_scope_category_key",
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0.0, importance__lte=1.0), name="fact_importance_range"
            ),
            models.CheckConstraint(condition=models.Q(access_count__gte=0), name="fact_access_count_positive"),
        ]
        indexes = [
            models.Index(fields=["tenant", "-updated_at"], name="fact_tenant_updated"),
            models.Index(fields=["tenant", "user_id"], name="fact_tenant_user"),
            models.Index(fields=["tenant", "category", "key"], name="fact_tenant_category_key"),
            models.Index(fields=["tenant", "tier", "lifetime"], name="fact_tenant_tier_lifetime"),
            GinIndex(fields=["tags"], name="fact_tags"),
            GinIndex(fields=["metadata"], name="fact_metadata"),
        ]

    def __str__(self) -> str:
        label = f"{self.category}/{self.key}" if self.key else self.category
        return f"{label}: {self.content[:60]}"

    def compute_scope_key(self) -> str:
        if self.tier == "conversation":
            return f"conversation:{self.session_id}"
        if self.tier == "channel":
            return f"channel:{self.channel_id}"
        if self.tier == "workspace":
            return f"workspace:{self.workspace_id}"
        return "account"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.scope_key = self.compute_scope_key()
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "scope_key" not in update_fields:
            kwargs["update_fields"] = [*update_fields, "scope_key"]
        super().save(*args, **kwargs)

    def as_searchable(self) -> Searchable:
        return Searchable(
            kind="fact",
            source_id=str(self.pk),
            tenant_id=self.tenant_id,
            text=self.content,
            created_at=self.created_at,
            workspace_id=self.workspace_id,
            channel_id=self.channel_id,
            # Only a conversation-tier fact is tied to its session (its chunks go with it);
            # the conversation it was learnt in is provenance, kept in the metadata.
            session_id=self.session_id,
            tier=self.tier,
            lifetime=self.lifetime,
            importance=self.importance,
            tags=tuple(self.tags),
            user_id=self.user_id,
            metadata={
                "fact_id": self.pk,
                "category": self.category,
                "key": self.key,
                "source": self.source,
                "source_session_id": self.source_session_id,
                **(self.metadata or {}),
            },
        )


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


class SummaryNode(models.Model):
    """A node of a session's summary tree (S6, seed 002).

    A leaf condenses a contiguous run of events (its sources: the session's events with sequence
    in [sequence_start, sequence_end]); a branch condenses leaves, the root condenses branches.
    Children point at their parent, so a node expands to `children` and, through its span, to
    the source events.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    session = models.ForeignKey("memoryhub.Session", on_delete=models.CASCADE, related_name="summary_nodes")
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, related_name="children", null=True, blank=True
    )
    user_id = models.CharField(max_length=200, blank=True, default="")
    level = models.CharField(max_length=10, choices=[(lv, lv) for lv in SUMMARY_LEVELS])
    depth = models.IntegerField(default=0, help_text="0 for leaves, +1 per level above.")
    text = models.TextField()
    sequence_start = models.BigIntegerField()
    sequence_end = models.BigIntegerField()
    source_count = models.IntegerField(default=0, help_text="Events (leaf) or child nodes (branch, root).")
    token_count = models.IntegerField(default=0)
    summariser = models.CharField(max_length=100, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session_id", "depth", "sequence_start"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(sequence_end__gte=models.F("sequence_start")), name="summary_node_span"
            ),
        ]
        indexes = [
            models.Index(fields=["session", "level", "sequence_start"], name="summary_node_session_level"),
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
            created_at=self.created_at,
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


# --- background work after appends (S6 trigger, S5 extraction) ---------------------------------


def _on_events_appended(sender: Any, session: Any, events: list[Any], **kwargs: Any) -> None:
    from django.conf import settings

    from memoryhub.tasks import enqueue_on_commit

    if settings.MEMORYHUB_AUTO_SUMMARISE and session.event_count >= settings.MEMORYHUB_SUMMARY_MIN_MESSAGES:
        enqueue_on_commit("memoryhub.memory_tasks.summarise_session", session.pk)
    if settings.MEMORYHUB_FACT_EXTRACTOR != "none" and events:
        enqueue_on_commit("memoryhub.memory_tasks.extract_facts", session.pk, [e.pk for e in events])


def _connect() -> None:
    from memoryhub.signals import events_appended

    events_appended.connect(_on_events_appended, dispatch_uid="memoryhub.memory_after_append")


_connect()
