"""What a POST of a session's events may carry (docs/event-log.md#append): one event, a batch, or
messages as a chat API sent them (content parts, tool calls), read into an event's own fields."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memoryhub import chat, event_log
from memoryhub.api.common import StrictSerializer
from memoryhub.api.fields import (
    EventTimeField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
)
from memoryhub.api.placement import metadata_field, user_field
from memoryhub.models import Role

MAX_TOOL_CALLS = 128


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "maxLength": event_log.MAX_CONTENT_CHARS},
            {
                "type": "array",
                "maxItems": chat.MAX_PARTS,
                "items": {
                    "type": "object",
                    "properties": {"type": {"type": "string"}},
                    "required": ["type"],
                },
            },
        ],
        "nullable": True,
    }
)
class MessageContentField(serializers.Field):
    """A message's content: a string, null, or a list of content parts/blocks (memoryhub.chat)."""

    @property
    def max_length(self) -> int:  # of a string content
        return int(event_log.MAX_CONTENT_CHARS)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str):
            if len(data) > self.max_length:
                raise serializers.ValidationError(
                    f"Ensure this field has no more than {self.max_length} characters.",
                    code="max_length",
                )
            return data
        if isinstance(data, list):
            return data
        raise serializers.ValidationError(
            "Content is a string, null or a list of content parts.", code="invalid"
        )

    def to_representation(self, value: Any) -> Any:
        return value


def _read_chat_fields(attrs: dict[str, Any]) -> dict[str, Any]:
    """An event's own fields from a chat-API message: null content is empty, a list of parts gives
    its text, tool calls and tool result (memoryhub.chat.read_parts); `name` on a tool message is
    the tool's."""
    name = attrs.pop("name", None)
    content = attrs["content"]
    if content is None:
        attrs["content"] = ""
    elif isinstance(content, list):
        try:
            read = chat.read_parts(attrs["role"], content)
        except chat.MessageError as exc:
            raise serializers.ValidationError(
                {"content": [serializers.ErrorDetail(str(exc), code=exc.code)]}
            ) from None
        if len(read.content) > event_log.MAX_CONTENT_CHARS:
            raise serializers.ValidationError(
                {
                    "content": [
                        serializers.ErrorDetail(
                            f"The message's text has more than {event_log.MAX_CONTENT_CHARS}"
                            " characters.",
                            code="max_length",
                        )
                    ]
                }
            )
        if read.tool_calls and attrs["tool_calls"]:
            raise serializers.ValidationError(
                "Give tool calls as `tool_calls` or as tool_use blocks, not both.",
                code="ambiguous_tool_call",
            )
        if read.tool_call_id and attrs["tool_call_id"]:
            raise serializers.ValidationError(
                "Give `tool_call_id` or a tool_result block, not both.", code="ambiguous_tool_call"
            )
        attrs["role"], attrs["content"] = read.role, read.content
        attrs["tool_calls"] = read.tool_calls or attrs["tool_calls"]
        attrs["tool_call_id"] = read.tool_call_id or attrs["tool_call_id"]
    if name and attrs["role"] == "tool" and not attrs["tool_name"]:
        attrs["tool_name"] = name
    return attrs


class ToolFunctionInput(StrictSerializer):
    name = StrictCharField(max_length=200, help_text="The tool's name.")
    arguments = serializers.JSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The call's arguments: a JSON value or a JSON string.",
    )


class ToolCallInput(StrictSerializer):
    """One tool call: {id, name, arguments}, or a chat API's {id, type: "function", function: {name,
    arguments}}; stored as {id, name, arguments}."""

    id = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="The call's id; a tool result names it in `tool_call_id`.",
    )
    name = StrictCharField(max_length=200, required=False, help_text="The tool's name.")
    arguments = serializers.JSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The call's arguments: a JSON value or a JSON string, kept as sent.",
    )
    type = serializers.ChoiceField(
        choices=["function"], required=False, help_text='Chat APIs\' "function".'
    )
    function = ToolFunctionInput(required=False, help_text="Chat APIs' form: {name, arguments}.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        function = attrs.get("function")
        if function is not None and ("name" in attrs or attrs["arguments"] is not None):
            raise serializers.ValidationError(
                "Give `name`/`arguments` or `function`, not both.", code="ambiguous_tool_call"
            )
        if function is None and "name" not in attrs:
            raise serializers.ValidationError(
                "A tool call needs a `name` (or `function.name`).", code="tool_call_name_required"
            )
        source = function or attrs
        return {"id": attrs["id"], "name": source["name"], "arguments": source["arguments"]}


class EventInput(StrictSerializer):
    also_accepted = ("events",)  # the bulk form
    role = serializers.ChoiceField(
        choices=Role.choices, help_text="Who spoke: user, assistant, tool or system."
    )
    content = MessageContentField(
        required=False,
        allow_null=True,
        default="",
        help_text=(
            "The message text (may be empty for a tool call with tool_name or tool_result); as chat"
            " APIs send it, also null (an assistant's tool calls) or a list of OpenAI content parts"
            " or Anthropic blocks (text, tool_use, tool_result, images…): their text is what is"
            " searched, and the message is kept whole for ?format=openai|anthropic."
        ),
    )
    name = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text=(
            "OpenAI's `name`: the participant's name (on a tool message: the tool's, "
            "stored as tool_name). Kept for ?format=openai."
        ),
    )
    sequence = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=2**62,
        help_text=(
            "The position to store it at (default: next). One not above the "
            "session's last sequence is a 409 sequence_conflict."
        ),
    )
    tool_name = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="The tool called (tool calls and results).",
    )
    tool_args = serializers.JSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The tool call's arguments (any JSON).",
    )
    tool_result = serializers.JSONField(
        required=False, allow_null=True, default=None, help_text="The tool's result (any JSON)."
    )
    # A ListSerializer spelled out: many=True would hand allow_null to each item too, and [null] got
    # through to a 500.
    tool_calls = serializers.ListSerializer(
        child=ToolCallInput(),
        required=False,
        allow_null=True,
        default=None,
        max_length=MAX_TOOL_CALLS,
        help_text=(
            "Several tool calls in one message, as chat APIs send them: [{id, name, arguments}]. "
            "Searchable like tool_name/tool_args, which keep working for a single call."
        ),
    )
    tool_call_id = StrictCharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="On a tool result: the id of the tool call it answers.",
    )
    metadata = metadata_field("place", required=False, default=dict)
    importance = StrictFloatField(
        required=False,
        min_value=0.0,
        max_value=1.0,
        allow_null=True,
        default=None,
        help_text="0–1: how much the message matters for recall (default by role).",
    )
    created_at = EventTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "When it was said (default: now), e.g. when importing history; "
            "from 1970 to a day ahead."
        ),
    )
    idempotency_key = StrictCharField(
        max_length=200,
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "A key of the caller's: resending an event with a stored key "
            "stores nothing and returns the stored event; the same key with "
            "other content is a 409 idempotency_mismatch."
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = _read_chat_fields(attrs)
        if (
            not attrs["content"].strip()
            and not attrs["tool_name"]
            and attrs["tool_result"] is None
            and not attrs["tool_calls"]
            and not attrs["tool_call_id"]
        ):
            raise serializers.ValidationError(
                "An event needs content, a tool_name, tool_calls, a tool_result or a tool_call_id.",
                code="empty_event",
            )
        ids = [c["id"] for c in attrs["tool_calls"] or [] if c["id"]]
        if len(ids) != len(set(ids)):
            raise serializers.ValidationError(
                "Two tool calls of one event share an id.", code="duplicate_tool_call_id"
            )
        return attrs


# What an append adds to acting on behalf of its user (the placement module's wording).
APPEND_USER_NOTE = "A new session becomes theirs. A user-limited key appends as its user."


def append_user_field() -> Any:
    """The end user an append acts for: one field, declared alike by single and bulk appends."""
    return user_field(
        "on_behalf",
        note=APPEND_USER_NOTE,
        max_length=200,
        required=False,
        allow_null=True,
        default=None,
    )


class SingleEventInput(EventInput):
    user_id = append_user_field()


class BulkEventInput(StrictSerializer):
    events = EventInput(
        many=True, allow_empty=False, help_text="The events, oldest first; all are stored or none."
    )
    user_id = append_user_field()
