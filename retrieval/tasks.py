"""django-q2 task entry points: take ids, load, call a domain function.

Nothing queues index_events or embed_chunks any more (chunks are written with the rows they come
from; the embed lane takes them from the table): these two stay for tasks queued before the
upgrade, which would otherwise fail on arrival.
"""

from __future__ import annotations

from typing import Any

from retrieval import embedding, indexing, termstats


def index_events(session_id: int, event_ids: list[int]) -> int:
    created = len(indexing.index_events(session_id=session_id, event_ids=event_ids))
    termstats.maybe_compact()  # fold the statistics' delta rows while they are few
    return created


def embed_chunks(chunk_ids: list[int]) -> dict[str, int]:
    return embedding.embed_chunks(chunk_ids)


def backfill_embeddings(tenant_id: int | None = None, limit: int | None = None) -> dict[str, Any]:
    return embedding.backfill_embeddings(tenant_id=tenant_id, limit=limit)
