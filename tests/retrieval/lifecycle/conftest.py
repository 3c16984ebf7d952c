from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from accounts.models import Tenant, Workspace
from memoryhub.models import Session
from retrieval.embedders import DIMENSIONS
from retrieval.models import Chunk, ChunkAccess
from tests.base import make_tenant

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def vector(*weights: float) -> list[float]:
    """A unit vector whose first components are `weights` (then zeros)."""
    raw = [*weights, *[0.0] * (DIMENSIONS - len(weights))]
    norm = math.sqrt(sum(v * v for v in raw))
    return [v / norm for v in raw]


def make_session(tenant: Tenant, external_id: str) -> Session:
    workspace = Workspace.get_default(tenant)
    return Session.objects.create(
        tenant=tenant,
        workspace=workspace,
        channel=workspace.channels.first(),
        external_id=external_id,
        updated_at=NOW,
    )


def memory(
    tenant: Tenant, session: Session | None, text: str, *, hours: float = 0, **fields: Any
) -> Chunk:
    defaults: dict[str, Any] = {
        "kind": "event",
        "tier": "conversation",
        "lifetime": "conversation",
        "importance": 0.5,
    }
    defaults.update(fields)
    access = {
        name: defaults.pop(name) for name in ("access_count", "accessed_at") if name in defaults
    }
    chunk = Chunk.objects.create(
        tenant=tenant,
        session=session,
        workspace_id=session.workspace_id if session else None,
        channel_id=session.channel_id if session else None,
        text=text,
        content_hash=text,
        created_at=NOW - timedelta(hours=hours),
        **defaults,
    )
    if access:  # as search's reinforcement writes them (retrieval.models.ChunkAccess)
        ChunkAccess.objects.create(chunk=chunk, **access)
    return chunk


def ids(tenant: Tenant) -> set[int]:
    return set(Chunk.objects.filter(tenant=tenant).values_list("id", flat=True))


@pytest.fixture(autouse=True)
def _events_deletable_without_review(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # These tests exercise the deleting steps themselves: the operator opts event chunks in and has
    # already reviewed a first run (the defaults are tested in test_permanence.py).
    settings.MEMORYHUB_CONSOLIDATE_DELETE_KINDS = ("event",)
    monkeypatch.setattr("retrieval.lifecycle.steps.FIRST_REVIEW", False)


@pytest.fixture
def world(db) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    tenant = make_tenant("consolidated")
    s1, s2 = make_session(tenant, "s1"), make_session(tenant, "s2")
    m = {
        # relevance 0.9 · (1 + ln 6) ≈ 2.5 with 5 accesses: promoted.
        "hot": memory(tenant, s1, "hot", importance=0.9, access_count=5, accessed_at=NOW),
        # Relevant but only 3 accesses (must be > 3): stays short-term.
        "warm": memory(tenant, s1, "warm", importance=0.9, access_count=3, accessed_at=NOW),
        # 30 days at 0.99/h: 0.5 · 0.99^720 ≈ 0.0004 < 0.01: pruned.
        "stale": memory(tenant, s1, "stale", hours=720),
        "stale_pinned": memory(tenant, s1, "stale pinned", hours=720, metadata={"pinned": True}),
        "stale_long_term": memory(tenant, s1, "stale long", hours=720, lifetime="long_term"),
        "stale_note": memory(
            tenant,
            None,
            "stale note",
            hours=24 * 400,
            kind="note",
            source_id="n1",
            tier="workspace",
            lifetime="short_term",
        ),
        # Near-duplicates (cosine ≈ 0.9999) in one session: merged into the more important one.
        "dup_a": memory(
            tenant,
            s2,
            "the flight leaves at nine",
            importance=0.4,
            access_count=1,
            embedding=vector(1, 0.01),
            embedding_model="hash",
            sequence_start=3,
            sequence_end=3,
        ),
        "dup_b": memory(
            tenant,
            s2,
            "The flight leaves at nine!",
            importance=0.8,
            access_count=2,
            embedding=vector(1, 0.02),
            embedding_model="hash",
            sequence_start=7,
            sequence_end=7,
        ),
        "other": memory(tenant, s2, "other", embedding=vector(0, 1), embedding_model="hash"),
        # Same vector as dup_a but another session: another scope, never merged with it.
        "elsewhere": memory(
            tenant, s1, "elsewhere", embedding=vector(1, 0.01), embedding_model="hash"
        ),
    }
    return {"tenant": tenant, "m": m, "s1": s1, "s2": s2}
