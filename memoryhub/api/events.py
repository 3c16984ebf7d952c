"""A session's events (docs/event-log.md#append): the messages of a conversation, appended one at a
time or in bulk (as MemoryHub's fields or as a chat API sent them) and listed back, natively or in a
chat API's shape; output serializers, then the view (what a POST may carry:
memoryhub/api/events_input.py)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import chat, event_log, sessions
from memoryhub.api import examples as ex
from memoryhub.api.common import api_key, page_url, parse_input, query_params
from memoryhub.api.events_input import BulkEventInput, SingleEventInput
from memoryhub.api.placement import metadata_field, user_field
from memoryhub.models import Role


class EventOutput(serializers.Serializer):
    """Documents Event.as_dict() for the schema; the views return that dict directly."""

    id = serializers.IntegerField(help_text="The event's id.")
    sequence = serializers.IntegerField(help_text="Its position in the session, from 1.")
    role = serializers.ChoiceField(choices=Role.choices, help_text="Who spoke.")
    content = serializers.CharField(help_text="The message text.")
    tool_name = serializers.CharField(allow_null=True, help_text="The tool called, if any.")
    tool_args = serializers.JSONField(
        allow_null=True, help_text="The tool call's arguments, if any."
    )
    tool_result = serializers.JSONField(allow_null=True, help_text="The tool's result, if any.")
    tool_calls = serializers.ListField(
        child=serializers.DictField(),
        allow_null=True,
        help_text="[{id, name, arguments}] as stored, if any.",
    )
    tool_call_id = serializers.CharField(
        allow_null=True, help_text="The tool call this result answers, if any."
    )
    metadata = metadata_field("show")
    importance = serializers.FloatField(help_text="0–1: weight in recall.")
    idempotency_key = serializers.CharField(
        allow_null=True, help_text="The caller's idempotency key, if given."
    )
    created_at = serializers.DateTimeField(help_text="When it was said.")
    consolidated_at = serializers.DateTimeField(
        allow_null=True,
        help_text="When fact extraction or consolidation covered this message; null: not yet.",
    )


CHAT_MESSAGE_SCHEMA = {
    "type": "object",
    "additionalProperties": True,
    "required": ["role"],
    "description": (
        "A chat API's message (?format=openai|anthropic): role, content (string, null or a list of "
        "parts/blocks), and for OpenAI tool_calls, tool_call_id, name."
    ),
    "properties": {
        "role": {"type": "string"},
        "content": {
            "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}],
            "nullable": True,
        },
        "name": {"type": "string"},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "tool_call_id": {"type": "string"},
    },
}


# anyOf: a native event is also a valid chat message (role, content), so oneOf would refuse it.
@extend_schema_field({"anyOf": [{"$ref": "#/components/schemas/EventOutput"}, CHAT_MESSAGE_SCHEMA]})
class EventOrMessage(serializers.JSONField):
    """An event (native) or a chat message (?format=openai|anthropic)."""


class AppendedOutput(serializers.Serializer):
    """POST …/events/: a bulk append answers session, created, events; a single one also carries
    its event's own fields at the top level."""

    session = serializers.CharField(help_text="The session's id (created if it did not exist).")
    created = serializers.IntegerField(
        help_text="Events stored now (resent idempotency keys are not counted)."
    )
    events = EventOutput(
        many=True, help_text="The events, stored now or earlier under the same idempotency key."
    )
    id = serializers.IntegerField(required=False, help_text="Single append: the event's id.")
    sequence = serializers.IntegerField(required=False, help_text="Single append: its sequence.")
    role = serializers.ChoiceField(
        choices=Role.choices, required=False, help_text="Single append: its role."
    )
    content = serializers.CharField(required=False, help_text="Single append: its text.")
    tool_name = serializers.CharField(
        allow_null=True, required=False, help_text="Single append: its tool."
    )
    tool_args = serializers.JSONField(
        allow_null=True, required=False, help_text="Single append: tool arguments."
    )
    tool_result = serializers.JSONField(
        allow_null=True, required=False, help_text="Single append: tool result."
    )
    tool_calls = serializers.ListField(
        child=serializers.DictField(),
        allow_null=True,
        required=False,
        help_text="Single append: its tool calls.",
    )
    tool_call_id = serializers.CharField(
        allow_null=True, required=False, help_text="Single append: the tool call it answers."
    )
    metadata = metadata_field("show", note="Only in a single append's answer.", required=False)
    importance = serializers.FloatField(required=False, help_text="Single append: its importance.")
    idempotency_key = serializers.CharField(
        allow_null=True, required=False, help_text="Single append: its idempotency key."
    )
    created_at = serializers.DateTimeField(
        required=False, help_text="Single append: when it was said."
    )
    consolidated_at = serializers.DateTimeField(
        allow_null=True,
        required=False,
        help_text="Single append: null (a new message is not consolidated).",
    )


class EventListParams(serializers.Serializer):
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=1000,
        help_text="At most this many events. Alone: the newest ones.",
    )
    after = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="Events with a sequence above this one, oldest first.",
    )
    before = serializers.IntegerField(
        required=False, min_value=1, help_text="Events with a sequence below this one."
    )
    user_id = user_field("on_behalf", required=False, max_length=200)
    format = serializers.ChoiceField(
        choices=list(chat.FORMATS),
        required=False,
        default=chat.NATIVE,
        help_text=(
            "native (default): MemoryHub's event fields. openai / anthropic: each event as that"
            " chat API's message, exactly as it was sent when it was sent in that shape (otherwise"
            " rendered from its fields, one message per event), with nothing added: ready to send"
            " to the model again."
        ),
    )


class EventDeleteParams(serializers.Serializer):
    after = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="Delete only events with a sequence above this one (default 0).",
    )
    limit = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=event_log.MAX_BULK_EVENTS,
        help_text="Delete at most this many: the newest ones.",
    )
    user_id = user_field("on_behalf", required=False, max_length=200)


class EventListView(APIView):
    @extend_schema(
        summary="List a session's events",
        description=(
            "Oldest first from `after` (default: the start), 100 per page, with a `next` link; "
            "`limit` alone returns the newest `limit` events."
        ),
        parameters=[EventListParams],
        responses=inline_serializer(
            "EventPage",
            {
                "session": serializers.CharField(help_text="The session's id."),
                "count": serializers.IntegerField(help_text="Events in the session."),
                "last_sequence": serializers.IntegerField(help_text="The newest event's sequence."),
                "next": serializers.URLField(
                    allow_null=True, help_text="The next page's URL (null: no more)."
                ),
                "results": serializers.ListField(
                    child=EventOrMessage(),
                    help_text=(
                        "The events, oldest first (with ?format=openai|anthropic: "
                        "as that chat API's messages)."
                    ),
                ),
            },
        ),
        examples=ex.EVENT_LIST,
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = query_params(request, EventListParams)
        session = sessions.get_session_as(api_key(request), session_id, params.get("user_id"))
        after, before, limit = params.get("after"), params.get("before"), params.get("limit")
        render = chat.RENDERERS.get(params["format"])
        next_url = None
        if limit is not None and after is None and before is None:
            if render is None:
                results = event_log.recent_events(session, limit)
            else:
                results = [
                    render(e)
                    for e in event_log.events_page(
                        session, after=None, before=None, limit=limit, newest=True
                    )
                ]
        else:
            page_size = limit or 100
            events = event_log.events_page(session, after=after, before=before, limit=page_size)
            results = [render(e) if render else e.as_dict() for e in events]
            if (
                len(events) == page_size
                and events[-1].sequence < session.last_sequence
                and before is None
            ):
                next_url = page_url(request, after=events[-1].sequence, limit=page_size)
        body = {
            "session": session.external_id,
            "count": session.event_count,
            "last_sequence": session.last_sequence,
            "next": next_url,
            "results": results,
        }
        return Response(body)

    @extend_schema(
        summary="Append events",
        description=(
            'One event, or {"events": [...]} appended atomically (all or none), each at the next'
            " sequence. An unknown session id is created. 201 when something was stored; 200 when"
            " every event's idempotency_key was already stored (a retried request). With `user_id`"
            " (or a user-limited key) the session must be that user's: another user's or an unowned"
            " session is a 409 owner_mismatch (a user-limited key: 404 session_not_found for both),"
            " and nothing is stored."
        ),
        request=PolymorphicProxySerializer(
            "EventAppend",
            serializers=[SingleEventInput, BulkEventInput],
            resource_type_field_name=None,
        ),
        responses={201: AppendedOutput, 200: AppendedOutput},
        examples=ex.EVENT_APPEND,
    )
    def post(self, request: Request, session_id: str) -> Response:
        bulk = isinstance(request.data, dict) and "events" in request.data
        if bulk:
            data = parse_input(BulkEventInput, request.data)
            items, user_id = data["events"], data["user_id"]
        else:
            item = parse_input(SingleEventInput, request.data)
            user_id = item.pop("user_id")
            items = [item]
        # to tell a default from a value
        sent = (
            request.data["events"]
            if bulk
            else [{k: v for k, v in request.data.items() if k != "user_id"}]
        )
        result = event_log.append_events(
            key=api_key(request),
            session_id=session_id,
            user_id=user_id or None,
            items=[
                event_log.EventInput(
                    **dict(item), message=chat.kept_message(raw), given=frozenset([*raw, "message"])
                )
                for item, raw in zip(items, sent, strict=True)
            ],
        )
        body = appended(result)
        if not bulk:
            # A single append also answers with the event's own fields at the top level.
            body = {**body["events"][0], **body}
        return Response(
            body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        )

    @extend_schema(
        summary="Delete the newest events",
        description=(
            "Deletes the session's newest events: those above `after`, at most `limit` of them"
            " (neither: all of them), with what was derived from them: their search chunks, the"
            " summaries that cover any of them, and the facts an extractor drew only from them"
            " (deleted as DELETE /facts/{id}/ deletes, their history kept). They are gone from"
            " every read (events, search, context, export). Only the newest events can go; the"
            " session keeps its last sequence, so the next append continues after it. A tenant"
            " with an immutable transcript keeps its events (409"
            " immutable_transcript); an archived session is read-only (409 session_archived). With"
            " `user_id` (or a user-limited key) the session must be that user's, as for an append."
        ),
        parameters=[EventDeleteParams],
        responses={
            200: inline_serializer(
                "EventsDeleted",
                {
                    "session": serializers.CharField(help_text="The session's id."),
                    "deleted": serializers.DictField(
                        child=serializers.IntegerField(), help_text="Rows deleted, by kind."
                    ),
                    "results": EventOutput(
                        many=True, help_text="The deleted events, oldest first."
                    ),
                },
            )
        },
        examples=ex.EVENT_DELETE,
    )
    def delete(self, request: Request, session_id: str) -> Response:
        params = query_params(request, EventDeleteParams)
        result = event_log.delete_newest_events(
            key=api_key(request),
            session_id=session_id,
            after=params.get("after"),
            newest=params.get("limit"),
            user_id=params.get("user_id"),
        )
        return Response(
            {
                "session": result.session.external_id,
                "deleted": result.deleted,
                "results": result.events,
            }
        )


def appended(result: event_log.AppendResult) -> dict[str, Any]:
    """The body of a bulk append's answer (also what the MCP tool memory_remember returns)."""
    return {
        "session": result.session.external_id,
        "created": result.created,
        "events": [e.as_dict() for e in result.events],
    }
