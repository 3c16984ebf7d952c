"""REST views for search, context, browse, stats and documents. Thin: parse, call, serialise."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import api_key, paginate, parse_input, query_params
from memoryhub.api.fields import PAGE_PARAMS, page_of
from retrieval import api_examples as ex
from retrieval import operations, stats
from retrieval.output_serializers import (
    BrowsedEventOutput,
    ContextItemOutput,
    SearchResultOutput,
    SessionGroupOutput,
    StatsOutput,
    SynthesisOutput,
)
from retrieval.serializers import BrowseParams, ContextInput, SearchInput


class SearchView(APIView):
    required_scope = "read"

    @extend_schema(
        summary="Search memory",
        description=(
            "Messages, notes, facts, summaries and documents ranked by meaning and words, confined"
            " to the key's tenant (workspace, user) and narrowed by scope and filters."
        ),
        request=SearchInput,
        responses=inline_serializer(
            "SearchResults",
            {
                "mode": serializers.CharField(help_text="The mode used."),
                "fusion": serializers.CharField(help_text="The fusion used (hybrid mode)."),
                "scope": serializers.CharField(help_text="The scope searched."),
                "profile": serializers.CharField(help_text="The ranking profile used."),
                "group_by": serializers.CharField(
                    required=False, help_text="Only when the request grouped: session."
                ),
                "sessions": SessionGroupOutput(
                    many=True,
                    required=False,
                    help_text="Only with group_by session: the conversations, best first.",
                ),
                "results": SearchResultOutput(
                    many=True,
                    help_text=(
                        "The matches, best first (grouped: conversation by "
                        "conversation, in the order of `sessions`)."
                    ),
                ),
                "synthesis": SynthesisOutput(
                    required=False,
                    help_text=(
                        "Only with synthesize: the model's answer from "
                        "the results, or why there is none."
                    ),
                ),
            },
        ),
        examples=ex.SEARCH,
    )
    def post(self, request: Request) -> Response:
        return Response(operations.search(api_key(request), parse_input(SearchInput, request.data)))


class ContextView(APIView):
    required_scope = "read"

    @extend_schema(
        summary="Build the context block",
        description=(
            "What to put in front of the next prompt: critical memories (importance 0.85 or more,"
            " or pinned: always, in a reserved part of the budget), the session's rolling summary"
            " and the summaries of what its recent messages no longer show (in at most 30% of the"
            " budget), its recent messages, other important memories and those relevant to `query`,"
            " each only where it applies (the same scope and owner rule as search), deduplicated"
            " and fitted into `budget` tokens, as items and as a Markdown block. Empty (no"
            " Markdown) when nothing applies."
        ),
        request=ContextInput,
        responses=inline_serializer(
            "Context",
            {
                "session": serializers.CharField(
                    allow_null=True, help_text="The session, if one was given."
                ),
                "user_id": serializers.CharField(
                    allow_null=True,
                    help_text=(
                        "Whose memories were recalled "
                        "(null: the whole tenant's; empty: a "
                        "session nobody owns, with shared "
                        "knowledge)."
                    ),
                ),
                "budget": serializers.IntegerField(help_text="The token budget."),
                "tokens": serializers.IntegerField(help_text="Tokens the items take (estimated)."),
                "items": ContextItemOutput(many=True, help_text="The picked memories."),
                "markdown": serializers.CharField(
                    help_text=(
                        "The block to inject: '## Relevant Memory' with sections, "
                        "each line dated to the minute in UTC ('user, said "
                        "2026-12-07 14:05') (empty when nothing was picked)."
                    )
                ),
            },
        ),
        examples=ex.CONTEXT,
    )
    def post(self, request: Request) -> Response:
        return Response(
            operations.context(api_key(request), parse_input(ContextInput, request.data))
        )


class BrowseView(APIView):
    @extend_schema(
        summary="Browse events",
        description=(
            "Stored messages across sessions in time order (oldest first), filtered and paged."
        ),
        parameters=[BrowseParams, *PAGE_PARAMS],
        responses=page_of(
            "BrowsePage", BrowsedEventOutput(many=True, help_text="This page's events.")
        ),
        examples=ex.BROWSE,
    )
    def get(self, request: Request) -> Response:
        rows, meta = paginate(
            request, operations.browse(api_key(request), query_params(request, BrowseParams))
        )
        return Response({**meta, "results": [operations.browsed(e) for e in rows]})


class StatsView(APIView):
    @extend_schema(
        summary="Memory statistics",
        description="Counts for the key's tenant (or its workspace, for a workspace-limited key).",
        responses=StatsOutput,
        examples=ex.STATS,
    )
    def get(self, request: Request) -> Response:
        return Response(stats.tenant_stats(api_key(request)))
