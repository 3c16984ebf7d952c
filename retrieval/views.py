"""REST views for search, context, browse, stats and documents (S11). Thin: parse, call, serialise."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiKey, Channel
from memoryhub import summaries
from memoryhub.api.common import api_key, paginate, parse_input, query_params
from memoryhub.api.summaries import node_dict
from memoryhub.errors import Invalid
from memoryhub.models import SummaryNode
from memoryhub.restore import event_message
from memoryhub.sessions import get_session, resolve_user, resolve_workspace
from retrieval import stats
from retrieval.context import assemble_context
from retrieval.scoping import build_search_request
from retrieval.search import SearchError, run_search
from retrieval.serializers import (
    BrowseParams,
    ContextInput,
    SearchInput,
    SearchResultOutput,
)


def _search_or_400(req: Any) -> Any:
    try:
        return run_search(req)
    except SearchError as exc:
        raise Invalid(exc.code, exc.message) from None


EXPAND_MESSAGES = 20


def expand_summaries(key: ApiKey, results: list[dict[str, Any]]) -> None:
    """Give each summary hit its child summaries and the messages it condenses (seed 002)."""
    ids = [r["metadata"].get("summary_id") for r in results if r["kind"] == "summary"]
    nodes = {n.pk: n for n in SummaryNode.objects.visible_to(key).filter(pk__in=[i for i in ids if i])}
    for result in results:
        node = nodes.get(result["metadata"].get("summary_id")) if result["kind"] == "summary" else None
        if node is None:
            continue
        children = node.children.select_related("session").order_by("sequence_start")
        result["expanded"] = {
            "children": [node_dict(c) for c in children],
            "messages": [event_message(e) for e in summaries.source_events(node, limit=EXPAND_MESSAGES)],
        }


class SearchView(APIView):
    required_scope = "read"

    @extend_schema(request=SearchInput, responses=inline_serializer(
        "SearchResults", {"results": SearchResultOutput(many=True), "mode": serializers.CharField()}))
    def post(self, request: Request) -> Response:
        data = parse_input(SearchInput, request.data)
        expand = data.pop("expand")
        key = api_key(request)
        req = build_search_request(key, data)
        results = [h.as_dict() for h in _search_or_400(req)]
        if expand:
            expand_summaries(key, results)
        return Response({
            "mode": req.mode, "fusion": req.fusion, "scope": req.scope, "profile": req.profile,
            "results": results,
        })


class ContextView(APIView):
    required_scope = "read"

    @extend_schema(request=ContextInput, responses=inline_serializer("Context", {
        "items": serializers.ListField(child=serializers.DictField()), "markdown": serializers.CharField(),
        "tokens": serializers.IntegerField(), "budget": serializers.IntegerField()}))
    def post(self, request: Request) -> Response:
        data = parse_input(ContextInput, request.data)
        key = api_key(request)
        session = get_session(key, data["session"]) if data["session"] else None
        req = build_search_request(key, {
            "query": data["query"], "session": data["session"], "user_id": data["user_id"],
            "scope": data["scope"] or ("workspace" if session else None),
            "top_k": data["top_k"], "tags": data["tags"], "kinds": data["kinds"],
        })
        assembled = assemble_context(session=session, req=req, budget=data["budget"])
        return Response({
            "session": session.external_id if session else None, "user_id": req.user_id,
            "budget": assembled.budget, "tokens": assembled.tokens,
            "items": [i.as_dict() for i in assembled.items], "markdown": assembled.markdown,
        })


class BrowseView(APIView):
    @extend_schema(
        parameters=[BrowseParams, OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        responses=inline_serializer("BrowsePage", {
            "next": serializers.CharField(allow_null=True),
            "results": serializers.ListField(child=serializers.DictField()),
        }),
    )
    def get(self, request: Request) -> Response:
        params = query_params(request, BrowseParams)
        key = api_key(request)
        qs = stats.events_for_browse(key)
        if params.get("session"):
            qs = qs.filter(session=get_session(key, params["session"]))
        if params.get("workspace"):
            workspace = resolve_workspace(key, params["workspace"], create=False)
            qs = qs.filter(session__workspace=workspace) if workspace else qs.none()
        if params.get("channel"):
            qs = qs.filter(session__channel__in=Channel.objects.filter(tenant_id=key.tenant_id, name=params["channel"]))
        if params.get("agent"):
            qs = qs.filter(session__agent=params["agent"])
        user = resolve_user(key, params.get("user_id"))
        if user is not None:
            qs = qs.owned_by(user)
        if params.get("role"):
            qs = qs.filter(role=params["role"])
        if params.get("since"):
            qs = qs.filter(created_at__gte=params["since"])
        if params.get("until"):
            qs = qs.filter(created_at__lt=params["until"])
        rows, meta = paginate(request, qs.order_by("created_at", "session_id", "sequence"))
        results = [{**e.as_dict(), "session": e.session.external_id, "channel": e.session.channel.name} for e in rows]
        return Response({**meta, "results": results})


class StatsView(APIView):
    @extend_schema(responses=inline_serializer("Stats", {"sessions": serializers.IntegerField()}))
    def get(self, request: Request) -> Response:
        return Response(stats.tenant_stats(api_key(request)))
