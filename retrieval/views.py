"""REST views for search, context, browse, stats and documents (S11). Thin: parse, call, serialise."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import api_key, paginate, parse_input, query_params
from retrieval import operations, stats
from retrieval.serializers import (
    BrowseParams,
    ContextInput,
    SearchInput,
    SearchResultOutput,
)


class SearchView(APIView):
    required_scope = "read"

    @extend_schema(request=SearchInput, responses=inline_serializer(
        "SearchResults", {"results": SearchResultOutput(many=True), "mode": serializers.CharField()}))
    def post(self, request: Request) -> Response:
        return Response(operations.search(api_key(request), parse_input(SearchInput, request.data)))


class ContextView(APIView):
    required_scope = "read"

    @extend_schema(request=ContextInput, responses=inline_serializer("Context", {
        "items": serializers.ListField(child=serializers.DictField()), "markdown": serializers.CharField(),
        "tokens": serializers.IntegerField(), "budget": serializers.IntegerField()}))
    def post(self, request: Request) -> Response:
        return Response(operations.context(api_key(request), parse_input(ContextInput, request.data)))


class BrowseView(APIView):
    @extend_schema(
        parameters=[BrowseParams, OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        responses=inline_serializer("BrowsePage", {
            "next": serializers.CharField(allow_null=True),
            "results": serializers.ListField(child=serializers.DictField()),
        }),
    )
    def get(self, request: Request) -> Response:
        rows, meta = paginate(request, operations.browse(api_key(request), query_params(request, BrowseParams)))
        return Response({**meta, "results": [operations.browsed(e) for e in rows]})


class StatsView(APIView):
    @extend_schema(responses=inline_serializer("Stats", {"sessions": serializers.IntegerField()}))
    def get(self, request: Request) -> Response:
        return Response(stats.tenant_stats(api_key(request)))
