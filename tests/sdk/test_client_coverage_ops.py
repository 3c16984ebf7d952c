"""The calls the client gained later, end to end through both clients: mem0-style
get_all/delete/history, browse by user, documents, channels, webhooks, consolidation and summarise.
Each with bad input (a clear error, nothing changed) and two tenants using the same ids."""

from __future__ import annotations

from typing import Any

import pytest
from memoryhub_client import BadRequestError, ConflictError, NotFoundError, PermissionDeniedError

pytestmark = pytest.mark.django_db(transaction=True)


def test_get_all_delete_and_history_in_the_mem0_style(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    alice.create_note("Prefers window seats.", note_id="seat", user_id="u1")
    fact = alice.upsert_fact("Lives in Lyon.", category="profile", key="city", user_id="u1")
    alice.upsert_fact("Lives in Oslo.", category="profile", key="city", user_id="u2")
    alice.create_note("The office closes at six.", note_id="office")  # shared: nobody's own
    bob.create_note("Bob's u1 likes tea.", note_id="seat", user_id="u1")  # same ids, another tenant

    memories = alice.get_all(user_id="u1")
    assert [(m["id"], m["kind"], m["memory"], m["user_id"]) for m in memories] == [
        ("note:seat", "note", "Prefers window seats.", "u1"),
        (f"fact:{fact['id']}", "fact", "Lives in Lyon.", "u1"),
    ]
    assert memories[1]["record"]["category"] == "profile"
    assert [m["id"] for m in alice.get_all(user_id="u1", kinds=["fact"])] == [f"fact:{fact['id']}"]
    assert [m["memory"] for m in bob.get_all(user_id="u1")] == ["Bob's u1 likes tea."]
    assert alice.get_all(user_id="nobody") == []

    alice.upsert_fact("Lives in Paris.", category="profile", key="city", user_id="u1")
    versions = alice.history(f"fact:{fact['id']}")["versions"]
    assert [v["content"] for v in versions] == ["Lives in Lyon.", "Lives in Paris."]
    assert alice.history(memories[1])["fact_id"] == fact["id"]  # a Memory dict is taken too

    hits = alice.search("Paris", user_id="u1", kinds=["fact"])["results"]
    assert hits and all(h["user_id"] == "u1" for h in hits)
    with pytest.raises(NotFoundError):
        # the same id in another tenant: not found, nothing deleted
        bob.delete(f"fact:{fact['id']}")
    # a search result names its fact
    assert alice.delete(hits[0]) == {"id": str(fact["id"]), "deleted": True}
    with pytest.raises(ValueError, match="note:<note_id>"):
        alice.delete("seat")  # which kind? refused before any request
    with pytest.raises(ValueError, match="only facts"):
        alice.history("note:seat")
    assert alice.delete("note:seat") == {"id": "seat", "deleted": True}
    assert alice.get_all(user_id="u1") == []
    assert [m["memory"] for m in bob.get_all(user_id="u1")] == ["Bob's u1 likes tea."]


def test_browse_by_end_user(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    alice.remember("trip", ["Book Lisbon."], user_id="u1")
    alice.remember("work", ["Ship the release."], user_id="u2")
    bob.remember("trip", ["Bob's trip."], user_id="u1")
    assert [e["content"] for e in alice.browse(user_id="u1")] == ["Book Lisbon."]
    assert [e["content"] for e in bob.browse(user_id="u1")] == ["Bob's trip."]
    assert list(alice.browse(user_id="nobody")) == []


def test_documents_listed_read_and_deleted(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    doc = alice.add_document(
        "file://manual.txt", "The boiler resets with the red button.", user_id="u1"
    )
    alice.add_document("file://faq.txt", "Rent is due on the first.")
    assert {d["source_uri"] for d in alice.list_documents()} == {
        "file://manual.txt",
        "file://faq.txt",
    }
    assert [d["id"] for d in alice.list_documents(user_id="u1")] == [doc["id"]]
    assert [d["source_uri"] for d in alice.iter_documents(limit=1)] and len(
        list(alice.iter_documents(limit=1))
    ) == 2
    assert alice.get_document(doc["id"])["source_uri"] == "file://manual.txt"
    with pytest.raises(NotFoundError):
        bob.get_document(doc["id"])
    with pytest.raises(NotFoundError):
        bob.delete_document(doc["id"])
    deleted = alice.delete_document(doc["id"])
    assert deleted["deleted"] is True and deleted["id"] == doc["id"]
    with pytest.raises(NotFoundError):
        alice.get_document(doc["id"])
    assert [d["source_uri"] for d in alice.list_documents()] == ["file://faq.txt"]


def test_channels(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    made = alice.create_channel("support", description="The support inbox")
    bob.create_channel("support")  # the same name in another tenant
    with pytest.raises(ConflictError):
        alice.create_channel("support")
    with pytest.raises(BadRequestError):
        alice.create_channel("")
    assert alice.get_channel(made["id"])["description"] == "The support inbox"
    assert "support" in [c["name"] for c in alice.list_channels()]
    assert [c["name"] for c in alice.iter_channels(name="support")] == ["support"]
    changed = alice.update_channel(made["id"], description="Tickets")
    assert (changed["name"], changed["description"]) == ("support", "Tickets")
    with pytest.raises(NotFoundError):
        bob.get_channel(made["id"])
    with pytest.raises(NotFoundError):
        bob.update_channel(made["id"], description="hijacked")
    assert alice.get_channel(made["id"])["description"] == "Tickets"


def test_webhooks(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    made = alice.create_webhook(
        "notification", "https://hooks.example.org/memoryhub", description="runs"
    )
    assert made["secret"] and made["kind"] == "notification"
    with pytest.raises(BadRequestError):
        alice.create_webhook("agent", "not a url")
    listed = alice.list_webhooks()["results"]
    assert [w["id"] for w in listed] == [made["id"]] and "secret" not in listed[0]
    assert alice.get_webhook(made["id"])["url"] == "https://hooks.example.org/memoryhub"
    assert bob.list_webhooks()["results"] == []
    with pytest.raises(NotFoundError):
        bob.delete_webhook(made["id"])
    assert alice.delete_webhook(made["id"])["deleted"] is True
    assert alice.list_webhooks()["results"] == []


def test_consolidate_and_summarise(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    alice.upsert_fact("Likes tea.", user_id="u1")
    report = alice.consolidate(dry_run=True)
    assert report["dry_run"] is True and isinstance(report["counts"], dict)
    with pytest.raises(PermissionDeniedError):
        hub(keys["alice_read"]).consolidate(dry_run=True)  # admin scope
    alice.remember("chat", ["I moved to Lyon.", "I work at a bakery."], user_id="u1")
    done = alice.summarise("chat", budget=200)
    assert done["session"] == "chat" and isinstance(done["summarised"], bool)
    with pytest.raises(BadRequestError):
        alice.summarise("chat", budget=-1)
    with pytest.raises(NotFoundError):
        hub(keys["bob"]).summarise("chat")
