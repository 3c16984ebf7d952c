"""REST views for sessions, events and restore (SPEC S11). Thin: parse, call, serialise."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import sessions
from memoryhub.api import api_key, page_url, paginate, parse_input, query_params
from memoryhub.serializers import (
    BulkEventInput,
    EventInput,
    EventListParams,
    EventOutput,
    RestoreParams,
    SessionCreateInput,
    SessionListParams,
    SessionOutput,
    SessionPatchInput,
)


class HealthView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    @extend_schema(responses=inline_serializer("Health", {"status": serializers.CharField()}))
    def get(self, request: Request) -> Response:
        return Response({"status": "ok"})


class ReadyView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    @extend_schema(responses=inline_serializer("Ready", {"status": serializers.CharField()}))
    def get(self, request: Request) -> Response:
        checks: dict[str, str] = {}
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            checks["database"] = "ok"
            executor = MigrationExecutor(connection)
            pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
            checks["migrations"] = "ok" if not pending else f"{len(pending)} pending"
        except Exception as exc:  # readiness reports, it does not raise
            checks.setdefault("database", f"error: {exc.__class__.__name__}")
        ready = all(v == "ok" for v in checks.values()) and len(checks) == 2
        body = {"status": "ready" if ready else "not_ready", "checks": checks}
        return Response(body, status=status.HTTP_200_OK if ready else status.HTTP_503_SERVICE_UNAVAILABLE)


class SessionListView(APIView):
    @extend_schema(
        parameters=[SessionListParams, OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        responses=SessionOutput(many=True),
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
        result = sessions.append_events(
            key=api_key(request), session_id=session_id,
            items=[sessions.EventInput(**dict(item)) for item in items],
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
