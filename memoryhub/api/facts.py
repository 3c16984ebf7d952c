"""Facts (S5): serializers, then views."""

from __future__ import annotations

from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import facts, notes
from memoryhub.api.common import (
    StrictSerializer,
    api_key,
    paginate,
    parse_input,
    query_params,
)
from memoryhub.api.fields import (
    META_PARAM,
    PAGE_PARAMS,
    Deleted,
    MetadataField,
    StrictCharField,
    TagsField,
    content_field,
    non_blank,
    page_of,
)
from memoryhub.models import (
    Fact,
    iso,
)
from memoryhub.searchable import LIFETIMES, TIERS


class FactInput(StrictSerializer):
    content = content_field(allow_blank=True)
    category = StrictCharField(max_length=100, required=False, default="general")
    key = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    scope = serializers.ChoiceField(choices=TIERS, required=False, default="workspace")
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False, default="long_term")
    source = StrictCharField(max_length=100, required=False, default="agent")
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0, default=None,
                                        help_text="0–1. When not given: by type (seed 002): correction 0.9, preference 0.8, fact 0.6, task 0.5, otherwise 0.5; the type is the fact's category, or a note's tag.")
    tags = TagsField(required=False, default=list)
    metadata = MetadataField(required=False, default=dict)
    session = StrictCharField(max_length=200, required=False, allow_null=True, default=None)
    source_session = StrictCharField(max_length=200, required=False, allow_null=True, default=None)
    workspace = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    channel = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactPatchInput(StrictSerializer):
    content = content_field(required=False, allow_blank=True)
    category = StrictCharField(max_length=100, required=False)
    key = StrictCharField(max_length=200, required=False, allow_blank=True)
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False)
    source = StrictCharField(max_length=100, required=False)
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
    tags = TagsField(required=False)
    metadata = MetadataField(required=False)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True)

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactOutput(serializers.ModelSerializer):
    scope = serializers.CharField(source="tier")
    access_count = serializers.SerializerMethodField()
    accessed_at = serializers.SerializerMethodField()
    session = serializers.CharField(source="session.external_id", allow_null=True, default=None)
    source_session = serializers.CharField(source="source_session.external_id", allow_null=True, default=None)
    workspace = serializers.CharField(source="workspace.name", allow_null=True, default=None)
    channel = serializers.CharField(source="channel.name", allow_null=True, default=None)
    tags = TagsField()

    class Meta:
        model = Fact
        fields = ["id", "content", "category", "key", "scope", "lifetime", "source", "importance", "pinned",
                  "access_count", "accessed_at", "tags", "metadata", "session", "source_session",
                  "workspace", "channel", "user_id", "created_at", "updated_at"]

    def get_access_count(self, fact: Fact) -> int:
        return fact.access_count + (getattr(fact, "chunk_access_count", None) or 0)

    def get_accessed_at(self, fact: Fact) -> str | None:
        times = [t for t in (fact.accessed_at, getattr(fact, "chunk_accessed_at", None)) if t is not None]
        return iso(max(times)) if times else None


class FactListParams(serializers.Serializer):
    scope = serializers.ChoiceField(choices=TIERS, required=False)
    category = serializers.CharField(required=False)
    key = serializers.CharField(required=False)
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False)
    source = serializers.CharField(required=False)
    tags = serializers.CharField(required=False)
    q = serializers.CharField(required=False)
    session = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    channel = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)


class FactListView(APIView):
    @extend_schema(parameters=[FactListParams, META_PARAM, *PAGE_PARAMS],
                   responses=page_of("FactPage", FactOutput), operation_id="facts_list")
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
