"""Documents: POST and GET /documents/, GET and DELETE /documents/{id}/."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import Channel
from memoryhub.api.common import StrictSerializer, api_key, paginate, parse_input, query_params
from memoryhub.api.fields import PAGE_PARAMS, page_of
from memoryhub.api.placement import (
    channel_field,
    metadata_field,
    session_field,
    tags_field,
    user_field,
    workspace_field,
)
from memoryhub.ownership import check_owner
from memoryhub.sessions import get_session, resolve_user, resolve_workspace
from retrieval import documents
from retrieval import documents_api_examples as ex
from retrieval.memory_indexing import ingest_document


class DocumentInput(StrictSerializer):
    source_uri = serializers.CharField(
        max_length=2000,
        help_text="Where the text comes from (a URL, a path): "
        "ingesting the same URI again replaces it.",
    )
    text = serializers.CharField(
        max_length=2_000_000,
        trim_whitespace=False,
        help_text="The document's text, chunked and indexed for search.",
    )
    session = session_field("place", required=False, allow_null=True, default=None)
    workspace = workspace_field("place", required=False, allow_null=True, default=None)
    channel = channel_field("place", required=False, allow_null=True, default=None)
    metadata = metadata_field("place", required=False, default=dict)
    tags = tags_field(
        "place",
        cls=serializers.ListField,
        child=serializers.CharField(max_length=64),
        max_length=16,
        required=False,
        default=list,
    )
    user_id = user_field(
        "place",
        fallback="the session's end user, else none: shared knowledge",
        required=False,
        allow_blank=True,
        default="",
    )

    def validate_text(self, text: str) -> str:
        if not text.strip():
            raise serializers.ValidationError("Document text is empty.", code="blank")
        return text


class DocumentOutput(serializers.Serializer):
    """Documents document_dict() for the schema."""

    id = serializers.IntegerField(help_text="The document's id.")
    source_uri = serializers.CharField(help_text="Where the text comes from.")
    content_hash = serializers.CharField(
        help_text="SHA-256 of the text: an unchanged re-ingest is skipped."
    )
    workspace = workspace_field("show", allow_null=True)
    session = session_field("show", allow_null=True)
    user_id = user_field("show")
    chunks = serializers.IntegerField(help_text="How many search chunks it was split into.")
    metadata = metadata_field("show")
    created_at = serializers.DateTimeField(help_text="When it was first ingested.")
    updated_at = serializers.DateTimeField(help_text="When it last changed.")
    indexed = serializers.BooleanField(
        required=False, help_text="POST only: false when the content was unchanged."
    )


class DocumentListParams(serializers.Serializer):
    workspace = workspace_field("filter", of="documents", required=False)
    session = session_field("filter", of="documents", required=False)
    user_id = user_field("filter", of="documents", required=False)
    source_uri = serializers.CharField(required=False, help_text="Only documents with this URI.")


class DocumentListView(APIView):
    @extend_schema(
        summary="List documents",
        operation_id="documents_list",
        description="The key's documents, filtered and paged.",
        parameters=[DocumentListParams, *PAGE_PARAMS],
        responses=page_of(
            "DocumentPage", DocumentOutput(many=True, help_text="This page's documents.")
        ),
        examples=ex.DOCUMENT_LIST,
    )
    def get(self, request: Request) -> Response:
        filters = query_params(request, DocumentListParams)
        rows, meta = paginate(request, documents.documents_filter(api_key(request), filters))
        return Response({**meta, "results": [documents.document_dict(d) for d in rows]})

    @extend_schema(
        summary="Ingest a document",
        examples=ex.DOCUMENT_CREATE,
        request=DocumentInput,
        responses={201: DocumentOutput, 200: DocumentOutput},
        description="Index a document. It is identified by its workspace, session (when given), "
        "owner and source_uri: the same URI elsewhere is another document. "
        "Unchanged content is not indexed again (200, indexed false).",
    )
    def post(self, request: Request) -> Response:
        data = parse_input(DocumentInput, request.data)
        key = api_key(request)
        session = get_session(key, data["session"]) if data["session"] else None
        user = resolve_user(key, data["user_id"] or None)
        if session is not None and session.user_id:  # a user's document may sit in a shared session
            check_owner(user, session.user_id, f"Session {session.external_id!r}")
        workspace = session.workspace if session else resolve_workspace(key, data["workspace"])
        channel = (
            session.channel
            if session
            else (
                Channel.get_named(workspace, data["channel"])
                if data["channel"] and workspace
                else None
            )
        )
        result = ingest_document(
            tenant_id=key.tenant_id,
            source_uri=data["source_uri"],
            text=data["text"],
            workspace_id=workspace.pk if workspace else None,
            channel_id=channel.pk if channel else None,
            session=session,
            metadata=data["metadata"],
            tags=data["tags"],
            user_id=user or (session.user_id if session else ""),
        )
        return Response(
            documents.document_dict(result.document, indexed=result.indexed),
            status=status.HTTP_201_CREATED if result.indexed else status.HTTP_200_OK,
        )


class DocumentDetailView(APIView):
    @extend_schema(
        summary="Get a document",
        description="One document, by id, with its text and metadata.",
        responses=DocumentOutput,
        examples=ex.DOCUMENT_GET,
    )
    def get(self, request: Request, document_id: int) -> Response:
        return Response(
            documents.document_dict(documents.get_document(api_key(request), document_id))
        )

    @extend_schema(
        summary="Delete a document",
        responses={
            200: inline_serializer(
                "DocumentDeleted",
                {
                    "id": serializers.IntegerField(help_text="The deleted document's id."),
                    "deleted": serializers.BooleanField(
                        help_text="Always true: a missing document is a 404 instead."
                    ),
                    "chunks_deleted": serializers.IntegerField(
                        help_text="Search chunks deleted with it."
                    ),
                },
            )
        },
        description="Delete the document and its search chunks.",
        examples=ex.DOCUMENT_DELETE,
    )
    def delete(self, request: Request, document_id: int) -> Response:
        chunks = documents.delete_document(api_key(request), document_id)
        return Response({"id": document_id, "deleted": True, "chunks_deleted": chunks})
