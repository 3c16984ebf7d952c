"""Sessions, their events and restore (S2, S11): serializers, then views."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import restore, sessions
from memoryhub.api.common import (
    StrictSerializer,
    api_key,
    page_url,
    paginate,
    parse_input,
    query_params,
)
from memoryhub.api.fields import (
    ID_REGEX,
    MetadataField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictRegexField,
    page_of,
)
from memoryhub.models import (
    SUMMARY_BUDGET_MAX,
    SUMMARY_BUDGET_MIN,
    Role,
    Session,
    SessionStatus,
)

MAX_TOOL_CALLS = 128


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
    summary_budget = StrictIntegerField(
        required=False, allow_null=True, default=None, min_value=SUMMARY_BUDGET_MIN, max_value=SUMMARY_BUDGET_MAX,
        help_text="Tokens this session's rolling summary works to; null: the server default.",
    )
    get_or_create = serializers.BooleanField(required=False, default=False)


class SessionPatchInput(StrictSerializer):
    title = StrictCharField(max_length=500, required=False, allow_blank=True)
    metadata = MetadataField(required=False)
    status = serializers.ChoiceField(
        choices=SessionStatus.choices, required=False,
        help_text="active → idle → archived (archive also from active; idle → active again). Repeating the "
                  "current status is a 409; archiving records ended_at and clears the conversation-tier "
                  "notes and facts (unless MEMORYHUB_KEEP_CONVERSATION_MEMORIES).",
    )
    agent = StrictCharField(max_length=200, required=False, allow_blank=True)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True)
    persistence_key = StrictCharField(max_length=500, required=False, allow_blank=True)
    summary_budget = StrictIntegerField(
        required=False, allow_null=True, min_value=SUMMARY_BUDGET_MIN, max_value=SUMMARY_BUDGET_MAX,
        help_text="Tokens this session's rolling summary works to; null: back to the server default.",
    )


class SessionOutput(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id")
    workspace = serializers.CharField(source="workspace.name")
    channel = serializers.CharField(source="channel.name")

    class Meta:
        model = Session
        fields = [
            "id", "user_id", "persistence_key", "agent", "workspace", "channel", "title", "metadata",
            "status", "ref_code", "summary_budget", "event_count", "last_sequence", "created_at", "updated_at",
            "ended_at",
        ]


class SessionListParams(serializers.Serializer):
    agent = serializers.CharField(required=False)
    channel = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    status = serializers.ChoiceField(choices=SessionStatus.choices, required=False,
                                     help_text="Only sessions in this status (archived ones only this way, or "
                                               "with include_archived).")
    include_archived = serializers.BooleanField(required=False, default=False,
                                                help_text="List archived sessions too (hidden by default).")
    ref_code = serializers.CharField(required=False, max_length=11,
                                     help_text="Look a session up by its 11-character reference code "
                                               "(archived or not).")
    persistence_key = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)
    q = serializers.CharField(required=False)


class ToolFunctionInput(StrictSerializer):
    name = StrictCharField(max_length=200, help_text="The tool's name.")
    arguments = serializers.JSONField(required=False, allow_null=True, default=None,
                                      help_text="The call's arguments: a JSON value or a JSON string.")


class ToolCallInput(StrictSerializer):
    """One tool call: {id, name, arguments}, or a chat API's {id, type: "function", function: {name,
    arguments}}; stored as {id, name, arguments}."""

    id = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                         help_text="The call's id; a tool result names it in `tool_call_id`.")
    name = StrictCharField(max_length=200, required=False, help_text="The tool's name.")
    arguments = serializers.JSONField(required=False, allow_null=True, default=None,
                                      help_text="The call's arguments: a JSON value or a JSON string, kept as sent.")
    type = serializers.ChoiceField(choices=["function"], required=False, help_text="Chat APIs' \"function\".")
    function = ToolFunctionInput(required=False, help_text="Chat APIs' form: {name, arguments}.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        function = attrs.get("function")
        if function is not None and ("name" in attrs or attrs["arguments"] is not None):
            raise serializers.ValidationError("Give `name`/`arguments` or `function`, not both.",
                                              code="ambiguous_tool_call")
        if function is None and "name" not in attrs:
            raise serializers.ValidationError("A tool call needs a `name` (or `function.name`).",
                                              code="tool_call_name_required")
        source = function or attrs
        return {"id": attrs["id"], "name": source["name"], "arguments": source["arguments"]}


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
    tool_calls = ToolCallInput(
        many=True, required=False, allow_null=True, default=None, max_length=MAX_TOOL_CALLS,
        help_text="Several tool calls in one message, as chat APIs send them: [{id, name, arguments}]. "
                  "Searchable like tool_name/tool_args, which keep working for a single call.",
    )
    tool_call_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                                   help_text="On a tool result: the id of the tool call it answers.")
    metadata = MetadataField(required=False, default=dict)
    importance = StrictFloatField(required=False, min_value=0.0, max_value=1.0, allow_null=True, default=None)
    created_at = serializers.DateTimeField(required=False, allow_null=True, default=None)
    idempotency_key = StrictCharField(max_length=200, required=False, allow_null=True, default=None)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if (not attrs["content"].strip() and not attrs["tool_name"] and attrs["tool_result"] is None
                and not attrs["tool_calls"] and not attrs["tool_call_id"]):
            raise serializers.ValidationError(
                "An event needs content, a tool_name, tool_calls, a tool_result or a tool_call_id.",
                code="empty_event",
            )
        ids = [c["id"] for c in attrs["tool_calls"] or [] if c["id"]]
        if len(ids) != len(set(ids)):
            raise serializers.ValidationError("Two tool calls of one event share an id.",
                                              code="duplicate_tool_call_id")
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
    tool_calls = serializers.ListField(child=serializers.DictField(), allow_null=True,
                                       help_text="[{id, name, arguments}] as stored.")
    tool_call_id = serializers.CharField(allow_null=True, help_text="The tool call this result answers.")
    metadata = serializers.DictField()
    importance = serializers.FloatField()
    idempotency_key = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class EventListParams(serializers.Serializer):
    limit = serializers.IntegerField(required=False, min_value=1, max_value=1000)
    after = serializers.IntegerField(required=False, min_value=0)
    before = serializers.IntegerField(required=False, min_value=1)


class RestoreParams(serializers.Serializer):
    budget = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000,
                                      help_text="Tokens the messages may use (default MEMORYHUB_RESTORE_BUDGET).")
    persistence = serializers.BooleanField(
        required=False, default=False,
        help_text="Restore every session sharing this session's persistence_key (and user) as one history, "
                  "oldest session first; each message then names its session.",
    )


RestoredOutput = inline_serializer("Restored", {
    "session": serializers.CharField(), "budget": serializers.IntegerField(),
    "tokens": serializers.IntegerField(),
    "truncated": serializers.BooleanField(
        help_text="Some messages are not in `messages` verbatim: a summary stands for them or they did not fit."),
    "omitted": serializers.IntegerField(help_text="How many messages are not in `messages` verbatim."),
    "summary_epoch": serializers.IntegerField(allow_null=True, help_text="Epoch of the leading summary, if any."),
    "sessions": serializers.ListField(child=serializers.CharField(),
                                      help_text="The sessions restored, oldest first (several with persistence)."),
    "messages": serializers.ListField(child=serializers.DictField(), help_text=(
        "Oldest first. Each is the stored event verbatim: role, content, sequence, tool_name, tool_args, "
        "tool_result, tool_calls, tool_call_id, metadata, created_at (and session with persistence). "
        "A leading system message with `summaries` is the rolling summary, present only when the whole "
        "history does not fit.")),
})


class SessionListView(APIView):
    @extend_schema(
        parameters=[SessionListParams, OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        responses=page_of("SessionPage", SessionOutput), operation_id="sessions_list",
    )
    def get(self, request: Request) -> Response:
        filters = query_params(request, SessionListParams)
        rows, meta = paginate(request, sessions.sessions_filter(api_key(request), filters))
        return Response({**meta, "results": SessionOutput(rows, many=True).data})

    @extend_schema(request=SessionCreateInput, responses={201: SessionOutput, 200: SessionOutput})
    def post(self, request: Request) -> Response:
        data = parse_input(SessionCreateInput, request.data)
        get_or_create = data.pop("get_or_create")
        session, created = sessions.create_session(
            key=api_key(request), data=sessions.SessionInput(**data), get_or_create=get_or_create
        )
        return Response(
            SessionOutput(session).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class SessionDetailView(APIView):
    @extend_schema(responses=SessionOutput)
    def get(self, request: Request, session_id: str) -> Response:
        return Response(SessionOutput(sessions.get_session(api_key(request), session_id)).data)

    @extend_schema(request=SessionPatchInput, responses=SessionOutput)
    def patch(self, request: Request, session_id: str) -> Response:
        changes = parse_input(SessionPatchInput, request.data, partial=True)
        session = sessions.update_session(key=api_key(request), session_id=session_id, changes=changes)
        return Response(SessionOutput(session).data)

    @extend_schema(responses=inline_serializer("Forgotten", {"id": serializers.CharField(), "deleted": serializers.DictField()}))
    def delete(self, request: Request, session_id: str) -> Response:
        deleted = sessions.forget_session(key=api_key(request), session_id=session_id)
        return Response({"id": session_id, "deleted": deleted})


class EventListView(APIView):
    @extend_schema(
        parameters=[EventListParams],
        responses=inline_serializer("EventPage", {
            "session": serializers.CharField(), "count": serializers.IntegerField(),
            "last_sequence": serializers.IntegerField(), "next": serializers.URLField(allow_null=True),
            "results": EventOutput(many=True),
        }),
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = query_params(request, EventListParams)
        session = sessions.get_session(api_key(request), session_id)
        after, before, limit = params.get("after"), params.get("before"), params.get("limit")
        next_url = None
        if limit is not None and after is None and before is None:
            results = sessions.recent_events(session, limit)
        else:
            page_size = limit or 100
            events = sessions.events_page(session, after=after, before=before, limit=page_size)
            results = [e.as_dict() for e in events]
            if len(events) == page_size and events[-1].sequence < session.last_sequence and before is None:
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
        request=EventInput,
        responses={201: inline_serializer("Appended", {"events": EventOutput(many=True)})},
        description="One event, or {\"events\": [...]} appended atomically. Unknown sessions are created.",
    )
    def post(self, request: Request, session_id: str) -> Response:
        bulk = isinstance(request.data, dict) and "events" in request.data
        if bulk:
            items = parse_input(BulkEventInput, request.data)["events"]
        else:
            items = [parse_input(EventInput, request.data)]
        sent = request.data["events"] if bulk else [request.data]  # to tell a default from a value
        result = sessions.append_events(
            key=api_key(request), session_id=session_id,
            items=[sessions.EventInput(**dict(item), given=frozenset(raw)) for item, raw in zip(items, sent, strict=True)],
        )
        body = appended(result)
        if not bulk:
            # A single append also answers with the event's own fields at the top level.
            body = {**body["events"][0], **body}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


def appended(result: sessions.AppendResult) -> dict[str, Any]:
    """The body of a bulk append's answer (also what the MCP tool memory_remember returns)."""
    return {"session": result.session.external_id, "created": result.created,
            "events": [e.as_dict() for e in result.events]}


class RestoreView(APIView):
    @extend_schema(
        parameters=[RestoreParams],
        responses=RestoredOutput,
        description="The session's messages as stored, oldest first, within `budget` tokens. The whole "
                    "history when it fits; otherwise the rolling summary leads as a system message and the "
                    "newest messages it does not cover follow.",
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = query_params(request, RestoreParams)
        budget = params.get("budget", settings.MEMORYHUB_RESTORE_BUDGET)
        key = api_key(request)
        session = sessions.get_session(key, session_id)
        chain = restore.persistence_chain(key, session) if params["persistence"] else None
        restored = restore.restore_session(session, budget=budget, chain=chain)
        return Response({
            "session": session.external_id,
            "budget": budget,
            "tokens": restored.tokens,
            "truncated": restored.truncated,
            "omitted": restored.omitted,
            "summary_epoch": restored.summaries[-1].epoch if restored.summaries else None,
            "sessions": [s.external_id for s in restored.sessions],
            "messages": restored.messages,
        })
