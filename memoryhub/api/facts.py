"""Facts (docs/memory-model.md#facts): the views (their serializers:
memoryhub/api/facts_serializers.py)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import facts, notes
from memoryhub.api import examples as ex
from memoryhub.api.common import (
    api_key,
    paginate,
    parse_input,
    parse_params,
    query_params,
)
from memoryhub.api.facts_serializers import (
    FactInput,
    FactListParams,
    FactOutput,
    FactPatchInput,
    FactUpserted,
    FactVersionOutput,
)
from memoryhub.api.fields import (
    META_PARAM,
    PAGE_PARAMS,
    Deleted,
    page_of,
)
from memoryhub.errors import Invalid


class FactListView(APIView):
    @extend_schema(
        summary="List facts",
        operation_id="facts_list",
        description="Newest first, filtered and paged.",
        parameters=[FactListParams, META_PARAM, *PAGE_PARAMS],
        responses=page_of("FactPage", FactOutput(many=True, help_text="This page's facts.")),
        examples=ex.FACT_LIST,
    )
    def get(self, request: Request) -> Response:
        filters = query_params(request, FactListParams)
        if filters.get("as_of"):
            return self._as_of(request, filters)
        qs = facts.facts_filter(api_key(request), filters, notes.meta_filters(request.query_params))
        rows, meta = paginate(request, qs)
        return Response({**meta, "results": FactOutput(rows, many=True).data})

    def _as_of(self, request: Request, filters: dict[str, Any]) -> Response:
        """Each fact as it stood then: the version true at as_of (a fact deleted since included)."""
        unsupported = sorted(
            {"tags", "session", "workspace", "channel", "lifetime", "source", "external_id"}
            & set(filters)
            | {k for k in request.query_params if k.startswith("meta.")}
        )
        if unsupported:
            raise Invalid(
                "as_of_filter_unsupported",
                "With as_of, facts are filtered by scope, category, key, user_id and q only.",
                {"fields": unsupported},
            )
        versions, meta = paginate(
            request, facts.versions_as_of(api_key(request), filters["as_of"], filters)
        )
        return Response(
            {
                **meta,
                "results": (
                    FactOutput(facts.as_they_stood(api_key(request), versions), many=True).data
                ),
            }
        )

    @extend_schema(
        summary="Store a fact (upsert)",
        description="An existing (scope, category, key) is updated (200), otherwise created (201).",
        request=FactInput,
        responses={201: FactUpserted, 200: FactUpserted},
        examples=ex.FACT_UPSERT,
    )
    def post(self, request: Request) -> Response:
        data = parse_input(FactInput, request.data)
        # One transaction: the answer is read back in it, so a write never commits behind a 4xx.
        with transaction.atomic():
            fact, created = facts.upsert_fact(api_key(request), data, given=set(request.data))
            body = FactUpserted(
                facts.get_fact(api_key(request), fact.pk), context={"created": created}
            ).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class FactHistoryView(APIView):
    @extend_schema(
        summary="A fact's history",
        operation_id="facts_history",
        description=(
            "Every version of the fact's content, oldest first, with when each was true "
            "and who changed it. A deleted fact's history stays until its user is forgotten."
        ),
        responses={
            200: inline_serializer(
                "FactHistory",
                {
                    "fact_id": serializers.IntegerField(help_text="The fact."),
                    "versions": FactVersionOutput(many=True, help_text="Oldest first."),
                },
            )
        },
        examples=ex.FACT_HISTORY,
    )
    def get(self, request: Request, fact_id: int) -> Response:
        versions = facts.fact_history(api_key(request), fact_id)
        return Response(
            {"fact_id": fact_id, "versions": FactVersionOutput(versions, many=True).data}
        )


class FactDetailView(APIView):
    @extend_schema(
        summary="Get a fact",
        description=(
            "One fact, by id: its current content, category, key and owner (its earlier versions:"
            " GET /facts/{fact_id}/history/)."
        ),
        responses=FactOutput,
        examples=ex.FACT_GET,
    )
    def get(self, request: Request, fact_id: int) -> Response:
        return Response(FactOutput(facts.get_fact(api_key(request), fact_id)).data)

    @extend_schema(
        summary="Change a fact",
        description="Only the fields given change.",
        request=FactPatchInput,
        responses=FactOutput,
        examples=ex.FACT_PATCH,
    )
    def patch(self, request: Request, fact_id: int) -> Response:
        changes = parse_input(FactPatchInput, request.data, partial=True)
        with transaction.atomic():
            fact = facts.update_fact(api_key(request), fact_id, changes)
            return Response(FactOutput(facts.get_fact(api_key(request), fact.pk)).data)

    @extend_schema(
        summary="Delete a fact",
        description="Deletes the fact and its history; it is no longer found by search or context.",
        responses={200: Deleted},
        examples=ex.FACT_DELETE,
    )
    def delete(self, request: Request, fact_id: int) -> Response:
        facts.delete_fact(api_key(request), fact_id)
        return Response({"id": str(fact_id), "deleted": True})


class FactByExternalIdParams(serializers.Serializer):
    user_id = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text=(
            "The fact's owner, when several users' facts have this id (empty: the shared one)."
        ),
    )
    workspace = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text=(
            "The fact's workspace, when facts in several workspaces have "
            "this id (empty: the account-wide one)."
        ),
    )


class ExternalIdPath(serializers.Serializer):
    external_id = serializers.CharField(max_length=200)


def _fact_id(request: Request, external_id: str) -> int:
    external_id = parse_params(ExternalIdPath, {"external_id": external_id})["external_id"]
    selector = query_params(request, FactByExternalIdParams)
    return facts.fact_id_by_external_id(
        api_key(request),
        external_id,
        user_id=selector.get("user_id"),
        workspace=selector.get("workspace"),
    )


EXTERNAL_ID_PARAM = OpenApiParameter(
    "external_id",
    str,
    OpenApiParameter.PATH,
    description="Your own id for the fact (the external_id it was stored with).",
)
BY_EXTERNAL_ID = (
    "The fact with this client-chosen id among those the key may see; when other users or "
    "workspaces use the same id, name `user_id` and `workspace` (else 409 ambiguous_external_id)."
)


class FactByExternalIdView(APIView):
    @extend_schema(
        summary="Get a fact by its client id",
        operation_id="facts_by_external_id_retrieve",
        description=BY_EXTERNAL_ID,
        parameters=[EXTERNAL_ID_PARAM, FactByExternalIdParams],
        responses=FactOutput,
        examples=ex.FACT_BY_EXTERNAL_ID_GET,
    )
    def get(self, request: Request, external_id: str) -> Response:
        return Response(
            FactOutput(facts.get_fact(api_key(request), _fact_id(request, external_id))).data
        )

    @extend_schema(
        summary="Change a fact by its client id",
        operation_id="facts_by_external_id_partial_update",
        description=f"{BY_EXTERNAL_ID} Only the fields given change.",
        parameters=[EXTERNAL_ID_PARAM, FactByExternalIdParams],
        request=FactPatchInput,
        responses=FactOutput,
        examples=ex.FACT_BY_EXTERNAL_ID_PATCH,
    )
    def patch(self, request: Request, external_id: str) -> Response:
        changes = parse_input(FactPatchInput, request.data, partial=True)
        with transaction.atomic():
            fact = facts.update_fact(api_key(request), _fact_id(request, external_id), changes)
            return Response(FactOutput(facts.get_fact(api_key(request), fact.pk)).data)

    @extend_schema(
        summary="Delete a fact by its client id",
        operation_id="facts_by_external_id_destroy",
        description=BY_EXTERNAL_ID,
        parameters=[EXTERNAL_ID_PARAM, FactByExternalIdParams],
        responses={200: Deleted},
        examples=ex.FACT_BY_EXTERNAL_ID_DELETE,
    )
    def delete(self, request: Request, external_id: str) -> Response:
        fact_id = _fact_id(request, external_id)
        facts.delete_fact(api_key(request), fact_id)
        return Response({"id": str(fact_id), "deleted": True})
