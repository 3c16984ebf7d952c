"""Errors come back as exceptions carrying the service's code; bob's client never sees alice's
data."""

from __future__ import annotations

from typing import Any

import pytest
from memoryhub_client import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    MemoryHubError,
    NotFoundError,
    PermissionDeniedError,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_errors_carry_status_code_message_and_details(hub: Any, keys: dict[str, str]) -> None:
    with pytest.raises(AuthenticationError) as invalid:
        hub("mh_nope_notakey").stats()
    assert (invalid.value.status, invalid.value.code) == (401, "invalid_api_key")
    with pytest.raises(AuthenticationError) as missing:
        hub(None).stats()
    assert (missing.value.status, missing.value.code) == (401, "not_authenticated")

    with pytest.raises(PermissionDeniedError) as denied:
        hub(keys["alice_read"]).append_event("s1", "user", "hello")
    assert (denied.value.status, denied.value.code) == (403, "insufficient_scope")

    alice = hub(keys["alice"])
    with pytest.raises(BadRequestError) as bad:
        alice.append_event("s1", "robot", "beep")  # type: ignore[arg-type]
    assert (bad.value.status, bad.value.code) == (400, "validation_error")
    assert "role" in bad.value.details["fields"] and bad.value.message.startswith("role:")

    alice.append_event("s1", "user", "first", sequence=5)
    with pytest.raises(ConflictError) as conflict:
        alice.append_event("s1", "user", "too early", sequence=3)
    assert conflict.value.code == "sequence_conflict"
    assert conflict.value.details == {"index": 0, "sequence": 3, "last_sequence": 5}
    assert isinstance(conflict.value, MemoryHubError) and "sequence_conflict" in str(conflict.value)


def test_bob_cannot_read_or_change_alices_memory(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    alice.remember("alice-chat", ["My bank PIN hint is 'lighthouse'."], user_id="alice-user")
    alice.create_note("Alice's secret note about lighthouses.", note_id="secret")
    fact = alice.upsert_fact(
        "Alice's lighthouse is in Brittany.", category="places", key="lighthouse"
    )
    alice.put_scratchpad("alice-chat", {"plan": "lighthouse"})

    for attempt, code in [
        (lambda: bob.get_session("alice-chat"), "session_not_found"),
        (lambda: bob.list_events("alice-chat"), "session_not_found"),
        (lambda: bob.get_scratchpad("alice-chat"), "session_not_found"),
        (lambda: bob.recall("lighthouse", session="alice-chat"), "session_not_found"),
        (lambda: bob.delete_session("alice-chat"), "session_not_found"),
        (lambda: bob.get_note("secret"), "note_not_found"),
        (lambda: bob.delete_note("secret"), "note_not_found"),
        (lambda: bob.get_fact(fact["id"]), "fact_not_found"),
        (lambda: bob.update_fact(fact["id"], content="Bob was here."), "fact_not_found"),
    ]:
        with pytest.raises(NotFoundError) as hidden:
            attempt()
        assert hidden.value.code == code

    assert (
        bob.list_sessions().count == 0
        and bob.list_notes().count == 0
        and bob.list_facts().count == 0
    )
    assert bob.search("lighthouse", scope="account")["results"] == []
    assert list(bob.iter_browse()) == []
    # Bob's append to the same id makes a session of his own; alice's is untouched.
    assert bob.append_event("alice-chat", "user", "Bob's words.")["sequence"] == 1
    assert alice.get_session("alice-chat")["event_count"] == 1
    assert alice.get_note("secret")["content"].startswith("Alice's secret")
    assert alice.get_fact(fact["id"])["content"] == "Alice's lighthouse is in Brittany."
    assert alice.get_scratchpad("alice-chat")["items"] == [{"key": "plan", "value": "lighthouse"}]
