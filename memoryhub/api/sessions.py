"""Sessions (docs/event-log.md#append): creating, listing, reading, changing and deleting a
conversation; serializers, then views. A session's events are memoryhub.api.events, its restore
memoryhub.api.restore."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import sessions
from memoryhub.api import examples as ex
from memoryhub.api.common import StrictSerializer, api_key, paginate, parse_input, query_params
from memoryhub.api.fields import (
    ID_REGEX,
    PAGE_PARAMS,
    StrictCharField,
    StrictIntegerField,
    StrictRegexField,
    page_of,
)
from memoryhub.api.placement import (
    agent_field,
    channel_field,
    metadata_field,
    user_field,
    workspace_field,
)
from memoryhub.models import SUMMARY_BUDGET_MAX, SUMMARY_BUDGET_MIN, Session, SessionStatus

ID_HELP = "Letters, digits and . _ : @ - (1–200 characters, not starting with a symbol)."


class SessionCreateInput(StrictSerializer):
    id = StrictRegexField(
        ID_REGEX,
        required=False,
        allow_null=True,
        error_messages={
            "invalid": (
                "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."
            )
        },
        help_text=(
            f"The session's id, chosen by the caller (default: a generated sess-…). {ID_HELP}"
        ),
    )
    user_id = user_field(
        "place",
        fallback="none, a conversation nobody owns",
        note="They own the memories made in it.",
        required=False,
        allow_blank=True,
        default="",
    )
    persistence_key = StrictCharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text=(
            "A key of the caller's own to find the session again "
            "(e.g. a chat thread id); filterable in GET /sessions/."
        ),
    )
    agent = agent_field("place", required=False, allow_blank=True, default="")
    channel = channel_field(
        "place", fallback="general", required=False, allow_null=True, default=None
    )
    workspace = workspace_field("place", required=False, allow_null=True, default=None)
    title = StrictCharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="A human-readable title.",
    )
    metadata = metadata_field("place", required=False, default=dict)
    summary_budget = StrictIntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=SUMMARY_BUDGET_MIN,
        max_value=SUMMARY_BUDGET_MAX,
        help_text="Tokens this session's rolling summary works to; null: the server default.",
    )
    get_or_create = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "True: an existing session with this id is returned (200) instead of a 409"
            " session_exists."
        ),
    )


class SessionPatchInput(StrictSerializer):
    title = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="A new title."
    )
    metadata = metadata_field("change", required=False)
    status = serializers.ChoiceField(
        choices=SessionStatus.choices,
        required=False,
        help_text=(
            "active → idle → archived (archive also from active; idle → active again). Repeating"
            " the current status is a 409; archiving makes the session read-only, records ended_at"
            " and clears the conversation-tier notes and facts (unless the server is set to keep"
            " them)."
        ),
    )
    agent = agent_field("change", required=False, allow_blank=True)
    user_id = user_field(
        "change",
        note=(
            "Only a conversation nobody owns is claimed so, with its memories; one that has an"
            " owner keeps it (409 owner_mismatch)."
        ),
        required=False,
        allow_blank=True,
    )
    persistence_key = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="A new persistence key."
    )
    summary_budget = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=SUMMARY_BUDGET_MIN,
        max_value=SUMMARY_BUDGET_MAX,
        help_text=(
            "Tokens this session's rolling summary works to; null: back to the server default."
        ),
    )


class SessionOutput(serializers.ModelSerializer):
    id = serializers.CharField(source="external_id", help_text="The session's id.")
    workspace = workspace_field("show", source="workspace.name")
    channel = channel_field("show", source="channel.name")

    class Meta:
        model = Session
        fields = [
            "id",
            "user_id",
            "persistence_key",
            "agent",
            "workspace",
            "channel",
            "title",
            "metadata",
            "status",
            "ref_code",
            "summary_budget",
            "event_count",
            "last_sequence",
            "created_at",
            "updated_at",
            "ended_at",
        ]
        extra_kwargs = {
            "user_id": {"help_text": user_field("show").help_text},
            "persistence_key": {"help_text": "The caller's own key for the session (empty: none)."},
            "agent": {"help_text": agent_field("show").help_text},
            "title": {"help_text": "The session's title."},
            "metadata": {"help_text": metadata_field("show").help_text},
            "status": {"help_text": "active, idle (no recent events) or archived (read-only)."},
            "ref_code": {
                "help_text": "A short code to quote the session to support or in the admin."
            },
            "event_count": {"help_text": "Events stored."},
            "last_sequence": {
                "help_text": "The sequence number of the newest event (0: none yet)."
            },
            "created_at": {"help_text": "When the session was created."},
            "updated_at": {"help_text": "When it last changed (an append counts)."},
            "summary_budget": {
                "help_text": "Tokens its rolling summary works to (null: the server default)."
            },
            "ended_at": {"help_text": "When it was archived (null: not archived)."},
        }


class SessionListParams(serializers.Serializer):
    agent = agent_field("filter", of="sessions", required=False)
    channel = channel_field("filter", of="sessions", required=False)
    workspace = workspace_field("filter", of="sessions", required=False)
    status = serializers.ChoiceField(
        choices=SessionStatus.choices,
        required=False,
        help_text=(
            "Only sessions in this status (archived ones only this way, or with include_archived)."
        ),
    )
    include_archived = serializers.BooleanField(
        required=False, default=False, help_text="List archived sessions too (hidden by default)."
    )
    ref_code = serializers.CharField(
        required=False,
        max_length=11,
        help_text="Look a session up by its 11-character reference code (archived or not).",
    )
    persistence_key = serializers.CharField(
        required=False, help_text="Only the session(s) with this key."
    )
    user_id = user_field("filter", of="sessions", required=False)
    q = serializers.CharField(
        required=False, help_text="Text in the id or title (case-insensitive)."
    )


class SessionListView(APIView):
    @extend_schema(
        summary="List sessions",
        operation_id="sessions_list",
        description="The key's sessions, newest first, filtered and paged (limit/offset).",
        parameters=[SessionListParams, *PAGE_PARAMS],
        responses=page_of(
            "SessionPage", SessionOutput(many=True, help_text="This page's sessions.")
        ),
        examples=ex.SESSION_LIST,
    )
    def get(self, request: Request) -> Response:
        filters = query_params(request, SessionListParams)
        rows, meta = paginate(request, sessions.sessions_filter(api_key(request), filters))
        return Response({**meta, "results": SessionOutput(rows, many=True).data})

    @extend_schema(
        summary="Create a session",
        description=(
            "A conversation to store events in. An existing id is a 409 session_exists, unless"
            " get_or_create is true (then 200 with the existing session; 409 owner_mismatch when it"
            " belongs to another user than `user_id`, or to none). Appending to an unknown session"
            " id also creates it. A user-limited key naming another user's session id gets the 404"
            " session_not_found a missing session gets."
        ),
        request=SessionCreateInput,
        responses={201: SessionOutput, 200: SessionOutput},
        examples=ex.SESSION_CREATE,
    )
    def post(self, request: Request) -> Response:
        data = parse_input(SessionCreateInput, request.data)
        get_or_create = data.pop("get_or_create")
        session, created = sessions.create_session(
            key=api_key(request), data=sessions.SessionInput(**data), get_or_create=get_or_create
        )
        return Response(
            SessionOutput(session).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class SessionReadParams(serializers.Serializer):
    user_id = user_field("on_behalf", required=False, max_length=200)


class SessionDetailView(APIView):
    @extend_schema(
        summary="Get a session",
        description=(
            "One session: its end user, agent, state and message "
            "count. With `user_id` the session must be that end user's (409 owner_mismatch)."
        ),
        parameters=[SessionReadParams],
        responses=SessionOutput,
        examples=ex.SESSION_GET,
    )
    def get(self, request: Request, session_id: str) -> Response:
        params = query_params(request, SessionReadParams)
        return Response(
            SessionOutput(
                sessions.get_session_as(api_key(request), session_id, params.get("user_id"))
            ).data
        )

    @extend_schema(
        summary="Change a session",
        description="Only the fields given change.",
        request=SessionPatchInput,
        responses=SessionOutput,
        examples=ex.SESSION_PATCH,
    )
    def patch(self, request: Request, session_id: str) -> Response:
        changes = parse_input(SessionPatchInput, request.data, partial=True)
        session = sessions.update_session(
            key=api_key(request), session_id=session_id, changes=changes
        )
        return Response(SessionOutput(session).data)

    @extend_schema(
        summary="Delete a session and its memories",
        description=(
            "Deletes the session with everything derived from it: events, chunks, summaries, "
            "scratchpad, and notes and facts placed in it."
        ),
        responses={
            200: inline_serializer(
                "Forgotten",
                {
                    "id": serializers.CharField(help_text="The deleted session's id."),
                    "deleted": serializers.DictField(
                        child=serializers.IntegerField(), help_text="Rows deleted, by kind."
                    ),
                },
            )
        },
        examples=ex.SESSION_DELETE,
    )
    def delete(self, request: Request, session_id: str) -> Response:
        deleted = sessions.forget_session(key=api_key(request), session_id=session_id)
        return Response({"id": session_id, "deleted": deleted})
