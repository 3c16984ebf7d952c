"""Sessions sharing a persistence key restore as one history across rotated ids
(GET /sessions/{id}/restore/?persistence=true)."""

from __future__ import annotations

from typing import Any

from memoryhub.models import RollingSummary, Session
from tests.base import error_code, make_client, make_key, new_session, post_events

KEY = "telegram:chat-9:thread-1"


def chat(client: Any, session: str, *texts: str) -> None:
    events = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)
    ]
    assert post_events(client, session, *events).status_code == 201


def restore(client: Any, session: str, **params: Any) -> Any:
    return client.get(f"/api/v1/sessions/{session}/restore/", params)


def rotated(client: Any) -> None:
    """Three rotations of one thread for user u1, and a session of another user with the same
    key."""
    for name in ("r1", "r2", "r3"):
        new_session(client, name, persistence_key=KEY, user_id="u1")
    new_session(client, "other-user", persistence_key=KEY, user_id="u2")
    chat(client, "r1", "My name is Ana.", "Hello Ana.")
    chat(client, "r2", "I live in Porto.", "Noted.")
    chat(client, "other-user", "I am somebody else.")
    chat(client, "r3", "Where do I live?")


def test_rotated_sessions_restore_as_one_history(alice) -> None:
    rotated(alice)
    body = restore(alice, "r3", persistence="true", budget=100_000).json()
    assert body["sessions"] == ["r1", "r2", "r3"]
    assert [(m["session"], m["content"]) for m in body["messages"]] == [
        ("r1", "My name is Ana."),
        ("r1", "Hello Ana."),
        ("r2", "I live in Porto."),
        ("r2", "Noted."),
        ("r3", "Where do I live?"),
    ]
    assert body["truncated"] is False and body["omitted"] == 0
    # Any id of the thread restores the same history.
    assert (
        restore(alice, "r1", persistence="true", budget=100_000).json()["messages"]
        == body["messages"]
    )


def test_without_persistence_only_the_session_itself(alice) -> None:
    rotated(alice)
    body = restore(alice, "r3", budget=100_000).json()
    assert body["sessions"] == ["r3"]
    assert [m["content"] for m in body["messages"]] == ["Where do I live?"]
    assert "session" not in body["messages"][0]


def test_a_session_without_a_key_restores_alone(alice) -> None:
    chat(alice, "plain", "hello")
    chat(alice, "plain-2", "other")
    body = restore(alice, "plain", persistence="true").json()
    assert body["sessions"] == ["plain"] and [m["content"] for m in body["messages"]] == ["hello"]


def test_budget_keeps_the_newest_across_sessions(alice) -> None:
    rotated(alice)
    # "Where do I live?" (4+4) + "Noted." (2+4) + "I live in Porto." (4+4) = 22 tokens
    body = restore(alice, "r3", persistence="true", budget=22).json()
    assert [m["content"] for m in body["messages"]] == [
        "I live in Porto.",
        "Noted.",
        "Where do I live?",
    ]
    assert body["truncated"] is True and body["omitted"] == 2


def test_summaries_of_the_chain_lead_when_needed(alice) -> None:
    rotated(alice)
    r1 = Session.objects.get(external_id="r1")
    RollingSummary.objects.create(
        session=r1, tenant_id=r1.tenant_id, text="- user: name Ana", epoch=2, upper_sequence=2
    )
    body = restore(alice, "r3", persistence="true", budget=36).json()  # all of it: 37
    lead, *rest = body["messages"]
    assert lead["role"] == "system" and "name Ana" in lead["content"]
    assert lead["summaries"] == [{"session": "r1", "epoch": 2, "upper_sequence": 2}]
    assert [m["session"] for m in rest] == ["r2", "r2", "r3"]
    assert body["summary_epoch"] == 2 and body["tokens"] == 36


def test_bad_persistence_value_is_400(alice) -> None:
    rotated(alice)
    response = restore(alice, "r3", persistence="perhaps")
    assert response.status_code == 400 and error_code(response) == "invalid_parameter"


def test_the_chain_stays_in_the_tenant_and_the_key_scope(alice, bob, cast) -> None:
    rotated(alice)
    new_session(bob, "b1", persistence_key=KEY, user_id="u1")
    chat(bob, "b1", "bob's secret")
    assert restore(bob, "r3", persistence="true").status_code == 404
    assert [m["content"] for m in restore(bob, "b1", persistence="true").json()["messages"]] == [
        "bob's secret"
    ]
    # A workspace-limited key: a rotation in another workspace is not part of the history it sees.
    alice.post(
        "/api/v1/sessions/",
        {"id": "w-r", "workspace": "w2", "persistence_key": KEY, "user_id": "u1"},
        format="json",
    )
    chat(alice, "w-r", "in w2")
    limited = make_client(make_key(cast.alice_tenant, workspace="w2"))
    assert restore(limited, "w-r", persistence="true").json()["sessions"] == ["w-r"]
    assert "w-r" in restore(alice, "r3", persistence="true").json()["sessions"]


def test_a_user_limited_key_restores_only_its_users_thread(alice, cast) -> None:
    rotated(alice)
    u1 = make_client(make_key(cast.alice_tenant, user="u1"))
    assert restore(u1, "r2", persistence="true").json()["sessions"] == ["r1", "r2", "r3"]
    assert restore(u1, "other-user", persistence="true").status_code == 404
