"""Notes, facts and documents through both clients, end to end."""

from __future__ import annotations

from typing import Any

import pytest
from memoryhub_client import BadRequestError, ConflictError, NotFoundError

pytestmark = pytest.mark.django_db(transaction=True)


def test_notes(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    note = alice.create_note(
        "Prefers window seats.",
        note_id="travel.seat",
        tags=["Travel", "prefs"],
        metadata={"topic": "travel"},
        source="agent",
        importance=0.8,
    )
    assert (note["id"], note["tags"], note["importance"]) == (
        "travel.seat",
        ["travel", "prefs"],
        0.8,
    )
    with pytest.raises(ConflictError) as taken:
        alice.create_note("again", note_id="travel.seat")
    assert taken.value.code == "note_exists"
    alice.create_note("Allergic to peanuts.", tags=["health"], metadata={"topic": "health"})
    alice.create_note("Vegetarian.", tags=["health", "food"], metadata={"topic": "health"})

    assert alice.get_note("travel.seat")["content"] == "Prefers window seats."
    replaced = alice.put_note("travel.seat", "Prefers aisle seats now.", tags=["travel"])
    assert (replaced["content"], replaced["tags"]) == ("Prefers aisle seats now.", ["travel"])
    created = alice.put_note("new.one", "Created by PUT.")
    assert created["id"] == "new.one"
    patched = alice.update_note("travel.seat", tags=["travel", "seats"])  # PATCH: the text stays
    assert (patched["content"], patched["tags"]) == (
        "Prefers aisle seats now.",
        ["travel", "seats"],
    )

    health = alice.list_notes(meta={"topic": "health"})
    assert health.count == 2 and {n["content"] for n in health} == {
        "Allergic to peanuts.",
        "Vegetarian.",
    }
    assert [n["content"] for n in alice.list_notes(tags=["food"])] == ["Vegetarian."]
    assert len(list(alice.iter_notes(limit=1))) == 4

    assert alice.delete_note("new.one") == {"id": "new.one", "deleted": True}
    with pytest.raises(NotFoundError) as gone:
        alice.get_note("new.one")
    assert gone.value.code == "note_not_found"
    with pytest.raises(BadRequestError) as empty:
        alice.create_note("   ")
    assert empty.value.code == "empty_content" and "content" in empty.value.details["fields"]


def test_facts(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    first = alice.upsert_fact(
        "Lives in Lyon.", category="profile", key="city", user_id="u1", tags=["home"]
    )
    assert first["created"] is True and first["key"] == "city"
    second = alice.upsert_fact("Lives in Paris.", category="profile", key="city", user_id="u1")
    assert (second["created"], second["id"], second["content"]) == (
        False,
        first["id"],
        "Lives in Paris.",
    )
    alice.upsert_fact("Likes jazz.", category="taste", key="music", metadata={"confidence": "high"})

    assert alice.get_fact(first["id"])["content"] == "Lives in Paris."
    assert [f["key"] for f in alice.list_facts(category="profile")] == ["city"]
    assert [f["key"] for f in alice.list_facts(meta={"confidence": "high"})] == ["music"]
    assert sorted(f["key"] for f in alice.iter_facts(limit=1)) == ["city", "music"]

    patched = alice.update_fact(first["id"], content="Lives in Paris since 2024.", importance=0.9)
    assert (patched["content"], patched["importance"]) == ("Lives in Paris since 2024.", 0.9)
    # History and as_of (docs/memory-model.md#fact-history): every content the fact had, and the
    # list as it stood then.
    history = alice.fact_history(first["id"])["versions"]
    assert [v["content"] for v in history] == [
        "Lives in Lyon.",
        "Lives in Paris.",
        "Lives in Paris since 2024.",
    ]
    then = alice.list_facts(user_id="u1", as_of=history[1]["valid_from"])
    assert [f["content"] for f in then] == ["Lives in Paris."]
    # Another user's same key is a fact of its own; a client-chosen id is one per user.
    other = alice.upsert_fact(
        "Lives in Rome.", category="profile", key="city", user_id="u2", external_id="home"
    )
    assert (
        other["created"] is True and other["id"] != first["id"] and other["external_id"] == "home"
    )
    assert (
        alice.upsert_fact("Lives in Milan.", user_id="u2", external_id="home")["id"] == other["id"]
    )
    assert alice.delete_fact(first["id"]) == {"id": str(first["id"]), "deleted": True}
    assert len(alice.fact_history(first["id"])["versions"]) == 3  # kept after the delete
    with pytest.raises(NotFoundError) as gone:
        alice.get_fact(first["id"])
    assert gone.value.code == "fact_not_found"


def test_documents_are_indexed_once(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    doc = alice.add_document(
        "file:///handbook.md",
        "# Handbook\n\nThe office opens at 9.",
        tags=["hr"],
        metadata={"owner": "ops"},
    )
    assert (doc["indexed"], doc["source_uri"]) == (True, "file:///handbook.md") and doc[
        "chunks"
    ] >= 1
    same = alice.add_document("file:///handbook.md", "# Handbook\n\nThe office opens at 9.")
    assert (same["indexed"], same["id"]) == (False, doc["id"])
    hits = alice.search("office opens", kinds=["document"], mode="text")["results"]
    assert hits and hits[0]["kind"] == "document"
