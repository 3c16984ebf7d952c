"""django-q2 task entry points: take ids, load, call a domain function (retrieval.indexing)."""

from __future__ import annotations

from typing import Any

from retrieval import indexing


def index_events(session_id: int, event_ids: list[int]) -> int:
    return len(indexing.index_events(session_id=session_id, event_ids=event_ids))


def embed_chunks(chunk_ids: list[int]) -> dict[str, int]:
    return indexing.embed_chunks(chunk_ids)


def backfill_embeddings(tenant_id: int | None = None, limit: int | None = None) -> dict[str, Any]:
    return indexing.backfill_embeddings(tenant_id=tenant_id, limit=limit)
