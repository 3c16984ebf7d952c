"""Facts: keyed, upserted knowledge about a user or scope (docs/memory-model.md#facts)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone

from accounts.models import Channel, Tenant, Workspace
from accounts.querysets import KeyScopedQuerySet
from memoryhub.models.notes import MAX_TAG_LEN
from memoryhub.models.pinning import PinnableMemory
from memoryhub.searchable import LIFETIME_CHOICES, TIER_CHOICES, Searchable


class Fact(PinnableMemory):
    """A long-term memory entry (docs/memory-model.md#facts). (owner, scope, category, key) is
    unique when a key is set, and (owner, workspace, external_id) when the client chose an id: two
    users' `home_city` are two facts. Its content's past versions are FactVersion rows
    (docs/memory-model.md#fact-history)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    channel = models.ForeignKey(
        Channel, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    # The conversation a conversation-tier fact belongs to (forgotten with it).
    session = models.ForeignKey(
        "memoryhub.Session", on_delete=models.CASCADE, related_name="facts", null=True, blank=True
    )
    # Provenance: the conversation the fact was learnt in (kept, unlinked, when that conversation
    # goes).
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
    # An id of the client's choosing (an upsert by client id), unique per owner and workspace.
    external_id = models.CharField(max_length=200, blank=True, default="")
    tier = models.CharField(max_length=20, choices=TIER_CHOICES, default="workspace")
    lifetime = models.CharField(max_length=20, choices=LIFETIME_CHOICES, default="long_term")
    source = models.CharField(max_length=100, default="agent")
    access_count = models.IntegerField(default=0)
    accessed_at = models.DateTimeField(null=True, blank=True)
    tags = ArrayField(models.CharField(max_length=MAX_TAG_LEN), default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # When the current version's content became true (docs/memory-model.md#fact-history); older
    # versions are FactVersion rows.
    valid_from = models.DateTimeField(null=True, blank=True)

    objects = KeyScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "user_id", "scope_key", "category", "key"],
                condition=~models.Q(key=""),
                name="fact_unique_owner_scope_category_key",
            ),
            # A client id is unique per owner and workspace (an account-wide fact's workspace is
            # NULL, which counts as one value here): the same id in two workspaces is two facts.
            models.UniqueConstraint(
                fields=["tenant", "user_id", "workspace", "external_id"],
                condition=~models.Q(external_id=""),
                nulls_distinct=False,
                name="fact_unique_owner_workspace_external_id",
            ),
            models.CheckConstraint(
                condition=models.Q(importance__gte=0.0, importance__lte=1.0),
                name="fact_importance_range",
            ),
            models.CheckConstraint(
                condition=models.Q(access_count__gte=0), name="fact_access_count_positive"
            ),
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

    def transfer_identity(self) -> dict[str, Any]:
        """How an import with on_conflict skip/merge recognises a stored fact: its owner, scope,
        category and key (the unique constraint), or for a fact without a key the same content
        there."""
        scope = self.compute_scope_key()
        if self.key:
            return {
                "user_id": self.user_id,
                "scope_key": scope,
                "category": self.category,
                "key": self.key,
            }
        return {
            "user_id": self.user_id,
            "scope_key": scope,
            "category": self.category,
            "key": "",
            "content": self.content,
        }

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
            # The chunks are dated by the current version: an agent tells old knowledge from new.
            created_at=self.valid_from or self.created_at,
            version_from=self.valid_from or self.created_at,
            workspace_id=self.workspace_id,
            channel_id=self.channel_id,
            # Only a conversation-tier fact is tied to its session (its chunks go with it);
            # the conversation it was learnt in is provenance, kept in the metadata.
            session_id=self.session_id,
            tier=self.tier,
            lifetime="long_term" if self.pinned else self.lifetime,
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
                **self.pin_metadata(),
            },
        )


class FactVersion(models.Model):
    """One version of a fact's content (docs/memory-model.md#fact-history): valid from `valid_from`
    until `valid_to` (null while current). Kept when the fact is deleted (its `fact_id` then names
    no row), until the owner is forgotten or an operator purges it."""

    CHANGES = [(c, c) for c in ("created", "updated", "merged", "imported", "deleted")]

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # No database constraint and no cascade: a deleted fact's versions stay, naming its old id.
    fact = models.ForeignKey(
        Fact,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="versions",
    )
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="+", null=True, blank=True
    )
    user_id = models.CharField(max_length=200, blank=True, default="")
    tier = models.CharField(max_length=20, choices=TIER_CHOICES, default="workspace")
    category = models.CharField(max_length=100, default="general")
    key = models.CharField(max_length=200, blank=True, default="")
    content = models.TextField()
    source = models.CharField(max_length=100, default="agent", help_text="Who made this version.")
    change = models.CharField(
        max_length=10, choices=CHANGES, default="created", help_text="What opened this version."
    )
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    closed_by = models.CharField(
        max_length=10,
        blank=True,
        default="",
        help_text="What closed it: updated, merged or deleted (empty while current).",
    )

    objects = KeyScopedQuerySet.as_manager()
    # An import adds versions only to a fact it creates, with that fact's owner and workspace
    # (memoryhub.transfer.record_import): never to a stored fact's history.
    transfer_history_of = "fact"

    class Meta:
        ordering = ["fact_id", "valid_from", "id"]
        constraints = [
            # A fact has at most one current version, whatever wrote it (an upsert, a merge, an
            # import whose file names versions): "as of now" has one answer.
            models.UniqueConstraint(
                fields=["fact"],
                condition=models.Q(valid_to__isnull=True, fact__isnull=False),
                name="factversion_one_current",
            ),
        ]
        indexes = [
            models.Index(fields=["tenant", "fact_id", "valid_from"], name="factversion_fact"),
            models.Index(fields=["tenant", "user_id"], name="factversion_owner"),
        ]

    def __str__(self) -> str:
        until = self.valid_to.isoformat() if self.valid_to else "now"
        return f"fact {self.fact_id} ({self.valid_from:%Y-%m-%d} – {until}): {self.content[:60]}"

    def valid_at(self, moment: datetime) -> bool:
        return self.valid_from <= moment and (self.valid_to is None or self.valid_to > moment)
