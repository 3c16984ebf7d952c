"""Documents (docs/event-log.md#indexing): list, read and delete what POST /documents/ ingested.

A document belongs to a workspace (and to a session when given) and optionally to an end user;
a key sees the documents of its tenant, of its workspace when limited to one, and of its user
(plus shared ones) when limited to a user. Deleting removes the document and its chunks.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from accounts.models import ApiKey
from memoryhub.errors import NotFound
from memoryhub.models import iso
from memoryhub.ownership import refuse_shared
from memoryhub.plumbing.listfilters import Rule, narrowed
from retrieval.memory_indexing import delete_searchable
from retrieval.models import Document


def documents_visible_to(key: ApiKey) -> QuerySet[Document]:
    return Document.objects.visible_to(key).select_related("workspace", "session")


def get_document(key: ApiKey, document_id: int, *, for_update: bool = False) -> Document:
    qs = documents_visible_to(key)
    if for_update:
        qs = qs.select_for_update(of=("self",))
    document = qs.filter(pk=document_id).first()
    if document is None:
        raise NotFound("document_not_found", f"Document {document_id} does not exist.")
    return document


@transaction.atomic
def delete_document(key: ApiKey, document_id: int) -> int:
    """Delete the document and its chunks; returns the number of chunks deleted."""
    document = get_document(key, document_id, for_update=True)
    refuse_shared(key, document.user_id, f"Document {document_id}")
    chunks = delete_searchable(
        kind="document", tenant_id=document.tenant_id, source_id=document.source_id
    )
    document.delete()
    return chunks


DOCUMENT_FILTERS: dict[str, Rule] = {
    "workspace": "workspace__name",
    "session": "session__external_id",
    "user_id": "user_id",
    "source_uri": "source_uri",
}


def documents_filter(key: ApiKey, filters: dict[str, Any]) -> QuerySet[Document]:
    qs = narrowed(documents_visible_to(key), filters, DOCUMENT_FILTERS)
    return qs.order_by("-updated_at", "-id")


def document_dict(document: Document, *, indexed: bool | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": document.pk,
        "source_uri": document.source_uri,
        "content_hash": document.content_hash,
        "workspace": document.workspace.name if document.workspace_id else None,
        "session": document.session.external_id if document.session_id else None,
        "user_id": document.user_id,
        "chunks": document.chunk_count,
        "metadata": document.metadata,
        "created_at": iso(document.created_at),
        "updated_at": iso(document.updated_at),
    }
    if indexed is not None:
        body["indexed"] = indexed
    return body
