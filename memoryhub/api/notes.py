"""Notes (S5): serializers, then views."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import (
    extend_schema,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub import notes
from memoryhub.api.common import (
    StrictSerializer,
    api_key,
    paginate,
    parse_input,
    query_params,
)
from memoryhub.api.fields import (
    META_PARAM,
    NOTE_ID_REGEX,
    PAGE_PARAMS,
    Deleted,
    MetadataField,
    StrictCharField,
    StrictRegexField,
    TagsField,
    content_field,
    non_blank,
    page_of,
)
from memoryhub.errors import Invalid
from memoryhub.models import (
    Note,
)
from memoryhub.searchable import TIERS


class NoteInput(StrictSerializer):
    note_id = StrictRegexField(NOTE_ID_REGEX, required=False, error_messages={
        "invalid": "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."})
    content = content_field(allow_blank=True)
    source = StrictCharField(max_length=100, required=False, allow_blank=True, default="")
    tags = TagsField(required=False, default=list)
    metadata = MetadataField(required=False, default=dict)
    session = StrictCharField(max_length=200, required=False, allow_null=True, default=None)
    workspace = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    channel = StrictCharField(max_length=100, required=False, allow_null=True, default=None)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    scope = serializers.ChoiceField(choices=TIERS, required=False, allow_null=True, default=None)
    importance = serializers.FloatField(required=False, min_value=0.0, max_value=1.0, default=None,
                                        help_text="0–1. When not given: by type (seed 002): correction 0.9, preference 0.8, fact 0.6, task 0.5, otherwise 0.5; the type is the fact's category, or a note's tag.")
    # `id` is accepted as another name of `note_id` (the output carries both).
    id = StrictRegexField(NOTE_ID_REGEX, required=False, error_messages={
        "invalid": "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."})

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        alias = attrs.pop("id", None)
        if alias is not None:
            if attrs.get("note_id") not in (None, alias):
                raise serializers.ValidationError({"id": [serializers.ErrorDetail(
                    "'id' and 'note_id' differ.", code="id_mismatch")]})
            attrs["note_id"] = alias
        return attrs


class NotePutInput(NoteInput):
    """PUT /notes/{note_id}/: the id is in the path."""

    note_id = None  # type: ignore[assignment]
    id = None  # type: ignore[assignment]


class NoteOutput(serializers.ModelSerializer):
    id = serializers.CharField(source="note_id")
    session = serializers.CharField(source="session.external_id", allow_null=True, default=None)
    workspace = serializers.CharField(source="workspace.name", allow_null=True, default=None)
    channel = serializers.CharField(source="channel.name", allow_null=True, default=None)
    scope = serializers.CharField(source="tier")
    tags = TagsField()

    class Meta:
        model = Note
        fields = ["id", "note_id", "content", "source", "tags", "metadata", "session", "workspace", "channel",
                  "scope", "user_id", "importance", "pinned", "created_at", "updated_at"]


class NoteListParams(serializers.Serializer):
    tags = serializers.CharField(required=False)
    source = serializers.CharField(required=False)
    session = serializers.CharField(required=False)
    workspace = serializers.CharField(required=False)
    channel = serializers.CharField(required=False)
    user_id = serializers.CharField(required=False)
    scope = serializers.ChoiceField(choices=TIERS, required=False)
    q = serializers.CharField(required=False)


class NoteListView(APIView):
    @extend_schema(parameters=[NoteListParams, META_PARAM, *PAGE_PARAMS],
                   responses=page_of("NotePage", NoteOutput), operation_id="notes_list")
    def get(self, request: Request) -> Response:
        filters = query_params(request, NoteListParams)
        qs = notes.notes_filter(api_key(request), filters, notes.meta_filters(request.query_params))
        rows, meta = paginate(request, qs)
        return Response({**meta, "results": NoteOutput(rows, many=True).data})

    @extend_schema(request=NoteInput, responses={201: NoteOutput})
    def post(self, request: Request) -> Response:
        data = parse_input(NoteInput, request.data)
        note = notes.create_note(api_key(request), data)
        return Response(NoteOutput(note).data, status=status.HTTP_201_CREATED)


class NoteDetailView(APIView):
    @extend_schema(responses=NoteOutput)
    def get(self, request: Request, note_id: str) -> Response:
        return Response(NoteOutput(notes.get_note(api_key(request), note_id)).data)

    @extend_schema(request=NotePutInput, responses={200: NoteOutput, 201: NoteOutput},
                   description="Replace the note (all its searchable chunks), or create it under this id.")
    def put(self, request: Request, note_id: str) -> Response:
        if not re.fullmatch(NOTE_ID_REGEX, note_id):
            raise Invalid("invalid_note_id", "A note id has 1–200 characters: letters, digits and . _ : @ - "
                           "(not starting with a symbol).")
        data = parse_input(NotePutInput, request.data)
        note, created = notes.put_note(api_key(request), note_id, data)
        return Response(NoteOutput(note).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses=Deleted)
    def delete(self, request: Request, note_id: str) -> Response:
        notes.delete_note(api_key(request), note_id)
        return Response({"id": note_id, "deleted": True})
