"""The rolling summary and the summary tree (S6): serializers, then views."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import (
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiKey
from memoryhub import llm, summaries
from memoryhub.api.common import (
    StrictSerializer,
    api_key,
    paginate,
    parse_input,
    query_params,
)
from memoryhub.api.fields import (
    PAGE_PARAMS,
    StrictCharField,
    StrictIntegerField,
    page_of,
)
from memoryhub.errors import Conflict, Invalid, NotFound
from memoryhub.models import (
    SUMMARY_BUDGET_MAX,
    SUMMARY_BUDGET_MIN,
    SummaryNode,
    iso,
)
from memoryhub.restore import event_message
from memoryhub.sessions import get_session
from memoryhub.tasks import MAINTENANCE, enqueue


class SummaryPutInput(StrictSerializer):
    text = StrictCharField(allow_blank=True, trim_whitespace=False, max_length=settings.MEMORYHUB_MAX_MEMORY_CHARS)
    expected_epoch = serializers.IntegerField(required=False, allow_null=True, min_value=0, default=None)
    upper_sequence = serializers.IntegerField(required=False, allow_null=True, min_value=0, default=None)


class SummariseInput(StrictSerializer):
    budget = StrictIntegerField(
        required=False, allow_null=True, default=None, min_value=SUMMARY_BUDGET_MIN, max_value=SUMMARY_BUDGET_MAX,
        help_text="Tokens for this summarisation; default: the session's summary_budget, else the server's.",
    )


def node_dict(node: SummaryNode) -> dict[str, Any]:
    return {
        "id": node.pk,
        "level": node.level,
        "depth": node.depth,
        "text": node.text,
        "session": node.session.external_id,
        "parent": node.parent_id,
        "sequence_start": node.sequence_start,
        "sequence_end": node.sequence_end,
        "source_count": node.source_count,
        "token_count": node.token_count,
        "summariser": node.summariser,
        "created_at": iso(node.created_at),
    }


class TreeParams(serializers.Serializer):
    # true/false (also 1/0, yes/no); anything else, "null" included, is a 400.
    final = serializers.BooleanField(required=False, default=False)


class SummaryNodeOutput(serializers.Serializer):
    """Documents node_dict() for the schema."""

    id = serializers.IntegerField()
    level = serializers.ChoiceField(choices=["leaf", "branch", "root"])
    depth = serializers.IntegerField()
    text = serializers.CharField()
    session = serializers.CharField()
    parent = serializers.IntegerField(allow_null=True)
    sequence_start = serializers.IntegerField()
    sequence_end = serializers.IntegerField()
    source_count = serializers.IntegerField()
    token_count = serializers.IntegerField()
    summariser = serializers.CharField()
    created_at = serializers.DateTimeField()


class SummaryListParams(serializers.Serializer):
    session = serializers.CharField(required=False)
    level = serializers.ChoiceField(choices=["leaf", "branch", "root"], required=False)


class SummaryDetailParams(serializers.Serializer):
    events_limit = serializers.IntegerField(required=False, min_value=0, max_value=1000, default=100)


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
            raise Invalid("invalid_upper_sequence",
                           f"upper_sequence {upper} is beyond the session's last sequence {session.last_sequence}.",
                           details={"last_sequence": session.last_sequence})
        state = summaries.write_summary(session, text=data["text"], expected_epoch=data["expected_epoch"],
                                        upper_sequence=upper)
        if state is None:
            current = summaries.current_summary(session)
            raise Conflict("stale_epoch", f"The summary is at epoch {current.epoch}, not {data['expected_epoch']}.",
                           {"epoch": current.epoch, "expected_epoch": data["expected_epoch"]})
        return Response(_rolling(session.external_id, state))


    @extend_schema(
        request=SummariseInput,
        responses={200: inline_serializer("Summarised", {
            "session": serializers.CharField(), "text": serializers.CharField(), "epoch": serializers.IntegerField(),
            "upper_sequence": serializers.IntegerField(), "updated_at": serializers.DateTimeField(allow_null=True),
            "summarised": serializers.BooleanField(help_text="Whether the trigger fired and a summary was written."),
            "budget": serializers.IntegerField(help_text="The budget this summarisation used."),
            "condensed": serializers.IntegerField(required=False, help_text="Messages condensed into the summary."),
        })},
        description="Apply the rolling-summary trigger now, with this call's budget (else the session's "
                    "summary_budget, else the server default). Past its share of the budget the summary is "
                    "condensed, not cut.",
    )
    def post(self, request: Request, session_id: str) -> Response:
        data = parse_input(SummariseInput, request.data or {})
        session = get_session(api_key(request), session_id)
        with llm.single_attempt():  # the client waits: no retries with backoff on the request path
            outcome = summaries.maybe_summarise(session, budget=data["budget"])
        return Response({**outcome, **_rolling(session.external_id, summaries.current_summary(session))})


def nodes_visible_to(request: Request) -> Any:
    key = api_key(request)
    return SummaryNode.objects.visible_to(key).select_related("session")


def expand_node(key: ApiKey, node_id: int, *, events_limit: int) -> dict[str, Any]:
    """A summary node with its child nodes and (up to `events_limit` of) its source events: the
    body of GET /summaries/{id}/ and of the MCP tool summary_expand."""
    node = SummaryNode.objects.visible_to(key).select_related("session").filter(pk=node_id).first()
    if node is None:
        raise NotFound("summary_not_found", f"Summary {node_id} does not exist.")
    events = summaries.source_events(node, limit=events_limit + 1)
    children = list(node.children.select_related("session").order_by("sequence_start"))
    return {
        **node_dict(node),
        "node": node_dict(node),
        "children": [node_dict(c) for c in children],
        "events": [event_message(e) for e in events[:events_limit]],
        "events_truncated": len(events) > events_limit,
    }


class SummaryNodeListView(APIView):
    @extend_schema(parameters=[SummaryListParams, *PAGE_PARAMS],
                   responses=page_of("SummaryNodePage", SummaryNodeOutput), operation_id="summaries_list")
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
        return Response(expand_node(api_key(request), node_id, events_limit=params["events_limit"]))


class SessionSummaryTreeView(APIView):
    """POST /sessions/{id}/summary/tree/: queue a build of the session's tree now (the scheduler's
    `summarise` action does it for every due session)."""

    @extend_schema(request=None, parameters=[TreeParams],
                   responses={202: inline_serializer("TreeQueued", {"session": serializers.CharField(),
                                                                    "queued": serializers.BooleanField()})})
    def post(self, request: Request, session_id: str) -> Response:
        session = get_session(api_key(request), session_id)
        final = query_params(request, TreeParams)["final"]
        enqueue("memoryhub.tasks.build_summary_tree", session.pk, final, cluster=MAINTENANCE)
        return Response({"session": session.external_id, "queued": True}, status=status.HTTP_202_ACCEPTED)
