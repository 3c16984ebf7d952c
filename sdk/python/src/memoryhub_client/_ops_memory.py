"""Notes, facts and documents (requests only); the mem0-style calls on either: _ops_mem0.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from memoryhub_client._core import (
    Call,
    as_is,
    body,
    page_of,
    path,
    query,
)
from memoryhub_client.types import (
    Deleted,
    Document,
    DocumentDeleted,
    Fact,
    FactHistory,
    FactUpserted,
    Note,
    Page,
)

Tier = Literal["conversation", "channel", "workspace", "account"]
Lifetime = Literal["long_term", "short_term", "conversation"]

# --- notes ---------------------------------------------------------------------------------------


def _note_fields(**fields: Any) -> dict[str, Any]:
    tags = fields.get("tags")
    if tags is not None:
        fields["tags"] = list(tags)
    return body(**fields)


def create_note(
    content: str,
    *,
    note_id: str | None = None,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    session: str | None = None,
    workspace: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    scope: Tier | None = None,
    importance: float | None = None,
) -> Call[Note]:
    """Create a note (POST /notes/); a taken `note_id` is a ConflictError (`note_exists`)."""
    return Call(
        "POST",
        "notes/",
        as_is,
        json=_note_fields(
            content=content,
            note_id=note_id,
            source=source,
            tags=tags,
            metadata=metadata,
            session=session,
            workspace=workspace,
            channel=channel,
            user_id=user_id,
            scope=scope,
            importance=importance,
        ),
    )


def put_note(
    note_id: str,
    content: str,
    *,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    session: str | None = None,
    workspace: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    scope: Tier | None = None,
    importance: float | None = None,
) -> Call[Note]:
    """Replace the note, or create it under this id (PUT /notes/{note_id}/)."""
    return Call(
        "PUT",
        path("notes", note_id),
        as_is,
        json=_note_fields(
            content=content,
            source=source,
            tags=tags,
            metadata=metadata,
            session=session,
            workspace=workspace,
            channel=channel,
            user_id=user_id,
            scope=scope,
            importance=importance,
        ),
        idempotent=True,
    )


def update_note(
    note_id: str,
    *,
    content: str | None = None,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    importance: float | None = None,
) -> Call[Note]:
    """Change only the given fields (PATCH /notes/{note_id}/); the rest of the note stays."""
    return Call(
        "PATCH",
        path("notes", note_id),
        as_is,
        json=_note_fields(
            content=content,
            source=source,
            tags=tags,
            metadata=metadata,
            importance=importance,
        ),
        idempotent=True,
    )


def list_notes(
    *,
    tags: Sequence[str] | str | None = None,
    source: str | None = None,
    session: str | None = None,
    workspace: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    for_user: str | None = None,
    scope: Tier | None = None,
    q: str | None = None,
    meta: Mapping[str, str] | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[Note]]:
    """Notes (GET /notes/); `meta={"topic": "billing"}` filters on metadata equality. `user_id`:
    only that end user's; `for_user`: those that user may read (theirs and the shared ones)."""
    return Call(
        "GET",
        "notes/",
        page_of,
        params=query(
            meta,
            tags=tags,
            source=source,
            session=session,
            workspace=workspace,
            channel=channel,
            user_id=user_id,
            for_user=for_user,
            scope=scope,
            q=q,
            limit=limit,
            offset=offset,
        ),
        idempotent=True,
    )


def get_note(note_id: str) -> Call[Note]:
    return Call("GET", path("notes", note_id), as_is, idempotent=True)


def delete_note(note_id: str) -> Call[Deleted]:
    return Call("DELETE", path("notes", note_id), as_is, idempotent=True)


# --- facts ---------------------------------------------------------------------------------------


def upsert_fact(
    content: str,
    *,
    category: str | None = None,
    key: str | None = None,
    scope: Tier | None = None,
    lifetime: Lifetime | None = None,
    source: str | None = None,
    importance: float | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    session: str | None = None,
    source_session: str | None = None,
    workspace: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    external_id: str | None = None,
) -> Call[FactUpserted]:
    """Create a fact, or update the user's fact with the same `external_id` (your own id for it)
    or the same (scope, category, key) (POST /facts/); `created` in the result says which. A
    changed content keeps the old one in the fact's history (fact_history)."""
    return Call(
        "POST",
        "facts/",
        as_is,
        json=_note_fields(
            content=content,
            category=category,
            key=key,
            scope=scope,
            lifetime=lifetime,
            source=source,
            importance=importance,
            tags=tags,
            metadata=metadata,
            session=session,
            source_session=source_session,
            workspace=workspace,
            channel=channel,
            user_id=user_id,
            external_id=external_id,
            # keyed: a resend updates the same fact; keyless: a second fact
        ),
        idempotent=bool(key or external_id),
    )


def list_facts(
    *,
    scope: Tier | None = None,
    category: str | None = None,
    key: str | None = None,
    lifetime: Lifetime | None = None,
    source: str | None = None,
    tags: Sequence[str] | str | None = None,
    q: str | None = None,
    session: str | None = None,
    workspace: str | None = None,
    channel: str | None = None,
    user_id: str | None = None,
    external_id: str | None = None,
    as_of: datetime | str | None = None,
    meta: Mapping[str, str] | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[Fact]]:
    """Facts, newest first; `as_of`: as they stood at that moment (each with its version true then);
    `external_id`: only the facts with that id of yours."""
    return Call(
        "GET",
        "facts/",
        page_of,
        params=query(
            meta,
            scope=scope,
            category=category,
            key=key,
            lifetime=lifetime,
            source=source,
            tags=tags,
            q=q,
            session=session,
            workspace=workspace,
            channel=channel,
            user_id=user_id,
            external_id=external_id,
            as_of=as_of.isoformat() if isinstance(as_of, datetime) else as_of,
            limit=limit,
            offset=offset,
        ),
        idempotent=True,
    )


def fact_history(fact_id: int) -> Call[FactHistory]:
    """Every version of the fact's content, oldest first, with when each was true (GET
    /facts/{id}/history/)."""
    return Call("GET", path("facts", fact_id, "history"), as_is, idempotent=True)


def get_fact(fact_id: int) -> Call[Fact]:
    return Call("GET", path("facts", fact_id), as_is, idempotent=True)


def update_fact(
    fact_id: int,
    *,
    content: str | None = None,
    category: str | None = None,
    key: str | None = None,
    lifetime: Lifetime | None = None,
    source: str | None = None,
    importance: float | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    user_id: str | None = None,
    external_id: str | None = None,
) -> Call[Fact]:
    """Change the given fields (PATCH /facts/{id}/); a new content opens a new version."""
    return Call(
        "PATCH",
        path("facts", fact_id),
        as_is,
        json=_note_fields(
            content=content,
            category=category,
            key=key,
            lifetime=lifetime,
            source=source,
            importance=importance,
            tags=tags,
            metadata=metadata,
            user_id=user_id,
            external_id=external_id,
        ),
        idempotent=True,
    )


def delete_fact(fact_id: int) -> Call[Deleted]:
    return Call("DELETE", path("facts", fact_id), as_is, idempotent=True)


def get_fact_by_external_id(
    external_id: str, *, user_id: str | None = None, workspace: str | None = None
) -> Call[Fact]:
    """The fact with your id `external_id` (GET /facts/by-external-id/{external_id}/). When other
    users or workspaces use the same id, name the fact's `user_id` and `workspace` (else a
    ConflictError with code ambiguous_external_id)."""
    return Call(
        "GET",
        path("facts", "by-external-id", external_id),
        as_is,
        params=query(user_id=user_id, workspace=workspace),
        idempotent=True,
    )


def update_fact_by_external_id(
    external_id: str,
    *,
    user_id: str | None = None,
    workspace: str | None = None,
    content: str | None = None,
    category: str | None = None,
    key: str | None = None,
    lifetime: Lifetime | None = None,
    source: str | None = None,
    importance: float | None = None,
    tags: Sequence[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> Call[Fact]:
    """Change the given fields of the fact with your id `external_id`; `user_id` and `workspace`
    only choose the fact (as in get_fact_by_external_id). A new content opens a new version."""
    return Call(
        "PATCH",
        path("facts", "by-external-id", external_id),
        as_is,
        params=query(user_id=user_id, workspace=workspace),
        json=_note_fields(
            content=content,
            category=category,
            key=key,
            lifetime=lifetime,
            source=source,
            importance=importance,
            tags=tags,
            metadata=metadata,
        ),
        idempotent=True,
    )


def delete_fact_by_external_id(
    external_id: str, *, user_id: str | None = None, workspace: str | None = None
) -> Call[Deleted]:
    """Delete the fact with your id `external_id` (its history stays until its user is
    forgotten)."""
    return Call(
        "DELETE",
        path("facts", "by-external-id", external_id),
        as_is,
        params=query(user_id=user_id, workspace=workspace),
        idempotent=True,
    )


# --- documents -----------------------------------------------------------------------------------


def add_document(
    source_uri: str,
    text: str,
    *,
    session: str | None = None,
    workspace: str | None = None,
    channel: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    user_id: str | None = None,
) -> Call[Document]:
    """Index a document (POST /documents/); unchanged text is not indexed again (`indexed` false).
    `user_id`: the end user it belongs to (default: the session's, else shared)."""
    return Call(
        "POST",
        "documents/",
        as_is,
        json=_note_fields(
            source_uri=source_uri,
            text=text,
            session=session,
            workspace=workspace,
            channel=channel,
            metadata=metadata,
            tags=tags,
            user_id=user_id,
        ),
        idempotent=True,
    )  # the content hash makes a resend a no-op


def list_documents(
    *,
    session: str | None = None,
    source_uri: str | None = None,
    user_id: str | None = None,
    workspace: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[Document]]:
    """Documents, newest first (GET /documents/)."""
    return Call(
        "GET",
        "documents/",
        page_of,
        params=query(
            session=session,
            source_uri=source_uri,
            user_id=user_id,
            workspace=workspace,
            limit=limit,
            offset=offset,
        ),
        idempotent=True,
    )


def get_document(document_id: int) -> Call[Document]:
    return Call("GET", path("documents", document_id), as_is, idempotent=True)


def delete_document(document_id: int) -> Call[DocumentDeleted]:
    """Delete the document and its searchable pieces (DELETE /documents/{id}/)."""
    return Call("DELETE", path("documents", document_id), as_is, idempotent=True)
