"""Input validation and output shapes of notes, facts, scratchpads and summaries (S5, S6, S11)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memoryhub.api import StrictSerializer
from memoryhub.models import Fact, Note, SummaryNode, iso
from memoryhub.searchable import LIFETIMES, TIERS
from memoryhub.serializers import ID_REGEX, MetadataField, StrictCharField, StrictRegexField

NOTE_ID_REGEX = ID_REGEX


def normalise_tags(value: Any) -> list[str]:
    """Trimmed, lowercased, de-duplicated (first occurrence kept); too many or too long → error."""
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list):
        raise serializers.ValidationError("Tags must be a list of strings.", code="invalid_tags")
    seen: list[str] = []
    for tag in value:
        if not isinstance(tag, str):
            raise serializers.ValidationError("Every tag must be a string.", code="invalid_tags")
        tag = tag.strip().lower()
        if not tag:
            continue
        if len(tag) > settings.MEMORYHUB_MAX_TAG_CHARS:
            raise serializers.ValidationError(
                f"A tag has at most {settings.MEMORYHUB_MAX_TAG_CHARS} characters.", code="tag_too_long"
            )
        if tag not in seen:
            seen.append(tag)
    if len(seen) > settings.MEMORYHUB_MAX_TAGS:
        raise serializers.ValidationError(f"At most {settings.MEMORYHUB_MAX_TAGS} tags.", code="too_many_tags")
    return seen


@extend_schema_field({"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 16})
class TagsField(serializers.Field):
    def to_internal_value(self, data: Any) -> list[str]:
        return normalise_tags(data)

    def to_representation(self, value: Any) -> list[str]:
        return list(value)


def content_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(max_length=settings.MEMORYHUB_MAX_MEMORY_CHARS, trim_whitespace=False, **kwargs)


def _non_blank(value: str) -> str:
    if not value.strip():
        raise serializers.ValidationError("Content must not be empty.", code="empty_content")
    return value


# --- notes -------------------------------------------------------------------------------------


class NoteInput(StrictSerializer):
    note_id = StrictRegexField(NOTE_ID_REGEX, required=False, error_messages={
        "invalid": "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."})
    content = content_field(allow_blank=True)
    source = StrictCharField(max_length=100, required=False, allow_blank=True, default="")
    tags = TagsField(required=False, default=list)
    metadata = MetadataField(required=False, default=dict)
    session = StrictCharField(max_length=200, required=False, allow_null=True, default=None)
    workspace = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    channel = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    scope = serializers.ChoiceField(choices=TIERS, required=False, allow_null=True, default=None)
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0, default=0.5)
    # `id` is accepted as another name of `note_id` (the output carries both).
    id = StrictRegexField(NOTE_ID_REGEX, required=False, error_messages={
        "invalid": "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."})

    def validate_content(self, value: str) -> str:
        return _non_blank(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        alias = attrs.pop("id", None)
        if alias is not None:
            if attrs.get("note_id") not in (None, alias):
                raise serializers.ValidationError({"id": [serializers.ErrorDetail(
                    "'id' and 'note_id' differ.", code="id_mismatch")]})
            attrs["note_id"] = alias
        return attrs


class NotePutInput(NoteInput):
    """PUT /notes/{note_id}/: the id is in the path."""

    note_id = None  # type: ignore[assignment]
    id = None  # type: ignore[assignment]


class NoteOutput(serializers.ModelSerializer):
    id = serializers.CharField(source="note_id")
    session = serializers.CharField(source="session.external_id", allow_null=True, default=None)
    workspace = serializers.CharField(source="workspace.name", allow_null=True, default=None)
    channel = serializers.CharField(source="channel.name", allow_null=True, default=None)
    scope = serializers.CharField(source="tier")
    tags = TagsField()

    class Meta:
        model = Note
        fields = ["id", "note_id", "content", "source", "tags", "metadata", "session", "workspace", "channel",
                  "scope", "user_id", "importance", "created_at", "updated_at"]


class NoteListParams(serializers.Serializer):
    tags = serializers.CharField(required=False)
    source = serializers.CharField(required=False)
    session = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    channel = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)
    scope = serializers.ChoiceField(choices=TIERS, required=False)
    q = serializers.CharField(required=False)


# --- facts -------------------------------------------------------------------------------------


class FactInput(StrictSerializer):
    content = content_field(allow_blank=True)
    category = StrictCharField(max_length=100, required=False, default="general")
    key = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    scope = serializers.ChoiceField(choices=TIERS, required=False, default="workspace")
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False, default="long_term")
    source = StrictCharField(max_length=100, required=False, default="agent")
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0, default=0.5)
    tags = TagsField(required=False, default=list)
    metadata = MetadataField(required=False, default=dict)
    session = StrictCharField(max_length=200, required=False, allow_null=True, default=None)
    source_session = StrictCharField(max_length=200, required=False, allow_null=True, default=None)
    workspace = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    channel = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")

    def validate_content(self, value: str) -> str:
        return _non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactPatchInput(StrictSerializer):
    content = content_field(required=False, allow_blank=True)
    category = StrictCharField(max_length=100, required=False)
    key = StrictCharField(max_length=200, required=False, allow_blank=True)
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False)
    source = StrictCharField(max_length=100, required=False)
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    tags = TagsField(required=False)
    metadata = MetadataField(required=False)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True)

    def validate_content(self, value: str) -> str:
        return _non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactOutput(serializers.ModelSerializer):
    scope = serializers.CharField(source="tier")
    access_count = serializers.SerializerMethodField()
    accessed_at = serializers.SerializerMethodField()
    session = serializers.CharField(source="session.external_id", allow_null=True, default=None)
    source_session = serializers.CharField(source="source_session.external_id", allow_null=True, default=None)
    workspace = serializers.CharField(source="workspace.name", allow_null=True, default=None)
    channel = serializers.CharField(source="channel.name", allow_null=True, default=None)
    tags = TagsField()

    class Meta:
        model = Fact
        fields = ["id", "content", "category", "key", "scope", "lifetime", "source", "importance",
                  "access_count", "accessed_at", "tags", "metadata", "session", "source_session",
                  "workspace", "channel", "user_id", "created_at", "updated_at"]

    def get_access_count(self, fact: Fact) -> int:
        return fact.access_count + (getattr(fact, "chunk_access_count", None) or 0)

    def get_accessed_at(self, fact: Fact) -> str | None:
        times = [t for t in (fact.accessed_at, getattr(fact, "chunk_accessed_at", None)) if t is not None]
        return iso(max(times)) if times else None


class FactListParams(serializers.Serializer):
    scope = serializers.ChoiceField(choices=TIERS, required=False)
    category = serializers.CharField(required=False)
    key = serializers.CharField(required=False)
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False)
    source = serializers.CharField(required=False)
    tags = serializers.CharField(required=False)
    q = serializers.CharField(required=False)
    session = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    channel = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)


# --- scratchpad --------------------------------------------------------------------------------


class ScratchpadInput(StrictSerializer):
    # A list of {"key", "value"} objects (order kept; plain strings get keys "1", "2", …) or one
    # {key: value} object.
    items = serializers.JSONField()


# --- rolling summary ---------------------------------------------------------------------------


class SummaryPutInput(StrictSerializer):
    text = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=settings.MEMORYHUB_MAX_MEMORY_CHARS)
    expected_epoch = serializers.IntegerField(required=False, allow_null=True, min_value=0, default=None)
    upper_sequence = serializers.IntegerField(required=False, allow_null=True, min_value=0, default=None)


# --- summary tree ------------------------------------------------------------------------------


def node_dict(node: SummaryNode) -> dict[str, Any]:
    return {
        "id": node.pk,
        "level": node.level,
        "depth": node.depth,
        "text": node.text,
        "session": node.session.external_id,
        "parent": node.parent_id,
        "sequence_start": node.sequence_start,
        "sequence_end": node.sequence_end,
        "source_count": node.source_count,
        "token_count": node.token_count,
        "summariser": node.summariser,
        "created_at": iso(node.created_at),
    }


class SummaryNodeOutput(serializers.Serializer):
    """Documents node_dict() for the schema."""

    id = serializers.IntegerField()
    level = serializers.ChoiceField(choices=["leaf", "branch", "root"])
    depth = serializers.IntegerField()
    text = serializers.CharField()
    session = serializers.CharField()
    parent = serializers.IntegerField(allow_null=True)
    sequence_start = serializers.IntegerField()
    sequence_end = serializers.IntegerField()
    source_count = serializers.IntegerField()
    token_count = serializers.IntegerField()
    summariser = serializers.CharField()
    created_at = serializers.DateTimeField()


class SummaryListParams(serializers.Serializer):
    session = serializers.CharField(required=False)
    level = serializers.ChoiceField(choices=["leaf", "branch", "root"], required=False)


class SummaryDetailParams(serializers.Serializer):
    events_limit = serializers.IntegerField(required=False, min_value=0, max_value=1000, default=100)
