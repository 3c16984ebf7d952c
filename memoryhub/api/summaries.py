"""The rolling summary and the summary tree (docs/event-log.md#summaries): serializers, then
views."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import (
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiKey
from memoryhub import summaries
from memoryhub.api import examples as ex
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
from memoryhub.api.placement import session_field
from memoryhub.api.restore import RestoredMessage
from memoryhub.errors import Conflict, Invalid, NotFound
from memoryhub.models import (
    SUMMARY_BUDGET_MAX,
    SUMMARY_BUDGET_MIN,
    SummaryNode,
    iso,
)
from memoryhub.notes import MAX_MEMORY_CHARS
from memoryhub.plumbing import llm
from memoryhub.restore import event_message
from memoryhub.sessions import get_session, get_session_for_write
from memoryhub.tasks import MAINTENANCE, enqueue


class SummaryPutInput(StrictSerializer):
    text = StrictCharField(
        allow_blank=True,
        trim_whitespace=False,
        max_length=MAX_MEMORY_CHARS,
        help_text="The new rolling summary of the conversation so far.",
    )
    expected_epoch = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        default=None,
        help_text=(
            "The epoch the summary was read at: if it moved on since, nothing is written (409 "
            "stale_epoch). Null: write whatever the epoch."
        ),
    )
    upper_sequence = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        default=None,
        help_text="The last event sequence the summary covers (default: the session's last).",
    )


class SummariseInput(StrictSerializer):
    budget = StrictIntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=SUMMARY_BUDGET_MIN,
        max_value=SUMMARY_BUDGET_MAX,
        help_text=(
            "Tokens for this summarisation; default: the session's summary_budget, else the"
            " server's."
        ),
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
        "model": node.model,
        "earliest_at": iso(node.earliest_at) if node.earliest_at else None,
        "latest_at": iso(node.latest_at) if node.latest_at else None,
        "created_at": iso(node.created_at),
    }


class TreeParams(serializers.Serializer):
    # true/false (also 1/0, yes/no); anything else, "null" included, is a 400.
    final = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "True: also summarise the newest, not yet complete stretch (the "
            "conversation has ended)."
        ),
    )


class SummaryNodeOutput(serializers.Serializer):
    """Documents node_dict() for the schema."""

    id = serializers.IntegerField(
        help_text="The node's id (summary_id of the MCP tool summary_expand)."
    )
    level = serializers.ChoiceField(
        choices=["leaf", "branch", "root"],
        help_text="leaf: condenses events; branch and root: condense nodes.",
    )
    depth = serializers.IntegerField(help_text="0 for leaves, one more per level above.")
    text = serializers.CharField(help_text="The summary text.")
    session = session_field("show")
    parent = serializers.IntegerField(
        allow_null=True, help_text="The node above (null: a top node)."
    )
    sequence_start = serializers.IntegerField(help_text="The first event sequence covered.")
    sequence_end = serializers.IntegerField(help_text="The last event sequence covered.")
    source_count = serializers.IntegerField(
        help_text="Events (leaf) or child nodes (branch, root) condensed."
    )
    token_count = serializers.IntegerField(help_text="The text's size in tokens (estimated).")
    summariser = serializers.CharField(help_text="What wrote it (empty: written by hand).")
    model = serializers.CharField(
        help_text=(
            'The model that wrote it: "extractive" (no LLM) or the HTTP '
            "summariser's model name (empty: written by hand)."
        )
    )
    earliest_at = serializers.DateTimeField(
        allow_null=True, help_text="Time of the first event it covers."
    )
    latest_at = serializers.DateTimeField(
        allow_null=True, help_text="Time of the last event it covers."
    )
    created_at = serializers.DateTimeField(help_text="When it was written.")


class SummaryNodeExpanded(SummaryNodeOutput):
    node = SummaryNodeOutput(help_text="The node itself (the same as the top-level fields).")
    children = SummaryNodeOutput(
        many=True, help_text="The nodes it condenses, in order (none for a leaf)."
    )
    events = RestoredMessage(many=True, help_text="The source events it covers, oldest first.")
    events_truncated = serializers.BooleanField(
        help_text="True when there are more than events_limit."
    )


class SummaryListParams(serializers.Serializer):
    session = session_field("filter", of="nodes", required=False)
    level = serializers.ChoiceField(
        choices=["leaf", "branch", "root"], required=False, help_text="Only nodes of this level."
    )


class SummaryDetailParams(serializers.Serializer):
    events_limit = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=1000,
        default=100,
        help_text="At most this many source events (0–1000, default 100).",
    )


RollingOutput = inline_serializer(
    "RollingSummary",
    {
        "session": serializers.CharField(help_text="The session's id."),
        "text": serializers.CharField(help_text="The rolling summary (empty: none yet)."),
        "epoch": serializers.IntegerField(
            help_text="Grows by one with every write: pass it back as expected_epoch."
        ),
        "upper_sequence": serializers.IntegerField(
            help_text="The last event sequence the summary covers."
        ),
        "updated_at": serializers.DateTimeField(
            allow_null=True, help_text="When it was last written."
        ),
    },
)


def _rolling(session_id: str, state: summaries.SummaryState) -> dict[str, Any]:
    return {
        "session": session_id,
        "text": state.text,
        "epoch": state.epoch,
        "upper_sequence": state.upper_sequence,
        "updated_at": iso(state.updated_at) if state.updated_at else None,
    }


class RollingSummaryView(APIView):
    @extend_schema(
        summary="Get the rolling summary",
        description=(
            "A running summary of the conversation, kept by the summariser or by the caller."
        ),
        responses=RollingOutput,
        examples=ex.ROLLING_GET,
    )
    def get(self, request: Request, session_id: str) -> Response:
        session = get_session(api_key(request), session_id)
        return Response(_rolling(session.external_id, summaries.current_summary(session)))

    @extend_schema(
        summary="Write the rolling summary",
        description="Compare-and-swap on `expected_epoch`: a stale epoch is a 409 `stale_epoch`.",
        request=SummaryPutInput,
        responses={200: RollingOutput},
        examples=ex.ROLLING_PUT,
    )
    def put(self, request: Request, session_id: str) -> Response:
        data = parse_input(SummaryPutInput, request.data)
        session = get_session_for_write(api_key(request), session_id, lock=False)
        upper = data["upper_sequence"]
        if upper is not None and upper > session.last_sequence:
            raise Invalid(
                "invalid_upper_sequence",
                f"upper_sequence {upper} is beyond the session's last sequence"
                f" {session.last_sequence}.",
                details={"last_sequence": session.last_sequence},
            )
        state = summaries.write_summary(
            session, text=data["text"], expected_epoch=data["expected_epoch"], upper_sequence=upper
        )
        if state is None:
            current = summaries.current_summary(session)
            raise Conflict(
                "stale_epoch",
                f"The summary is at epoch {current.epoch}, not {data['expected_epoch']}.",
                {"epoch": current.epoch, "expected_epoch": data["expected_epoch"]},
            )
        return Response(_rolling(session.external_id, state))

    @extend_schema(
        summary="Summarise now",
        request=SummariseInput,
        examples=ex.SUMMARISE,
        responses={
            200: inline_serializer(
                "Summarised",
                {
                    "session": serializers.CharField(help_text="The session's id."),
                    "text": serializers.CharField(
                        help_text="The rolling summary after the call (empty: none yet)."
                    ),
                    "epoch": serializers.IntegerField(
                        help_text="Its epoch (grows by one with every write)."
                    ),
                    "upper_sequence": serializers.IntegerField(
                        help_text="The last event sequence it covers."
                    ),
                    "updated_at": serializers.DateTimeField(
                        allow_null=True, help_text="When it was last written."
                    ),
                    "summarised": serializers.BooleanField(
                        help_text="Whether the trigger fired and a summary was written."
                    ),
                    "budget": serializers.IntegerField(
                        help_text="The budget this summarisation used."
                    ),
                    "condensed": serializers.IntegerField(
                        required=False, help_text="Messages condensed into the summary."
                    ),
                    "remaining_tokens": serializers.IntegerField(
                        required=False,
                        help_text=(
                            "When summarised: tokens of the messages the summary still leaves out."
                        ),
                    ),
                    "summariser": serializers.CharField(
                        required=False, help_text="When summarised: what wrote it."
                    ),
                    "messages": serializers.IntegerField(
                        required=False,
                        help_text="When not summarised: messages the summary does not cover yet.",
                    ),
                    "tokens": serializers.IntegerField(
                        required=False, help_text="When not summarised: their tokens (estimated)."
                    ),
                    "stale": serializers.BooleanField(
                        required=False,
                        help_text=(
                            "True when another writer moved the summary on meanwhile: nothing "
                            "was written."
                        ),
                    ),
                },
            )
        },
        description=(
            "Apply the rolling-summary trigger now, with this call's budget (else the session's "
            "summary_budget, else the server default). Past its share of the budget the summary is "
            "condensed, not cut."
        ),
    )
    def post(self, request: Request, session_id: str) -> Response:
        # No body parses as {}; a body that is not an object ([] included) is refused like any
        # other.
        data = parse_input(SummariseInput, request.data)
        session = get_session_for_write(api_key(request), session_id, lock=False)
        with llm.single_attempt():  # the client waits: no retries with backoff on the request path
            outcome = summaries.maybe_summarise(session, budget=data["budget"])
        return Response(
            {**outcome, **_rolling(session.external_id, summaries.current_summary(session))}
        )


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
    @extend_schema(
        summary="List summary nodes",
        operation_id="summaries_list",
        description="Nodes of the summary trees, by session and level.",
        parameters=[SummaryListParams, *PAGE_PARAMS],
        responses=page_of(
            "SummaryNodePage", SummaryNodeOutput(many=True, help_text="This page's nodes.")
        ),
        examples=ex.SUMMARY_LIST,
    )
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
    @extend_schema(
        summary="Expand a summary node",
        description=(
            "A summary node (its fields, and again under `node`) expanded to its child nodes "
            "and the source events it condenses."
        ),
        parameters=[SummaryDetailParams],
        responses=SummaryNodeExpanded,
        examples=ex.SUMMARY_EXPAND,
    )
    def get(self, request: Request, node_id: int) -> Response:
        params = query_params(request, SummaryDetailParams)
        return Response(expand_node(api_key(request), node_id, events_limit=params["events_limit"]))


class SessionSummaryTreeView(APIView):
    """POST /sessions/{id}/summary/tree/: queue a build of the session's tree now (the scheduler's
    `summarise` action does it for every due session)."""

    @extend_schema(
        summary="Build the summary tree now",
        description=(
            "Queues a build of the session's summary tree (the scheduler's summarise action "
            "builds every due session's)."
        ),
        request=None,
        parameters=[TreeParams],
        responses={
            202: inline_serializer(
                "TreeQueued",
                {
                    "session": serializers.CharField(help_text="The session's id."),
                    "queued": serializers.BooleanField(
                        help_text="Always true: the build runs in the background."
                    ),
                },
            )
        },
        examples=ex.SUMMARY_TREE,
    )
    def post(self, request: Request, session_id: str) -> Response:
        session = get_session_for_write(api_key(request), session_id, lock=False)
        final = query_params(request, TreeParams)["final"]
        enqueue("memoryhub.tasks.build_summary_tree", session.pk, final, cluster=MAINTENANCE)
        return Response(
            {"session": session.external_id, "queued": True}, status=status.HTTP_202_ACCEPTED
        )
