"""POST /api/v1/consolidation/: consolidate the key's tenant, by default as a dry run that says
what would be deleted, merged and promoted, in words (admin scope)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import StrictSerializer, api_key, parse_input
from memoryhub.ownership import require_tenant_wide
from retrieval import api_examples as ex
from retrieval.lifecycle.consolidation import run_consolidation


class ConsolidationInput(StrictSerializer):
    dry_run = serializers.BooleanField(
        required=False,
        default=True,
        help_text=(
            "true (default): change nothing and report what a run would do; false: run it "
            "(deletions are held for review on a tenant's first destructive run)."
        ),
    )


class ConsolidationView(APIView):
    required_scope = "admin"

    @extend_schema(
        summary="Consolidate memory",
        examples=ex.CONSOLIDATE,
        request=ConsolidationInput,
        responses=inline_serializer(
            "Consolidation",
            {
                "dry_run": serializers.BooleanField(
                    help_text="True when nothing was changed (a report only)."
                ),
                "report_id": serializers.IntegerField(
                    allow_null=True, help_text="The stored consolidation report (null: none kept)."
                ),
                "counts": serializers.DictField(
                    child=serializers.IntegerField(),
                    help_text=(
                        "Memories scored, by relevance band, and what was (or "
                        "would be) done with them: promoted, pruned, merged, capped, "
                        "compressed, held_for_review; tenants consolidated."
                    ),
                ),
                "deletions": serializers.ListField(
                    child=serializers.DictField(),
                    help_text=(
                        "Each deletion (or held deletion): step, kind, id (the "
                        "memory's own id: note id, fact id, event id, summary or "
                        "document id), chunk_id, text, user_id, session, held, and "
                        "for a merge merged_into."
                    ),
                ),
                "review": serializers.DictField(
                    allow_null=True,
                    help_text=(
                        "null, or the deletions held for an operator's review: {held_for_review,"
                        " reason (e.g. the first destructive run of this tenant waits for an"
                        " operator's review), per_tenant, review_at (the admin page where they are"
                        " approved or rejected), how}."
                    ),
                ),
            },
        ),
        description="Consolidate the key's tenant: promote, prune, merge, cap, compress.",
    )
    def post(self, request: Request) -> Response:
        data = parse_input(ConsolidationInput, request.data)
        key = api_key(request)
        require_tenant_wide(key, "Consolidation")
        result = run_consolidation(tenant_id=key.tenant_id, dry_run=data["dry_run"])
        return Response(
            {
                "dry_run": result["dry_run"],
                "report_id": result["report_id"],
                "counts": result["counts"],
                "deletions": result["deletions"],
                "review": result["review"],
            }
        )
