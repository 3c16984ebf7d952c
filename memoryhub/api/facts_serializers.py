"""Facts' serializers (docs/memory-model.md#facts): what a store or a change may carry, a fact and
one of its versions as the API answers them, the list's filters."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memoryhub import facts
from memoryhub.api.common import StrictSerializer
from memoryhub.api.fields import (
    StrictCharField,
    content_field,
    non_blank,
)
from memoryhub.api.placement import (
    TIER_FALLBACK,
    channel_field,
    metadata_field,
    scope_field,
    session_field,
    tags_field,
    user_field,
    workspace_field,
)
from memoryhub.models import (
    Fact,
    iso,
)
from memoryhub.searchable import LIFETIMES


class FactInput(StrictSerializer):
    content = content_field(
        allow_blank=True, help_text="The fact as a short statement, e.g. 'Prefers aisle seats.'"
    )
    category = StrictCharField(
        max_length=100,
        required=False,
        default="general",
        help_text="A grouping of facts (e.g. travel, profile, preferences).",
    )
    key = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="With category, what the fact is about (e.g. seat): a fact with the same "
        "scope, category and key is updated (200) instead of duplicated.",
    )
    scope = scope_field(
        "place", fallback=TIER_FALLBACK, required=False, allow_null=True, default=None
    )
    lifetime = serializers.ChoiceField(
        choices=LIFETIMES,
        required=False,
        default="long_term",
        help_text="long_term; short_term facts decay faster in ranking; "
        "conversation facts end with their session.",
    )
    source = StrictCharField(
        max_length=100,
        required=False,
        default="agent",
        help_text="Who stated it (agent, user, extractor, …).",
    )
    importance = serializers.FloatField(
        required=False,
        min_value=0.0,
        max_value=1.0,
        default=None,
        help_text="0–1: weight in recall; 0.85 and above is always recalled. "
        "When not given: by type: correction 0.9, "
        "preference 0.8, fact 0.6, task 0.5, otherwise 0.5; the type "
        "is the fact's category, or a note's tag.",
    )
    tags = tags_field("place", required=False, default=list)
    metadata = metadata_field("place", required=False, default=dict)
    session = session_field("place", required=False, allow_null=True, default=None)
    source_session = StrictCharField(
        max_length=200,
        required=False,
        allow_null=True,
        default=None,
        help_text="The session it was learnt in (provenance only).",
    )
    workspace = workspace_field("place", required=False, allow_null=True, default=None)
    channel = channel_field("place", required=False, allow_null=True, default=None)
    user_id = user_field(
        "place",
        fallback="the session's end user, else none: shared knowledge",
        required=False,
        allow_blank=True,
        default="",
    )
    external_id = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="An id of your choosing, unique per end user and workspace: "
        "writing it again in the same workspace updates that fact "
        "(whatever its key); in another workspace it is another fact.",
    )

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactPatchInput(StrictSerializer):
    content = content_field(required=False, allow_blank=True, help_text="A new statement.")
    category = StrictCharField(max_length=100, required=False, help_text="A new category.")
    key = StrictCharField(max_length=200, required=False, allow_blank=True, help_text="A new key.")
    lifetime = serializers.ChoiceField(
        choices=LIFETIMES, required=False, help_text="A new lifetime."
    )
    source = StrictCharField(max_length=100, required=False, help_text="A new source.")
    importance = serializers.FloatField(
        required=False, min_value=0.0, max_value=1.0, help_text="A new importance."
    )
    tags = tags_field("change", required=False)
    metadata = metadata_field("change", required=False)
    user_id = user_field("change", required=False, allow_blank=True)
    external_id = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text="A new client-chosen id (empty: none).",
    )

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactOutput(serializers.ModelSerializer):
    scope = scope_field("show", source="tier")
    access_count = serializers.SerializerMethodField(help_text="How often it was read or recalled.")
    accessed_at = serializers.SerializerMethodField(help_text="When it was last read or recalled.")
    session = session_field("show", source="session.external_id", allow_null=True, default=None)
    source_session = serializers.CharField(
        source="source_session.external_id",
        allow_null=True,
        default=None,
        help_text="The session it was learnt in, if known.",
    )
    workspace = workspace_field("show", source="workspace.name", allow_null=True, default=None)
    channel = channel_field("show", source="channel.name", allow_null=True, default=None)
    tags = tags_field("show")
    valid_to = serializers.SerializerMethodField(
        help_text="Until when this content was the fact's: null for "
        "the current version (set only in lists `as_of`)."
    )

    class Meta:
        model = Fact
        fields = [
            "id",
            "external_id",
            "content",
            "category",
            "key",
            "scope",
            "lifetime",
            "source",
            "importance",
            "pinned",
            "access_count",
            "accessed_at",
            "tags",
            "metadata",
            "session",
            "source_session",
            "workspace",
            "channel",
            "user_id",
            "created_at",
            "updated_at",
            "valid_from",
            "valid_to",
        ]
        extra_kwargs = {
            "id": {"help_text": "The fact's id."},
            "external_id": {"help_text": "Your id for it, if you gave one."},
            "valid_from": {
                "help_text": "Since when this content is the fact's (its current version began)."
            },
            "content": {"help_text": "The statement."},
            "category": {"help_text": "Its category."},
            "key": {"help_text": "Its key within the category (empty: none)."},
            "lifetime": {"help_text": "long_term, short_term or conversation."},
            "source": {"help_text": "Who stated it."},
            "importance": {"help_text": "0–1: weight in recall."},
            "pinned": {
                "help_text": "Pinned by an operator: importance 1, never pruned, merged or capped."
            },
            "metadata": {"help_text": metadata_field("show").help_text},
            "user_id": {"help_text": user_field("show").help_text},
            "created_at": {"help_text": "When it was first stored."},
            "updated_at": {"help_text": "When it last changed."},
        }

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_valid_to(self, fact: Fact) -> str | None:
        valid_to = getattr(fact, "version_valid_to", None)
        return iso(valid_to) if valid_to is not None else None

    def get_access_count(self, fact: Fact) -> int:
        return facts.uses(fact)

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_accessed_at(self, fact: Fact) -> str | None:
        at = facts.last_used(fact)
        return iso(at) if at is not None else None


class FactUpserted(FactOutput):
    created = serializers.SerializerMethodField(
        help_text="True when a new fact was stored, false when the fact "
        "with this scope, category and key was updated."
    )

    class Meta(FactOutput.Meta):
        fields = [*FactOutput.Meta.fields, "created"]

    def get_created(self, fact: Fact) -> bool:
        return bool(self.context.get("created"))


class FactListParams(serializers.Serializer):
    scope = scope_field("filter", of="facts", required=False)
    category = serializers.CharField(required=False, help_text="Only facts of this category.")
    key = serializers.CharField(required=False, help_text="Only facts with this key.")
    lifetime = serializers.ChoiceField(
        choices=LIFETIMES, required=False, help_text="Only facts of this lifetime."
    )
    source = serializers.CharField(required=False, help_text="Only facts of this source.")
    tags = tags_field("filter", of="facts", required=False)
    q = serializers.CharField(required=False, help_text="Text in the content, key or category.")
    session = session_field(
        "filter", of="facts", note="Facts learnt in it are included.", required=False
    )
    workspace = workspace_field("filter", of="facts", required=False)
    channel = channel_field("filter", of="facts", required=False)
    user_id = user_field("filter", of="facts", required=False)
    external_id = serializers.CharField(
        required=False, help_text="Only facts with this client-chosen id."
    )
    as_of = serializers.DateTimeField(
        required=False,
        help_text="The facts as they stood at this moment (ISO "
        "8601): each with the version true then.",
    )


class FactVersionOutput(serializers.Serializer):
    fact_id = serializers.IntegerField(help_text="The fact this is a version of.")
    content = serializers.CharField(help_text="What the fact said.")
    category = serializers.CharField(help_text="Its category then.")
    key = serializers.CharField(help_text="Its key then.")
    user_id = user_field("show")
    source = serializers.CharField(
        help_text="Who made this version (agent, user, extractor, consolidation, …)."
    )
    change = serializers.CharField(
        help_text="What opened it: created, updated, merged or imported."
    )
    valid_from = serializers.DateTimeField(help_text="Since when it was true.")
    valid_to = serializers.DateTimeField(
        allow_null=True, help_text="Until when (null: it is the current version)."
    )
    closed_by = serializers.CharField(
        help_text="What closed it: updated, merged, deleted (empty while current)."
    )
    current = serializers.SerializerMethodField(
        help_text="Whether this is the fact's current version."
    )

    def get_current(self, version: Any) -> bool:
        return version.valid_to is None
