"""Memories other than messages (notes, facts, summaries, documents) → chunks, with their full-text
vectors, in the writing transaction; a fact's older versions kept, closed when the new one began.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Case, F, Max, Sum, TextField, Value, When

from memoryhub.models import Session
from memoryhub.searchable import Searchable
from retrieval.chunking import chunk_text, content_hash
from retrieval.embedding import request_embedding
from retrieval.indexing import chunk_sizes
from retrieval.models import SUPERSEDED_UNEMBEDDED, Chunk, ChunkAccess, Document, chunk_metadata


@transaction.atomic
def index_searchable(searchable: Searchable) -> list[int]:
    """Replace every chunk of (kind, source_id) with chunks of the memory's current text. A
    versioned memory's (a fact's) chunks of an older version are kept, closed when the new version
    began, so that a search as of a past moment finds what was true then
    (docs/memory-model.md#fact-history).

    The memory's uses (its current chunks' ChunkAccess rows) go over to its new chunks: re-deriving
    a fact because its tags or importance changed, or a new version of it, is still the memory
    search returned so often; its count is not reset to 0 (the admin, the API and the
    explorer read this one count)."""
    carried = _current_access(searchable)
    if searchable.version_from is not None:
        retire_searchable(
            kind=searchable.kind,
            tenant_id=searchable.tenant_id,
            source_id=searchable.source_id,
            at=searchable.version_from,
            older_than=searchable.version_from,
        )
    delete_searchable(
        kind=searchable.kind, tenant_id=searchable.tenant_id, source_id=searchable.source_id
    )
    max_chars, overlap = chunk_sizes()
    tags = sorted({str(t).strip().lower()[:64] for t in searchable.tags if str(t).strip()})
    chunks = [
        Chunk(
            tenant_id=searchable.tenant_id,
            kind=searchable.kind,
            source_id=searchable.source_id,
            session_id=searchable.session_id,
            workspace_id=searchable.workspace_id,
            channel_id=searchable.channel_id,
            tier=searchable.tier,
            lifetime=searchable.lifetime,
            user_id=searchable.user_id,
            tags=tags,
            sequence_start=searchable.sequence_start,
            sequence_end=searchable.sequence_end,
            text=piece.text,
            content_hash=piece.content_hash,
            importance=searchable.importance,
            created_at=searchable.created_at,
            metadata=chunk_metadata(
                **searchable.metadata,
                tags=tags,
                chunk_index=index,
                created_at=searchable.created_at.isoformat(),
            ),
        )
        for index, piece in enumerate(
            chunk_text(searchable.text, max_chars=max_chars, overlap=overlap)
        )
    ]
    ids = [c.pk for c in Chunk.objects.bulk_create(chunks)]
    if ids and carried is not None:  # to the first chunk: the memory's sum stays what it was
        ChunkAccess.objects.create(chunk_id=ids[0], access_count=carried[0], accessed_at=carried[1])
    request_embedding(ids)
    return ids


def _current_access(searchable: Searchable) -> tuple[int, datetime | None] | None:
    """The accesses of the memory's current chunks, summed, and the latest (None: never used)."""
    row = ChunkAccess.objects.filter(
        chunk__tenant_id=searchable.tenant_id,
        chunk__kind=searchable.kind,
        chunk__source_id=searchable.source_id,
        chunk__valid_to__isnull=True,
    ).aggregate(n=Sum("access_count"), at=Max("accessed_at"))
    return (int(row["n"]), row["at"]) if row["n"] or row["at"] else None


def delete_searchable(*, kind: str, tenant_id: int, source_id: str) -> int:
    """Delete the memory's current chunks (a fact's past versions stay: retire_searchable)."""
    deleted, _ = Chunk.objects.filter(tenant_id=tenant_id, kind=kind, source_id=source_id).delete()
    return deleted


def retire_searchable(
    *, kind: str, tenant_id: int, source_id: str, at: datetime, older_than: datetime | None = None
) -> int:
    """Close the memory's current chunks at `at` (those written before `older_than`, when given):
    left out of searches from then on, found by a search as of an earlier moment."""
    current = Chunk.objects.filter(tenant_id=tenant_id, kind=kind, source_id=source_id)
    if older_than is not None:
        current = current.filter(created_at__lt=older_than)
    # A version superseded before its vector was made is no work for the embed lane
    # (ChunkQuerySet.embedding_waiting): it is set aside, and says why.
    return current.update(
        valid_to=at,
        embedding_error=Case(
            When(embedding__isnull=True, then=Value(SUPERSEDED_UNEMBEDDED)),
            default=F("embedding_error"),
            output_field=TextField(),
        ),
    )


@dataclass
class IngestResult:
    document: Document
    indexed: bool  # False when the content hash was unchanged
    chunk_ids: list[int]


@transaction.atomic
def ingest_document(
    *,
    tenant_id: int,
    source_uri: str,
    text: str,
    workspace_id: int | None = None,
    channel_id: int | None = None,
    session: Session | None = None,
    metadata: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    user_id: str = "",
) -> IngestResult:
    """Index a document; unchanged content (same hash for the same document) is not re-indexed.

    A document is identified by its workspace, session, owner and URI (see Document).
    """
    digest = content_hash(text)
    document = _locked_document(tenant_id, workspace_id, session, user_id, source_uri)
    if document.pk is not None and document.content_hash == digest:
        return IngestResult(document, False, [])
    document.content_hash = digest
    document.metadata = metadata or {}
    document.touch()
    document.save()
    searchable = Searchable(
        kind="document",
        source_id=document.source_id,
        tenant_id=tenant_id,
        text=text,
        created_at=document.updated_at,
        workspace_id=workspace_id,
        channel_id=channel_id,
        session_id=session.pk if session else None,
        tier="conversation" if session else "workspace",
        lifetime="long_term",
        tags=tuple(tags or ()),
        user_id=user_id,
        metadata={"document_id": document.pk, "source_uri": source_uri, **(metadata or {})},
    )
    ids = index_searchable(searchable)
    document.chunk_count = len(ids)
    document.save(update_fields=["chunk_count"])
    return IngestResult(document, True, ids)


def _locked_document(
    tenant_id: int, workspace_id: int | None, session: Session | None, user_id: str, source_uri: str
) -> Document:
    """The stored document with this identity, locked; or a new, still unsaved one. Two first
    ingests of one document race on its unique constraint: the loser takes the winner's row."""
    identity = {
        "tenant_id": tenant_id,
        "workspace_id": workspace_id,
        "session": session,
        "user_id": user_id,
        "source_uri": source_uri,
    }
    for _ in range(2):
        document = Document.objects.select_for_update().filter(**identity).first()
        if document is not None:
            return document
        try:
            with transaction.atomic():
                return Document.objects.create(**identity, content_hash="")
        except IntegrityError:
            continue
    # unreachable in practice
    raise RuntimeError(f"document {source_uri!r} could be neither read nor created")
