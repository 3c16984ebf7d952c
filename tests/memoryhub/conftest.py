"""Fixtures shared by the memoryhub tests: `filled`, a tenant holding one of everything an export
carries."""

from __future__ import annotations

import pytest

from memoryhub.models import RollingSummary, Session
from retrieval.lifecycle.memories import pin_memories
from retrieval.models import Chunk
from tests.base import add_memories, new_session, search_texts


@pytest.fixture
def allow_local_llm(settings) -> None:  # type: ignore[no-untyped-def]
    """The fake model server (test_summarisers.fake_llm) listens on 127.0.0.1, which model calls
    refuse unless the operator allows it (MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS)."""
    settings.MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS = ("127.0.0.1/32",)


@pytest.fixture
def filled(cast, index, django_capture_on_commit_callbacks):  # type: ignore[no-untyped-def]
    alice = cast.alice
    new_session(
        alice, "chat-1", user_id="u1", title="Trip", metadata={"lang": "en"}, channel="travel"
    )
    new_session(alice, "chat-2", workspace="research", agent="scholar")
    index(
        alice,
        "chat-1",
        {
            "role": "user",
            "content": "Book a flight to Lisbon in May",
            "metadata": {"tags": ["Travel"]},
            "idempotency_key": "k1",
            "created_at": "2025-05-01T10:00:00Z",
        },
        {
            "role": "assistant",
            "content": "",
            "tool_name": "book_flight",
            "tool_args": {"to": "LIS"},
            "tool_result": {"ok": True},
            "importance": 0.9,
        },
    )
    index(alice, "chat-2", {"role": "user", "content": "Summarise the paper on octopus cognition"})
    with django_capture_on_commit_callbacks(execute=True):
        response = alice.post(
            "/api/v1/documents/",
            {"source_uri": "file://notes.txt", "text": "Octopuses have nine brains."},
            format="json",
        )
    assert response.status_code in (200, 201), response.content
    session = Session.objects.get(tenant=cast.alice_tenant, external_id="chat-1")
    RollingSummary.objects.create(
        session=session, tenant=cast.alice_tenant, text="Trip to Lisbon.", epoch=2, upper_sequence=2
    )
    with django_capture_on_commit_callbacks(execute=True):
        add_memories(cast.alice_tenant, "chat-1", user_id="u1")
    # Consolidation state travels too: an access count, a pin.
    search_texts(alice, "Lisbon flight", profile="memory")
    pin_memories([Chunk.objects.filter(tenant=cast.alice_tenant, kind="document").first().pk])
    return cast
