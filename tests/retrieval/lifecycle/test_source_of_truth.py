"""One source of truth: a note or fact is the memory, its chunks are derived. Pinning lives on the
source and survives re-indexing; unpinning gives back the importance it had; the admin edits the
source, never a chunk apart."""

from __future__ import annotations

import pytest

from memoryhub.models import Fact
from retrieval.lifecycle import memories
from retrieval.models import Chunk


@pytest.fixture
def fact(alice) -> Fact:  # type: ignore[no-untyped-def]
    response = alice.post(
        "/api/v1/facts/",
        {"content": "Prefers window seats", "category": "travel", "key": "seat", "importance": 0.3},
        format="json",
    )
    assert response.status_code == 201, response.content
    return Fact.objects.get(pk=response.json()["id"])


def chunk_of(fact: Fact) -> Chunk:
    return Chunk.objects.get(kind="fact", source_id=str(fact.pk))


def test_pinning_a_fact_pins_the_fact_and_survives_an_edit(alice, fact) -> None:
    assert memories.pin_memories([chunk_of(fact).pk]) == 1
    fact.refresh_from_db()
    assert (fact.pinned, fact.importance, fact.importance_before_pin) == (True, 1.0, 0.3)
    assert alice.get(f"/api/v1/facts/{fact.pk}/").json()["importance"] == 1.0
    # An edit re-derives the chunks: the pin is kept, because it lives on the fact.
    assert (
        alice.patch(
            f"/api/v1/facts/{fact.pk}/", {"content": "Prefers aisle seats"}, format="json"
        ).status_code
        == 200
    )
    chunk = chunk_of(fact)
    assert (
        chunk.text == "Prefers aisle seats"
        and chunk.importance == 1.0
        and chunk.metadata["pinned"] is True
    )
    assert chunk.lifetime == "long_term"

    assert memories.unpin_memories([chunk.pk]) == 1
    fact.refresh_from_db()
    assert (fact.pinned, fact.importance) == (False, 0.3)  # given back, not forced to 0.5
    chunk = chunk_of(fact)
    assert chunk.importance == 0.3 and "pinned" not in chunk.metadata


def test_the_memory_admin_edits_nothing_apart_and_links_to_the_source(admin_client, fact) -> None:
    chunk = chunk_of(fact)
    page = admin_client.get(f"/admin/lifecycle/memory/{chunk.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert f"/admin/memoryhub/fact/{fact.pk}/change/" in html  # "edit at the source"
    assert 'name="text"' not in html and 'name="importance"' not in html
    # A forged POST cannot change the chunk either.
    admin_client.post(
        f"/admin/lifecycle/memory/{chunk.pk}/change/", {"text": "hacked", "importance": 0.9}
    )
    chunk.refresh_from_db()
    assert chunk.text == "Prefers window seats"
    # Editing the fact in its own admin page re-derives the chunk.
    fact_page = admin_client.get(f"/admin/memoryhub/fact/{fact.pk}/change/")
    assert fact_page.status_code == 200
