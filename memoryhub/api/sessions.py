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

from memoryhub import sessions
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
    Role,
    Session,
    SessionStatus,
)


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
        payloads = [e.as_dict() for e in result.events]
        body: dict[str, Any] = {"session": result.session.external_id, "created": result.created, "events": payloads}
        if not bulk:
            # A single append also answers with the event's own fields at the top level.
            body = {**payloads[0], **body}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class RestoreView(APIView):
    @extend_schema(
        parameters=[RestoreParams],
        responses=inline_serializer("Restored", {
            "session": serializers.CharField(), "budget": serializers.IntegerField(),
            "tokens": serializers.IntegerField(), "truncated": serializers.BooleanField(),
            "summary_epoch": serializers.IntegerField(allow_null=True),
            "messages": serializers.ListField(child=serializers.DictField()),
        }),
        description="The rolling summary (as a leading system message) and the newest messages that fit "
                    "in `budget` tokens, oldest first.",
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = query_params(request, RestoreParams)
        budget = params.get("budget", settings.MEMORYHUB_RESTORE_BUDGET)
        session = sessions.get_session(api_key(request), session_id)
        restored = sessions.restore_session(session, budget=budget)
        return Response({
            "session": session.external_id,
            "budget": budget,
            "tokens": restored.tokens,
            "truncated": restored.truncated,
            "summary_epoch": restored.summary.epoch if restored.summary else None,
            "messages": restored.messages,
        })
