"""Input validation and output shapes of the session and event endpoints."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from memoryhub.api import StrictSerializer
from memoryhub.models import SESSION_ID_REGEX, Role, Session, SessionStatus

ID_REGEX = SESSION_ID_REGEX


class StrictCharField(serializers.CharField):
    """A string field that refuses numbers and booleans instead of quietly turning them into text."""

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


class MetadataField(serializers.JSONField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be a JSON object.", code="invalid")
        return super().to_internal_value(data)


class SessionCreateInput(StrictSerializer):
    id = StrictRegexField(ID_REGEX, required=False, allow_null=True, error_messages={
        "invalid": "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."})
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    persistence_key = StrictCharField(max_length=500, required=False, allow_blank=True, default="")
    agent = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    channel = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    workspace = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    title = StrictCharField(max_length=500, required=False, allow_blank=True, default="")
    metadata = MetadataField(required=False, default=dict)
    get_or_create = serializers.BooleanField(required=False, default=False)


class SessionPatchInput(StrictSerializer):
    title = StrictCharField(max_length=500, required=False, allow_blank=True)
    metadata = MetadataField(required=False)
    status = serializers.ChoiceField(choices=SessionStatus.choices, required=False)
    agent = StrictCharField(max_length=200, required=False, allow_blank=True)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True)
    persistence_key = StrictCharField(max_length=500, required=False, allow_blank=True)


class SessionOutput(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")
    workspace = serializers.CharField(source="workspace.name")
    channel = serializers.CharField(source="channel.name")

    class Meta:
        model = Session
        fields = [
            "id", "user_id", "persistence_key", "agent", "workspace", "channel", "title", "metadata",
            "status", "ref_code", "event_count", "last_sequence", "created_at", "updated_at",
        ]


class SessionListParams(serializers.Serializer):
    agent = serializers.CharField(required=False)
    channel = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    status = serializers.ChoiceField(choices=SessionStatus.choices, required=False)
    persistence_key = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)
    q = serializers.CharField(required=False)


class EventInput(StrictSerializer):
    role = serializers.ChoiceField(choices=Role.choices)
    content = StrictCharField(
        required=False, allow_blank=True, default="", trim_whitespace=False,
        max_length=settings.MEMORYHUB_MAX_CONTENT_CHARS,
    )
    sequence = StrictIntegerField(required=False, min_value=1, max_value=2**62)
    tool_name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    tool_args = serializers.JSONField(required=False, allow_null=True, default=None)
    tool_result = serializers.JSONField(required=False, allow_null=True, default=None)
    metadata = MetadataField(required=False, default=dict)
    importance = StrictFloatField(required=False, min_value=0.0, max_value=1.0, allow_null=True, default=None)
    created_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    idempotency_key = StrictCharField(max_length=200, required=False, allow_null=True, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs["content"].strip() and not attrs["tool_name"] and attrs["tool_result"] is None:
            raise serializers.ValidationError(
                "An event needs content, a tool_name or a tool_result.", code="empty_event"
            )
        return attrs


class BulkEventInput(StrictSerializer):
    events = EventInput(many=True, allow_empty=False)


class EventOutput(serializers.Serializer):
    """Documents Event.as_dict() for the schema; the views return that dict directly."""

    id = serializers.IntegerField()
    sequence = serializers.IntegerField()
    role = serializers.ChoiceField(choices=Role.choices)
    content = serializers.CharField()
    tool_name = serializers.CharField(allow_null=True)
    tool_args = serializers.JSONField(allow_null=True)
    tool_result = serializers.JSONField(allow_null=True)
    metadata = serializers.DictField()
    importance = serializers.FloatField()
    idempotency_key = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class EventListParams(serializers.Serializer):
    limit = serializers.IntegerField(required=False, min_value=1, max_value=1000)
    after = serializers.IntegerField(required=False, min_value=0)
    before = serializers.IntegerField(required=False, min_value=1)


class RestoreParams(serializers.Serializer):
    budget = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000)
