"""REST views of notes, facts, scratchpads, rolling summaries and the summary tree (S5, S6, S11)."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import facts, notes, scratchpad, summaries
from memoryhub.api import api_key, paginate, parse_input, query_params
from memoryhub.errors import ApiError, Conflict, NotFound
from memoryhub.memory_serializers import (
    NOTE_ID_REGEX,
    FactInput,
    FactListParams,
    FactOutput,
    FactPatchInput,
    NoteInput,
    NoteListParams,
    NoteOutput,
    NotePutInput,
    ScratchpadInput,
    SummaryDetailParams,
    SummaryListParams,
    SummaryNodeOutput,
    SummaryPutInput,
    node_dict,
)
from memoryhub.models import SummaryNode, iso
from memoryhub.sessions import event_message, get_session, sessions_visible_to
from memoryhub.tasks import enqueue

META_PARAM = OpenApiParameter("meta.<key>", str, description="Metadata equality filter, e.g. meta.topic=billing")
PAGE_PARAMS = [OpenApiParameter("limit", int), OpenApiParameter("offset", int)]
Deleted = inline_serializer("Deleted", {"id": serializers.CharField(), "deleted": serializers.BooleanField()})


# --- notes -------------------------------------------------------------------------------------


class NoteListView(APIView):
    @extend_schema(parameters=[NoteListParams, META_PARAM, *PAGE_PARAMS], responses=NoteOutput(many=True))
    def get(self, request: Request) -> Response:
        filters = query_params(request, NoteListParams)
        qs = notes.notes_filter(api_key(request), filters, notes.meta_filters(request.query_params))
        rows, meta = paginate(request, qs)
        return Response({**meta, "results": NoteOutput(rows, many=True).data})

    @extend_schema(request=NoteInput, responses={201: NoteOutput})
    def post(self, request: Request) -> Response:
        data = parse_input(NoteInput, request.data)
        note = notes.create_note(api_key(request), data)
        return Response(NoteOutput(note).data, status=status.HTTP_201_CREATED)


class NoteDetailView(APIView):
    @extend_schema(responses=NoteOutput)
    def get(self, request: Request, note_id: str) -> Response:
        return Response(NoteOutput(notes.get_note(api_key(request), note_id)).data)

    @extend_schema(request=NotePutInput, responses={200: NoteOutput, 201: NoteOutput},
                   description="Replace the note (all its searchable chunks), or create it under this id.")
    def put(self, request: Request, note_id: str) -> Response:
        if not re.fullmatch(NOTE_ID_REGEX, note_id):
            raise ApiError("invalid_note_id", "A note id has 1–200 characters: letters, digits and . _ : @ - "
                           "(not starting with a symbol).")
        data = parse_input(NotePutInput, request.data)
        note, created = notes.put_note(api_key(request), note_id, data)
        return Response(NoteOutput(note).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses=Deleted)
    def delete(self, request: Request, note_id: str) -> Response:
        notes.delete_note(api_key(request), note_id)
        return Response({"id": note_id, "deleted": True})


# --- facts -------------------------------------------------------------------------------------


class FactListView(APIView):
    @extend_schema(parameters=[FactListParams, META_PARAM, *PAGE_PARAMS], responses=FactOutput(many=True))
    def get(self, request: Request) -> Response:
        filters = query_params(request, FactListParams)
        qs = facts.facts_filter(api_key(request), filters, notes.meta_filters(request.query_params))
        rows, meta = paginate(request, qs)
        return Response({**meta, "results": FactOutput(rows, many=True).data})

    @extend_schema(request=FactInput, responses={201: FactOutput, 200: FactOutput},
                   description="An existing (scope, category, key) is updated (200), otherwise created (201).")
    def post(self, request: Request) -> Response:
        data = parse_input(FactInput, request.data)
        fact, created = facts.upsert_fact(api_key(request), data, given=set(request.data))
        body = {**FactOutput(facts.get_fact(api_key(request), fact.pk)).data, "created": created}
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class FactDetailView(APIView):
    @extend_schema(responses=FactOutput)
    def get(self, request: Request, fact_id: int) -> Response:
        return Response(FactOutput(facts.get_fact(api_key(request), fact_id)).data)

    @extend_schema(request=FactPatchInput, responses=FactOutput)
    def patch(self, request: Request, fact_id: int) -> Response:
        changes = parse_input(FactPatchInput, request.data, partial=True)
        fact = facts.update_fact(api_key(request), fact_id, changes)
        return Response(FactOutput(facts.get_fact(api_key(request), fact.pk)).data)

    @extend_schema(responses=Deleted)
    def delete(self, request: Request, fact_id: int) -> Response:
        facts.delete_fact(api_key(request), fact_id)
        return Response({"id": str(fact_id), "deleted": True})


# --- scratchpad --------------------------------------------------------------------------------

ScratchpadOutput = inline_serializer("Scratchpad", {
    "session": serializers.CharField(),
    "items": inline_serializer("ScratchpadItem", {"key": serializers.CharField(), "value": serializers.CharField()},
                               many=True),
    "count": serializers.IntegerField(), "version": serializers.IntegerField(),
    "updated_at": serializers.DateTimeField(allow_null=True),
})


class ScratchpadView(APIView):
    @extend_schema(responses=ScratchpadOutput)
    def get(self, request: Request, session_id: str) -> Response:
        return Response(scratchpad.read(api_key(request), session_id))

    @extend_schema(request=ScratchpadInput, responses=ScratchpadOutput,
                   description="Replaces the whole scratchpad: {\"items\": [{\"key\", \"value\"}, …]}.")
    def put(self, request: Request, session_id: str) -> Response:
        data = parse_input(ScratchpadInput, request.data)
        return Response(scratchpad.write(api_key(request), session_id, data["items"]))

    @extend_schema(responses=ScratchpadOutput)
    def delete(self, request: Request, session_id: str) -> Response:
        return Response(scratchpad.clear(api_key(request), session_id))


# --- rolling summary ---------------------------------------------------------------------------

RollingOutput = inline_serializer("RollingSummary", {
    "session": serializers.CharField(), "text": serializers.CharField(), "epoch": serializers.IntegerField(),
    "upper_sequence": serializers.IntegerField(), "updated_at": serializers.DateTimeField(allow_null=True),
})


def _rolling(session_id: str, state: summaries.SummaryState) -> dict[str, Any]:
    return {"session": session_id, "text": state.text, "epoch": state.epoch, "upper_sequence": state.upper_sequence,
            "updated_at": iso(state.updated_at) if state.updated_at else None}


class RollingSummaryView(APIView):
    @extend_schema(responses=RollingOutput)
    def get(self, request: Request, session_id: str) -> Response:
        session = get_session(api_key(request), session_id)
        return Response(_rolling(session.external_id, summaries.current_summary(session)))

    @extend_schema(request=SummaryPutInput, responses={200: RollingOutput},
                   description="Compare-and-swap on `expected_epoch`: a stale epoch is a 409 `stale_epoch`.")
    def put(self, request: Request, session_id: str) -> Response:
        data = parse_input(SummaryPutInput, request.data)
        session = get_session(api_key(request), session_id)
        upper = data["upper_sequence"]
        if upper is not None and upper > session.last_sequence:
            raise ApiError("invalid_upper_sequence",
                           f"upper_sequence {upper} is beyond the session's last sequence {session.last_sequence}.",
                           details={"last_sequence": session.last_sequence})
        state = summaries.write_summary(session, text=data["text"], expected_epoch=data["expected_epoch"],
                                        upper_sequence=upper)
        if state is None:
            current = summaries.current_summary(session)
            raise Conflict("stale_epoch", f"The summary is at epoch {current.epoch}, not {data['expected_epoch']}.",
                           {"epoch": current.epoch, "expected_epoch": data["expected_epoch"]})
        return Response(_rolling(session.external_id, state))


# --- summary tree ------------------------------------------------------------------------------


def nodes_visible_to(request: Request) -> Any:
    key = api_key(request)
    return SummaryNode.objects.filter(session__in=sessions_visible_to(key)).select_related("session")


class SummaryNodeListView(APIView):
    @extend_schema(parameters=[SummaryListParams, *PAGE_PARAMS], responses=SummaryNodeOutput(many=True))
    def get(self, request: Request) -> Response:
        filters = query_params(request, SummaryListParams)
        qs = nodes_visible_to(request)
        if filters.get("session"):
            qs = qs.filter(session__external_id=filters["session"])
        if filters.get("level"):
            qs = qs.filter(level=filters["level"])
        rows, meta = paginate(request, qs.order_by("session_id", "-depth", "sequence_start", "id"))
        return Response({**meta, "results": [node_dict(n) for n in rows]})


class SummaryNodeDetailView(APIView):
    @extend_schema(parameters=[SummaryDetailParams], responses=inline_serializer("SummaryNodeExpanded", {
        "node": SummaryNodeOutput(), "children": SummaryNodeOutput(many=True),
        "events": serializers.ListField(child=serializers.DictField()),
        "events_truncated": serializers.BooleanField(),
    }), description="A summary node expanded to its child nodes and its source events.")
    def get(self, request: Request, node_id: int) -> Response:
        params = query_params(request, SummaryDetailParams)
        node = nodes_visible_to(request).filter(pk=node_id).first()
        if node is None:
            raise NotFound(f"Summary {node_id} does not exist.", code="summary_not_found")
        limit = params["events_limit"]
        events = summaries.source_events(node, limit=limit + 1)
        children = list(node.children.select_related("session").order_by("sequence_start"))
        return Response({
            **node_dict(node),
            "node": node_dict(node),
            "children": [node_dict(c) for c in children],
            "events": [event_message(e) for e in events[:limit]],
            "events_truncated": len(events) > limit,
        })


class SessionSummaryTreeView(APIView):
    """POST /sessions/{id}/summary/tree/: queue a build of the session's tree now (the scheduler's
    `summarise` action does it for every due session)."""

    @extend_schema(request=None, parameters=[OpenApiParameter("final", bool)],
                   responses={202: inline_serializer("TreeQueued", {"session": serializers.CharField(),
                                                                    "queued": serializers.BooleanField()})})
    def post(self, request: Request, session_id: str) -> Response:
        session = get_session(api_key(request), session_id)
        final = str(request.query_params.get("final", "")).lower() in ("1", "true", "yes")
        enqueue("memoryhub.memory_tasks.build_summary_tree", session.pk, final)
        return Response({"session": session.external_id, "queued": True}, status=status.HTTP_202_ACCEPTED)
