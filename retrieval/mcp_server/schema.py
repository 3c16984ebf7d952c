"""JSON schemas of the MCP tools' arguments, read off the REST API's input serializers.

A tool's argument is a field of the serializer that validates it (same name, same limits, same
help_text as the OpenAPI schema), so the tools and the REST API cannot drift apart: the serializer
stays the one validator, and its error codes are what a tool error carries.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.fields import empty

from memoryhub.api.events_input import MessageContentField
from memoryhub.api.fields import MetadataField, TagsField
from retrieval.search.request import MAX_TOP_K
from retrieval.serializers import TopKField


def field_schema(field: serializers.Field) -> dict[str, Any]:
    """The JSON schema of one serializer field (its description is the field's help_text)."""
    schema = _type_schema(field)
    if field.help_text:
        schema["description"] = str(field.help_text)
    default = field.default
    if default is not empty and not callable(default) and default is not None:
        schema["default"] = default
    return schema


def _type_schema(field: serializers.Field) -> dict[str, Any]:
    # Order matters: ChoiceField before CharField, the project's own fields before their bases.
    if isinstance(field, TagsField):
        # Capped, not refused: the first memoryhub.notes.MAX_TAGS are kept, each cut to its length.
        return {"type": "array", "items": {"type": "string"}}
    if isinstance(field, MetadataField):
        return {"type": "object"}
    if isinstance(field, MessageContentField):  # as chat APIs send it (memoryhub.chat)
        return {
            "anyOf": [
                {"type": "string", "maxLength": field.max_length},
                {"type": "array", "items": {"type": "object"}},
                {"type": "null"},
            ]
        }
    if isinstance(field, serializers.ChoiceField):
        return {"type": "string", "enum": list(field.choices)}
    if isinstance(field, serializers.ListField):
        schema: dict[str, Any] = {"type": "array", "items": _type_schema(field.child)}
        if field.max_length is not None:
            schema["maxItems"] = field.max_length
        return schema
    if isinstance(field, serializers.BooleanField):
        return {"type": "boolean"}
    if isinstance(field, serializers.IntegerField | serializers.FloatField):
        return _number_schema(field)
    if isinstance(field, serializers.DateTimeField):
        return {"type": "string", "format": "date-time"}
    if isinstance(field, serializers.JSONField):
        return {}  # any JSON value
    if isinstance(field, serializers.CharField):
        return {"type": "string", **({"maxLength": field.max_length} if field.max_length else {})}
    raise TypeError(f"No JSON schema for {type(field).__name__}")


def _number_schema(field: serializers.IntegerField | serializers.FloatField) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "integer" if isinstance(field, serializers.IntegerField) else "number"
    }
    if field.min_value is not None:
        schema["minimum"] = field.min_value
    maximum = MAX_TOP_K if isinstance(field, TopKField) else field.max_value
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


def object_schema(
    serializer_class: type[serializers.Serializer],
    names: list[str],
    *,
    required: tuple[str, ...] = (),
    extra: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An object schema with the serializer's fields `names` (in that order) plus `extra` ones."""
    fields = serializer_class().fields
    properties = {**(extra or {}), **{name: field_schema(fields[name]) for name in names}}
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = list(required)
    return schema
