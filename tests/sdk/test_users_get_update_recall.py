"""The client's end users (list_users / iter_users), get() and update() of a note or a fact by its
memory id, and recall's as_of: through both clients, with two tenants and two users of the same
ids."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from memoryhub_client import BadRequestError, NotFoundError, PermissionDeniedError

from tests.base import make_key, make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def test_list_users_with_counts_and_isolation(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    alice.remember("trip", ["Book Lisbon."], user_id="ann")
    alice.upsert_fact("Lives in Lyon.", user_id="ann")
    alice.create_note("Likes jazz.", user_id="bob")
    bob.upsert_fact("Bob's tenant's ann.", user_id="ann")  # the same user id in another tenant
    page = alice.list_users()
    assert page.count == 2
    assert [(u["user_id"], u["sessions"], u["facts"], u["notes"]) for u in page] == [
        ("ann", 1, 1, 0),
        ("bob", 0, 0, 1),
    ]
    assert page.results[0]["last_activity"]
    assert [u["user_id"] for u in alice.iter_users(limit=1)] == ["ann", "bob"]
    assert [(u["user_id"], u["facts"]) for u in bob.list_users()] == [("ann", 1)]
    as_ann = hub(make_key(make_tenant("alice"), scopes=("read",), user="ann"))
    assert [u["user_id"] for u in as_ann.list_users()] == ["ann"]
    with pytest.raises(BadRequestError) as bad:
        alice.list_users(limit=0)
    assert bad.value.code == "invalid_parameter"


def test_get_and_update_notes_and_facts(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    fact = alice.upsert_fact("Lives in Lyon.", category="profile", key="city", user_id="ann")
    alice.create_note("Prefers tea.", note_id="drink", user_id="ann")
    bob.create_note("Bob's note under the same id.", note_id="drink", user_id="ann")

    got = alice.get(f"fact:{fact['id']}")
    assert (got["id"], got["kind"], got["memory"], got["user_id"]) == (
        f"fact:{fact['id']}",
        "fact",
        "Lives in Lyon.",
        "ann",
    )
    assert alice.get("note:drink")["memory"] == "Prefers tea."
    assert bob.get("note:drink")["memory"] == "Bob's note under the same id."

    changed = alice.update(f"fact:{fact['id']}", content="Lives in Paris.", tags=["moved"])
    assert changed["memory"] == "Lives in Paris." and changed["tags"] == ["moved"]
    assert [v["content"] for v in alice.history(changed)["versions"]] == [
        "Lives in Lyon.",
        "Lives in Paris.",
    ]
    # a Memory is taken too
    assert alice.update(got, metadata={"checked": True})["metadata"] == {"checked": True}
    assert alice.update("note:drink", content="Prefers coffee.")["memory"] == "Prefers coffee."
    assert bob.get("note:drink")["memory"] == "Bob's note under the same id."

    with pytest.raises(NotFoundError):
        bob.get(f"fact:{fact['id']}")
    with pytest.raises(NotFoundError):
        bob.update(f"fact:{fact['id']}", content="hijacked")
    as_bob = hub(make_key(make_tenant("alice"), user="bob"))
    with pytest.raises(NotFoundError):
        as_bob.update("note:drink", content="hijacked")
    assert alice.get("note:drink")["memory"] == "Prefers coffee."
    with pytest.raises(BadRequestError):
        alice.update("note:drink", importance=3)
    with pytest.raises(ValueError):
        alice.get("drink")  # which kind? refused before any request


def test_recall_as_of(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    before = datetime.now(UTC) - timedelta(seconds=1)
    alice.upsert_fact(
        "The user's favourite colour is teal.",
        category="profile",
        key="colour",
        user_id="ann",
        importance=0.9,
    )
    now = alice.recall("favourite colour", user_id="ann")
    assert "teal" in now
    assert "teal" not in alice.recall("favourite colour", user_id="ann", as_of=before)
    assert "teal" in alice.recall(
        "favourite colour", user_id="ann", as_of=datetime.now(UTC).isoformat()
    )
    with pytest.raises(BadRequestError):
        alice.recall("favourite colour", as_of="not a time")
    with pytest.raises(PermissionDeniedError):
        hub(make_key(make_tenant("alice"), user="bob")).recall("favourite colour", user_id="ann")
