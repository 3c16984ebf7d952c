"""Fields and schema pieces every area's serializers share: strict scalars (no silent coercion),
metadata, tags, ids, list parameters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers

from memoryhub.models import (
    SESSION_ID_REGEX,
)
from memoryhub.notes import MAX_MEMORY_CHARS, MAX_TAG_CHARS, MAX_TAGS

ID_REGEX = SESSION_ID_REGEX


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of quietly turning them into
    text."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictRegexField(serializers.RegexField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON number, not a string or a boolean that happens to convert."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            self.fail("invalid")
        return super().to_internal_value(data)


EARLIEST_EVENT_TIME = datetime(1970, 1, 1, tzinfo=UTC)
# An appended event's created_at may lie at most this far ahead of the server's clock (a day: a
# local time sent as UTC); before 1970 is refused too (400 created_at_out_of_range).
EVENT_MAX_FUTURE_SECONDS = 86400


class EventTimeField(serializers.DateTimeField):
    """When a message was said: not before 1970 and at most EVENT_MAX_FUTURE_SECONDS
    ahead of the server's clock. A year-9999 event would sort after everything said from now on
    and stay "the latest" for ever."""

    def to_internal_value(self, value: Any) -> datetime:
        moment = super().to_internal_value(value)
        ahead = EVENT_MAX_FUTURE_SECONDS
        if not EARLIEST_EVENT_TIME <= moment <= timezone.now() + timedelta(seconds=ahead):
            raise serializers.ValidationError(
                f"created_at must lie between {EARLIEST_EVENT_TIME.isoformat()} and {ahead} seconds"
                " from now.",
                code="created_at_out_of_range",
            )
        return moment


@extend_schema_field({"type": "object", "additionalProperties": True})
class MetadataField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.", code="invalid")
        return super().to_internal_value(data)


NOTE_ID_REGEX = ID_REGEX


@extend_schema_field(
    {
        "oneOf": [
            {
                "type": "array",
                "items": {
                    "oneOf": [
                        {"type": "string"},
                        {
                            "type": "object",
                            "properties": {"key": {"type": "string", "minLength": 1}, "value": {}},
                            "required": ["key"],
                            "additionalProperties": False,
                        },
                    ]
                },
            },
            {"type": "object", "additionalProperties": True},
        ]
    }
)
class ItemsField(serializers.JSONField):
    """A scratchpad's items: [{key, value}, …], plain strings, or one {key: value} object
    (memoryhub.scratchpad reads them; the schema says which shapes it takes)."""


def normalise_tags(value: Any) -> list[str]:
    """Trimmed, lowercased, de-duplicated (first occurrence kept), capped rather than refused: the
    first MAX_TAGS tags are kept, each cut to MAX_TAG_CHARS characters."""
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    if not isinstance(value, list):
        raise serializers.ValidationError("Tags must be a list of strings.", code="invalid_tags")
    seen: list[str] = []
    for tag in value:
        if not isinstance(tag, str):
            raise serializers.ValidationError("Every tag must be a string.", code="invalid_tags")
        tag = tag.strip().lower()[:MAX_TAG_CHARS].strip()
        if tag and tag not in seen:
            seen.append(tag)
    return seen[:MAX_TAGS]


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string"},
        "description": (
            "Labels: trimmed, lowercased, de-duplicated; the first 16 are kept, each cut "
            "to 64 characters."
        ),
    }
)
class TagsField(serializers.Field):
    def to_internal_value(self, data: Any) -> list[str]:
        # A list, as the schema says: "a,b" is refused, not split (a query's `tags` is the CSV
        # form).
        if not isinstance(data, list):
            raise serializers.ValidationError(
                "Tags must be a list of strings.", code="invalid_tags"
            )
        return normalise_tags(data)

    def to_representation(self, value: Any) -> list[str]:
        return list(value)


class ContentField(StrictCharField):
    """A memory's text, kept as sent (not trimmed): its serializer refuses it blank with its own
    code (`empty_content`, via non_blank), which the schema states
    (docs_requests._require_items)."""

    refuses_blank = True


def content_field(**kwargs: Any) -> StrictCharField:
    return ContentField(max_length=MAX_MEMORY_CHARS, trim_whitespace=False, **kwargs)


def non_blank(value: str) -> str:
    if not value.strip():
        raise serializers.ValidationError("Content must not be empty.", code="empty_content")
    return value


META_PARAM = OpenApiParameter(
    "meta.<key>", str, description="Metadata equality filter, e.g. meta.topic=billing"
)


# The bounds of common.LimitOffset, which refuses a value outside them (invalid_parameter).
PAGE_PARAMS = [
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": 1000},
        description="Page size: at most this many results (1–1000, default 50).",
    ),
    OpenApiParameter(
        "offset",
        {"type": "integer", "minimum": 0, "maximum": 2**62},
        description="Skip this many results (the `next` link carries the next offset).",
    ),
]


Deleted = inline_serializer(
    "Deleted",
    {
        "id": serializers.CharField(help_text="The id of what was deleted."),
        "deleted": serializers.BooleanField(
            help_text="Always true: a missing record is a 404 instead."
        ),
    },
)


def page_of(
    name: str,
    item: type[serializers.Serializer] | serializers.Serializer,
    **extra: serializers.Field,
) -> Any:
    """The schema of a paginated list (common.paginate): {count, next, previous, results} (and
    `extra`). `item` is the output serializer class, or an instance with many=True carrying its own
    help_text. Its view names its operation_id (`…_list`), which drf-spectacular infers only for
    bare arrays."""
    results = item(many=True, help_text="This page's results.") if isinstance(item, type) else item
    return inline_serializer(
        name,
        {
            "count": serializers.IntegerField(help_text="How many results match in all pages."),
            "next": serializers.URLField(
                allow_null=True, help_text="The next page's URL (null on the last page)."
            ),
            "previous": serializers.URLField(
                allow_null=True, help_text="The previous page's URL (null on the first page)."
            ),
            **extra,
            "results": results,
        },
    )
