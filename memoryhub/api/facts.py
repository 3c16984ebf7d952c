"""Facts (docs/memory-model.md#facts): serializers, then views."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import facts, notes
from memoryhub.api import examples as ex
from memoryhub.api.common import (
    StrictSerializer,
    api_key,
    paginate,
    parse_input,
    parse_params,
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
from memoryhub.errors import Invalid
from memoryhub.models import (
    Fact,
    iso,
)
from memoryhub.searchable import LIFETIMES, TIERS


class FactInput(StrictSerializer):
    content = content_field(allow_blank=True, help_text="The fact as a short statement, e.g. 'Prefers aisle seats.'")
    category = StrictCharField(max_length=100, required=False, default="general",
                               help_text="A grouping of facts (e.g. travel, profile, preferences).")
    key = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                          help_text="With category, what the fact is about (e.g. seat): a fact with the same "
                                    "scope, category and key is updated (200) instead of duplicated.")
    scope = serializers.ChoiceField(choices=TIERS, required=False, default="workspace",
                                    help_text="How widely it applies: conversation (needs session), channel, "
                                              "workspace or account.")
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False, default="long_term",
                                       help_text="long_term; short_term facts decay faster in ranking; "
                                                 "conversation facts end with their session.")
    source = StrictCharField(max_length=100, required=False, default="agent",
                             help_text="Who stated it (agent, user, extractor, …).")
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0, default=None,
                                        help_text="0–1: weight in recall; 0.85 and above is always recalled. "
                                                  "When not given: by type: correction 0.9, "
                                                  "preference 0.8, fact 0.6, task 0.5, otherwise 0.5; the type "
                                                  "is the fact's category, or a note's tag.")
    tags = TagsField(required=False, default=list, help_text="Labels (lowercased), usable as search filters.")
    metadata = MetadataField(required=False, default=dict, help_text="Any JSON object of the caller's.")
    session = StrictCharField(max_length=200, required=False, allow_null=True, default=None,
                              help_text="The session it belongs to (scope conversation).")
    source_session = StrictCharField(max_length=200, required=False, allow_null=True, default=None,
                                     help_text="The session it was learnt in (provenance only).")
    workspace = StrictCharField(max_length=100, required=False, allow_null=True, default=None,
                                help_text="The workspace it belongs to (default: the key's, else default).")
    channel = StrictCharField(max_length=100, required=False, allow_null=True, default=None,
                              help_text="The channel it belongs to (scope channel).")
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                              help_text="The end user it is about (default: the session's, else shared).")
    external_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="",
                                  help_text="An id of your choosing, unique per end user and workspace: "
                                            "writing it again in the same workspace updates that fact "
                                            "(whatever its key); in another workspace it is another fact.")

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactPatchInput(StrictSerializer):
    content = content_field(required=False, allow_blank=True, help_text="A new statement.")
    category = StrictCharField(max_length=100, required=False, help_text="A new category.")
    key = StrictCharField(max_length=200, required=False, allow_blank=True, help_text="A new key.")
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False, help_text="A new lifetime.")
    source = StrictCharField(max_length=100, required=False, help_text="A new source.")
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0, help_text="A new importance.")
    tags = TagsField(required=False, help_text="New labels (replace the old ones).")
    metadata = MetadataField(required=False, help_text="A new metadata object (replaces the old one).")
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True, help_text="A new owner.")
    external_id = StrictCharField(max_length=200, required=False, allow_blank=True,
                                  help_text="A new client-chosen id (empty: none).")

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate_category(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("Category must not be empty.", code="empty_category")
        return value.strip()


class FactOutput(serializers.ModelSerializer):
    scope = serializers.CharField(source="tier", help_text="How widely it applies.")
    access_count = serializers.SerializerMethodField(help_text="How often it was read or recalled.")
    accessed_at = serializers.SerializerMethodField(help_text="When it was last read or recalled.")
    session = serializers.CharField(source="session.external_id", allow_null=True, default=None,
                                    help_text="The session it belongs to, if any.")
    source_session = serializers.CharField(source="source_session.external_id", allow_null=True, default=None,
                                           help_text="The session it was learnt in, if known.")
    workspace = serializers.CharField(source="workspace.name", allow_null=True, default=None,
                                      help_text="Its workspace (null: account-wide).")
    channel = serializers.CharField(source="channel.name", allow_null=True, default=None,
                                    help_text="Its channel, if any.")
    tags = TagsField(help_text="Its labels.")
    valid_to = serializers.SerializerMethodField(help_text="Until when this content was the fact's: null for "
                                                           "the current version (set only in lists `as_of`).")

    class Meta:
        model = Fact
        fields = ["id", "external_id", "content", "category", "key", "scope", "lifetime", "source", "importance",
                  "pinned", "access_count", "accessed_at", "tags", "metadata", "session", "source_session",
                  "workspace", "channel", "user_id", "created_at", "updated_at", "valid_from", "valid_to"]
        extra_kwargs = {
            "id": {"help_text": "The fact's id."},
            "external_id": {"help_text": "Your id for it, if you gave one."},
            "valid_from": {"help_text": "Since when this content is the fact's (its current version began)."},
            "content": {"help_text": "The statement."},
            "category": {"help_text": "Its category."},
            "key": {"help_text": "Its key within the category (empty: none)."},
            "lifetime": {"help_text": "long_term, short_term or conversation."},
            "source": {"help_text": "Who stated it."},
            "importance": {"help_text": "0–1: weight in recall."},
            "pinned": {"help_text": "Pinned by an operator: importance 1, never pruned, merged or capped."},
            "metadata": {"help_text": "The caller's JSON object."},
            "user_id": {"help_text": "The end user it is about (empty: shared)."},
            "created_at": {"help_text": "When it was first stored."},
            "updated_at": {"help_text": "When it last changed."},
        }

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_valid_to(self, fact: Fact) -> str | None:
        valid_to = getattr(fact, "version_valid_to", None)
        return iso(valid_to) if valid_to is not None else None

    def get_access_count(self, fact: Fact) -> int:
        return facts.uses(fact)

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_accessed_at(self, fact: Fact) -> str | None:
        at = facts.last_used(fact)
        return iso(at) if at is not None else None


class FactUpserted(FactOutput):
    created = serializers.SerializerMethodField(help_text="True when a new fact was stored, false when the fact "
                                                          "with this scope, category and key was updated.")

    class Meta(FactOutput.Meta):
        fields = [*FactOutput.Meta.fields, "created"]

    def get_created(self, fact: Fact) -> bool:
        return bool(self.context.get("created"))


class FactListParams(serializers.Serializer):
    scope = serializers.ChoiceField(choices=TIERS, required=False, help_text="Only facts of this scope.")
    category = serializers.CharField(required=False, help_text="Only facts of this category.")
    key = serializers.CharField(required=False, help_text="Only facts with this key.")
    lifetime = serializers.ChoiceField(choices=LIFETIMES, required=False, help_text="Only facts of this lifetime.")
    source = serializers.CharField(required=False, help_text="Only facts of this source.")
    tags = serializers.CharField(required=False, help_text="Comma-separated tags the facts all have.")
    q = serializers.CharField(required=False, help_text="Text in the content, key or category.")
    session = serializers.CharField(required=False, help_text="Facts of this session or learnt in it.")
    workspace = serializers.CharField(required=False, help_text="Only facts of this workspace.")
    channel = serializers.CharField(required=False, help_text="Only facts of this channel.")
    user_id = serializers.CharField(required=False, help_text="Only this end user's facts.")
    external_id = serializers.CharField(required=False, help_text="Only facts with this client-chosen id.")
    as_of = serializers.DateTimeField(required=False, help_text="The facts as they stood at this moment (ISO "
                                                                "8601): each with the version true then.")


class FactVersionOutput(serializers.Serializer):
    fact_id = serializers.IntegerField(help_text="The fact this is a version of.")
    content = serializers.CharField(help_text="What the fact said.")
    category = serializers.CharField(help_text="Its category then.")
    key = serializers.CharField(help_text="Its key then.")
    user_id = serializers.CharField(help_text="Its owner (empty: shared).")
    source = serializers.CharField(help_text="Who made this version (agent, user, extractor, consolidation, …).")
    change = serializers.CharField(help_text="What opened it: created, updated, merged or imported.")
    valid_from = serializers.DateTimeField(help_text="Since when it was true.")
    valid_to = serializers.DateTimeField(allow_null=True, help_text="Until when (null: it is the current version).")
    closed_by = serializers.CharField(help_text="What closed it: updated, merged, deleted (empty while current).")
    current = serializers.SerializerMethodField(help_text="Whether this is the fact's current version.")

    def get_current(self, version: Any) -> bool:
        return version.valid_to is None


class FactListView(APIView):
    @extend_schema(summary="List facts", operation_id="facts_list",
                   description="Newest first, filtered and paged.",
                   parameters=[FactListParams, META_PARAM, *PAGE_PARAMS],
                   responses=page_of("FactPage", FactOutput(many=True, help_text="This page's facts.")),
                   examples=ex.FACT_LIST)
    def get(self, request: Request) -> Response:
        filters = query_params(request, FactListParams)
        if filters.get("as_of"):
            return self._as_of(request, filters)
        qs = facts.facts_filter(api_key(request), filters, notes.meta_filters(request.query_params))
        rows, meta = paginate(request, qs)
        return Response({**meta, "results": FactOutput(rows, many=True).data})

    def _as_of(self, request: Request, filters: dict[str, Any]) -> Response:
        """Each fact as it stood then: the version true at as_of (a fact deleted since included)."""
        unsupported = sorted({"tags", "session", "workspace", "channel", "lifetime", "source", "external_id"}
                             & set(filters)
                             | {k for k in request.query_params if k.startswith("meta.")})
        if unsupported:
            raise Invalid("as_of_filter_unsupported",
                          "With as_of, facts are filtered by scope, category, key, user_id and q only.",
                          {"fields": unsupported})
        versions, meta = paginate(request, facts.versions_as_of(api_key(request), filters["as_of"], filters))
        return Response({**meta, "results": FactOutput(facts.as_they_stood(api_key(request), versions), many=True).data})

    @extend_schema(summary="Store a fact (upsert)",
                   description="An existing (scope, category, key) is updated (200), otherwise created (201).",
                   request=FactInput, responses={201: FactUpserted, 200: FactUpserted}, examples=ex.FACT_UPSERT)
    def post(self, request: Request) -> Response:
        data = parse_input(FactInput, request.data)
        # One transaction: the answer is read back in it, so a write never commits behind a 4xx.
        with transaction.atomic():
            fact, created = facts.upsert_fact(api_key(request), data, given=set(request.data))
            body = FactUpserted(facts.get_fact(api_key(request), fact.pk), context={"created": created}).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class FactHistoryView(APIView):
    @extend_schema(summary="A fact's history", operation_id="facts_history",
                   description="Every version of the fact's content, oldest first, with when each was true "
                               "and who changed it. A deleted fact's history stays until its user is forgotten.",
                   responses={200: inline_serializer("FactHistory", {
                       "fact_id": serializers.IntegerField(help_text="The fact."),
                       "versions": FactVersionOutput(many=True, help_text="Oldest first."),
                   })}, examples=ex.FACT_HISTORY)
    def get(self, request: Request, fact_id: int) -> Response:
        versions = facts.fact_history(api_key(request), fact_id)
        return Response({"fact_id": fact_id, "versions": FactVersionOutput(versions, many=True).data})


class FactDetailView(APIView):
    @extend_schema(summary="Get a fact", description="One fact, by id: its current content, category, key and owner (its earlier versions: GET /facts/{fact_id}/history/).", responses=FactOutput, examples=ex.FACT_GET)
    def get(self, request: Request, fact_id: int) -> Response:
        return Response(FactOutput(facts.get_fact(api_key(request), fact_id)).data)

    @extend_schema(summary="Change a fact", description="Only the fields given change.",
                   request=FactPatchInput, responses=FactOutput, examples=ex.FACT_PATCH)
    def patch(self, request: Request, fact_id: int) -> Response:
        changes = parse_input(FactPatchInput, request.data, partial=True)
        with transaction.atomic():
            fact = facts.update_fact(api_key(request), fact_id, changes)
            return Response(FactOutput(facts.get_fact(api_key(request), fact.pk)).data)

    @extend_schema(summary="Delete a fact", description="Deletes the fact and its history; it is no longer found by search or context.", responses={200: Deleted}, examples=ex.FACT_DELETE)
    def delete(self, request: Request, fact_id: int) -> Response:
        facts.delete_fact(api_key(request), fact_id)
        return Response({"id": str(fact_id), "deleted": True})


class FactByExternalIdParams(serializers.Serializer):
    user_id = serializers.CharField(required=False, allow_blank=True, max_length=200,
                                    help_text="The fact's owner, when several users' facts have this id "
                                              "(empty: the shared one).")
    workspace = serializers.CharField(required=False, allow_blank=True, max_length=100,
                                      help_text="The fact's workspace, when facts in several workspaces have "
                                                "this id (empty: the account-wide one).")


class ExternalIdPath(serializers.Serializer):
    external_id = serializers.CharField(max_length=200)


def _fact_id(request: Request, external_id: str) -> int:
    external_id = parse_params(ExternalIdPath, {"external_id": external_id})["external_id"]
    selector = query_params(request, FactByExternalIdParams)
    return facts.fact_id_by_external_id(api_key(request), external_id, user_id=selector.get("user_id"),
                                        workspace=selector.get("workspace"))


EXTERNAL_ID_PARAM = OpenApiParameter("external_id", str, OpenApiParameter.PATH,
                                     description="Your own id for the fact (the external_id it was stored with).")
BY_EXTERNAL_ID = ("The fact with this client-chosen id among those the key may see; when other users or "
                  "workspaces use the same id, name `user_id` and `workspace` (else 409 ambiguous_external_id).")


class FactByExternalIdView(APIView):
    @extend_schema(summary="Get a fact by its client id", operation_id="facts_by_external_id_retrieve",
                   description=BY_EXTERNAL_ID, parameters=[EXTERNAL_ID_PARAM, FactByExternalIdParams],
                   responses=FactOutput, examples=ex.FACT_BY_EXTERNAL_ID_GET)
    def get(self, request: Request, external_id: str) -> Response:
        return Response(FactOutput(facts.get_fact(api_key(request), _fact_id(request, external_id))).data)

    @extend_schema(summary="Change a fact by its client id", operation_id="facts_by_external_id_partial_update",
                   description=f"{BY_EXTERNAL_ID} Only the fields given change.",
                   parameters=[EXTERNAL_ID_PARAM, FactByExternalIdParams], request=FactPatchInput,
                   responses=FactOutput, examples=ex.FACT_BY_EXTERNAL_ID_PATCH)
    def patch(self, request: Request, external_id: str) -> Response:
        changes = parse_input(FactPatchInput, request.data, partial=True)
        with transaction.atomic():
            fact = facts.update_fact(api_key(request), _fact_id(request, external_id), changes)
            return Response(FactOutput(facts.get_fact(api_key(request), fact.pk)).data)

    @extend_schema(summary="Delete a fact by its client id", operation_id="facts_by_external_id_destroy",
                   description=BY_EXTERNAL_ID, parameters=[EXTERNAL_ID_PARAM, FactByExternalIdParams],
                   responses={200: Deleted}, examples=ex.FACT_BY_EXTERNAL_ID_DELETE)
    def delete(self, request: Request, external_id: str) -> Response:
        fact_id = _fact_id(request, external_id)
        facts.delete_fact(api_key(request), fact_id)
        return Response({"id": str(fact_id), "deleted": True})
