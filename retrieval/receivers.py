"""Signal receivers: memoryhub announces changes, retrieval indexes them (data flows one way)."""

from __future__ import annotations

import logging
from typing import Any

from memoryhub.searchable import Searchable
from retrieval import indexing, memory_indexing, termstats

logger = logging.getLogger(__name__)


def on_events_appended(sender: Any, session: Any, events: list[Any], **kwargs: Any) -> None:
    # In the append's transaction: chunks and full text commit with the events (read-your-writes;
    # no model is involved). Their embeddings wait in the table for the embed lane.
    indexing.index_session_events(session, sorted(events, key=lambda e: e.sequence))


def on_events_text_changed(sender: Any, session: Any, events: list[Any], **kwargs: Any) -> None:
    # In the writer's transaction, as for an append: the new text is searchable when it commits.
    indexing.reindex_event_text(session_id=session.pk, event_ids=[e.pk for e in events])


def on_events_deleted(sender: Any, session: Any, after: int, **kwargs: Any) -> dict[str, int]:
    """In the deleting transaction (search forgets the events when their deletion commits): the
    chunks of the session's events above `after` go; a chunk of an earlier event whose text a
    deleted one repeated (the deduplication extended its span) ends at `after` again. Events above
    `after` that remain (a deletion of older messages) are chunked again, so that no chunk keeps a
    deleted message as its conversation context."""
    from memoryhub.models import Event
    from retrieval.models import Chunk

    events = Chunk.every_version.filter(session_id=session.pk, kind="event")
    _, per_model = events.filter(sequence_start__gt=after).delete()
    events.filter(sequence_end__gt=after).update(sequence_end=after)
    remaining = list(
        Event.objects.filter(session=session, sequence__gt=after)
        .select_related("tool_sentence")
        .order_by("sequence")
    )
    indexing.index_session_events(session, remaining)
    return {Chunk._meta.label: per_model.get(Chunk._meta.label, 0)}


def _as_searchable(kwargs: dict[str, Any]) -> Searchable | None:
    value = kwargs.get("searchable") or kwargs.get("instance")
    if isinstance(value, Searchable):
        return value
    for name in ("as_searchable", "searchable", "to_searchable"):
        method = getattr(value, name, None)
        if callable(method):
            result = method()
            if isinstance(result, Searchable):
                return result
    logger.warning("memory_saved sent without a Searchable: %r", value)
    return None


def on_memory_saved(sender: Any, **kwargs: Any) -> None:
    searchable = _as_searchable(kwargs)
    if searchable is not None:
        # Chunks are written in the saving transaction (cheap, no model); embeddings follow on
        # commit.
        memory_indexing.index_searchable(searchable)


def on_memory_deleted(
    sender: Any, kind: str, tenant_id: int, source_id: str, **kwargs: Any
) -> None:
    closed_at = kwargs.get("closed_at")
    # a fact keeps its history (docs/memory-model.md#fact-history): its last version is closed, not
    # deleted
    if closed_at is not None:
        memory_indexing.retire_searchable(
            kind=kind, tenant_id=tenant_id, source_id=str(source_id), at=closed_at
        )
    else:
        memory_indexing.delete_searchable(kind=kind, tenant_id=tenant_id, source_id=str(source_id))


def on_session_owner_changed(sender: Any, session: Any, **kwargs: Any) -> None:
    # The conversation's chunks (its events and summaries) follow its user: ownership is enforced in
    # search's SQL on the chunk's own user_id.
    from retrieval.models import Chunk

    Chunk.objects.filter(session=session, kind__in=("event", "summary")).update(
        user_id=session.user_id
    )


def on_user_forgotten(sender: Any, tenant_id: int, user_id: str, **kwargs: Any) -> None:
    # In the forget's transaction: the words only the user's chunks held leave the term statistics
    # now, with the chunks, rather than at the next compaction.
    termstats.fold_tenant(tenant_id)
