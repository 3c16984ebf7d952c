"""Notes (docs/memory-model.md#notes): serializers, then views."""

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
from memoryhub.api import examples as ex
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
    StrictCharField,
    StrictRegexField,
    content_field,
    non_blank,
    page_of,
)
from memoryhub.api.placement import (
    TIER_FALLBACK,
    channel_field,
    metadata_field,
    scope_field,
    session_field,
    tags_field,
    user_field,
    workspace_field,
)
from memoryhub.errors import Invalid
from memoryhub.models import (
    Note,
)


class NoteInput(StrictSerializer):
    note_id = StrictRegexField(
        NOTE_ID_REGEX,
        required=False,
        error_messages={
            "invalid": (
                "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."
            )
        },
        help_text=(
            "The note's id (default: a generated note-…); an existing id is a 409 note_exists."
        ),
    )
    content = content_field(
        allow_blank=True, help_text="The note's text: searchable like every memory."
    )
    source = StrictCharField(
        max_length=100,
        required=False,
        allow_blank=True,
        default="",
        help_text="Where it came from (e.g. agent, user, import).",
    )
    tags = tags_field("place", required=False, default=list)
    metadata = metadata_field("place", required=False, default=dict)
    session = session_field("place", required=False, allow_null=True, default=None)
    workspace = workspace_field("place", required=False, allow_null=True, default=None)
    channel = channel_field("place", required=False, allow_null=True, default=None)
    user_id = user_field(
        "place",
        fallback="the session's end user, else none: shared knowledge",
        required=False,
        allow_blank=True,
        default="",
    )
    scope = scope_field(
        "place", fallback=TIER_FALLBACK, required=False, allow_null=True, default=None
    )
    importance = serializers.FloatField(
        required=False,
        min_value=0.0,
        max_value=1.0,
        default=None,
        help_text=(
            "0–1: weight in recall; 0.85 and above is always recalled. "
            "When not given: by type: correction 0.9, "
            "preference 0.8, fact 0.6, task 0.5, otherwise 0.5; the type "
            "is the fact's category, or a note's tag."
        ),
    )
    # `id` is accepted as another name of `note_id` (the output carries both).
    id = StrictRegexField(
        NOTE_ID_REGEX,
        required=False,
        error_messages={
            "invalid": (
                "Use 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol)."
            )
        },
        help_text="Another name of note_id.",
    )

    def validate_content(self, value: str) -> str:
        return non_blank(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        alias = attrs.pop("id", None)
        if alias is not None:
            if attrs.get("note_id") not in (None, alias):
                raise serializers.ValidationError(
                    {
                        "id": [
                            serializers.ErrorDetail(
                                "'id' and 'note_id' differ.", code="id_mismatch"
                            )
                        ]
                    }
                )
            attrs["note_id"] = alias
        return attrs


class NotePutInput(NoteInput):
    """PUT /notes/{note_id}/: the id is in the path."""

    note_id = None  # type: ignore[assignment]
    id = None  # type: ignore[assignment]


class NotePatchInput(StrictSerializer):
    """PATCH /notes/{note_id}/: only what is sent changes; the rest is kept."""

    content = content_field(
        required=False, allow_blank=True, help_text="A new text (its chunks are replaced)."
    )
    source = StrictCharField(
        max_length=100, required=False, allow_blank=True, help_text="A new source."
    )
    tags = tags_field("change", required=False)
    metadata = metadata_field("change", required=False)
    importance = serializers.FloatField(
        required=False, min_value=0.0, max_value=1.0, help_text="A new importance."
    )

    def validate_content(self, value: str) -> str:
        return non_blank(value)


class NoteOutput(serializers.ModelSerializer):
    id = serializers.CharField(source="note_id", help_text="The note's id.")
    session = session_field("show", source="session.external_id", allow_null=True, default=None)
    workspace = workspace_field("show", source="workspace.name", allow_null=True, default=None)
    channel = channel_field("show", source="channel.name", allow_null=True, default=None)
    scope = scope_field("show", source="tier")
    tags = tags_field("show")

    class Meta:
        model = Note
        fields = [
            "id",
            "note_id",
            "content",
            "source",
            "tags",
            "metadata",
            "session",
            "workspace",
            "channel",
            "scope",
            "user_id",
            "importance",
            "pinned",
            "created_at",
            "updated_at",
        ]
        extra_kwargs = {
            "note_id": {"help_text": "The note's id (the same as id)."},
            "content": {"help_text": "The note's text."},
            "source": {"help_text": "Where it came from."},
            "metadata": {"help_text": metadata_field("show").help_text},
            "user_id": {"help_text": user_field("show").help_text},
            "importance": {"help_text": "0–1: weight in recall."},
            "pinned": {
                "help_text": "Pinned by an operator: importance 1, never pruned, merged or capped."
            },
            "created_at": {"help_text": "When it was created."},
            "updated_at": {"help_text": "When it last changed."},
        }


class NoteListParams(serializers.Serializer):
    tags = tags_field("filter", of="notes", required=False)
    source = serializers.CharField(required=False, help_text="Only notes of this source.")
    session = session_field("filter", of="notes", required=False)
    workspace = workspace_field("filter", of="notes", required=False)
    channel = channel_field("filter", of="notes", required=False)
    user_id = user_field("filter", of="notes", required=False)
    for_user = serializers.CharField(
        required=False,
        max_length=200,
        help_text=(
            "Only the notes this end user may read: theirs and the shared ones "
            "(what a key limited to them lists)."
        ),
    )
    scope = scope_field("filter", of="notes", required=False)
    q = serializers.CharField(required=False, help_text="Text in the content (case-insensitive).")


class NoteListView(APIView):
    @extend_schema(
        summary="List notes",
        operation_id="notes_list",
        description="Newest first, filtered and paged.",
        parameters=[NoteListParams, META_PARAM, *PAGE_PARAMS],
        responses=page_of("NotePage", NoteOutput(many=True, help_text="This page's notes.")),
        examples=ex.NOTE_LIST,
    )
    def get(self, request: Request) -> Response:
        filters = query_params(request, NoteListParams)
        qs = notes.notes_filter(api_key(request), filters, notes.meta_filters(request.query_params))
        rows, meta = paginate(request, qs)
        return Response({**meta, "results": NoteOutput(rows, many=True).data})

    @extend_schema(
        summary="Create a note",
        description=(
            "A free-text memory the agent keeps (a preference, a decision): indexed for "
            "search and context at once."
        ),
        request=NoteInput,
        responses={201: NoteOutput},
        examples=ex.NOTE_CREATE,
    )
    def post(self, request: Request) -> Response:
        data = parse_input(NoteInput, request.data)
        note = notes.create_note(api_key(request), data)
        return Response(NoteOutput(note).data, status=status.HTTP_201_CREATED)


class NoteDetailView(APIView):
    @extend_schema(
        summary="Get a note",
        description="One note, by id, as stored.",
        responses=NoteOutput,
        examples=ex.NOTE_GET,
    )
    def get(self, request: Request, note_id: str) -> Response:
        return Response(NoteOutput(notes.get_note(api_key(request), note_id)).data)

    @extend_schema(
        summary="Replace a note",
        description=(
            "Replace the note (all its searchable chunks), or create it under this id (201)."
        ),
        request=NotePutInput,
        responses={200: NoteOutput, 201: NoteOutput},
        examples=ex.NOTE_PUT,
    )
    def put(self, request: Request, note_id: str) -> Response:
        if not re.fullmatch(NOTE_ID_REGEX, note_id):
            raise Invalid(
                "invalid_note_id",
                "A note id has 1–200 characters: letters, digits and . _ : @ - "
                "(not starting with a symbol).",
            )
        data = parse_input(NotePutInput, request.data)
        note, created = notes.put_note(api_key(request), note_id, data)
        return Response(
            NoteOutput(note).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )

    @extend_schema(
        summary="Change a note",
        description=(
            "Only the fields sent change; its session, scope, owner and the rest stay "
            "(PUT replaces the whole note)."
        ),
        request=NotePatchInput,
        responses=NoteOutput,
        examples=ex.NOTE_PATCH,
    )
    def patch(self, request: Request, note_id: str) -> Response:
        changes = parse_input(NotePatchInput, request.data, partial=True)
        return Response(NoteOutput(notes.patch_note(api_key(request), note_id, changes)).data)

    @extend_schema(
        summary="Delete a note",
        description="Deletes the note; it is no longer found by search or context.",
        responses={200: Deleted},
        examples=ex.NOTE_DELETE,
    )
    def delete(self, request: Request, note_id: str) -> Response:
        notes.delete_note(api_key(request), note_id)
        return Response({"id": note_id, "deleted": True})
