"""POST /sessions/{id}/events/ (docs/event-log.md#append): append, bulk, idempotency, isolation and
the append's own statements. Bad input is test_events_input.py, reads and the recent-window cache
test_events_read.py."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.models import Event, Session
from tests.base import error_code, make_client, make_key, post_events


def url(session: str) -> str:
    return f"/api/v1/sessions/{session}/events/"


def stored(session: str = "s1") -> list[tuple[int, str]]:
    return list(
        Event.objects.filter(session__external_id=session)
        .order_by("sequence")
        .values_list("sequence", "content")
    )


def fill(client: Any, session: str, n: int) -> None:
    response = post_events(
        client, session, *[{"role": "user", "content": f"m{i}"} for i in range(1, n + 1)]
    )
    assert response.status_code == 201, response.content


# --- append ----------------------------------------------------------------------------------


def test_single_append_allocates_the_next_sequence(alice) -> None:
    first = post_events(alice, "s1", {"role": "user", "content": "hello"})
    assert first.status_code == 201, first.content
    body = first.json()
    assert body["sequence"] == 1 and body["role"] == "user" and body["content"] == "hello"
    assert body["session"] == "s1" and body["created"] == 1
    assert [e["sequence"] for e in body["events"]] == [1]
    second = post_events(alice, "s1", {"role": "assistant", "content": "hi there"})
    assert second.json()["sequence"] == 2
    assert stored() == [(1, "hello"), (2, "hi there")]
    session = Session.objects.get(external_id="s1")
    assert session.last_sequence == 2 and session.event_count == 2


def test_append_returns_every_stored_field(alice) -> None:
    response = post_events(
        alice,
        "s1",
        {
            "role": "tool",
            "content": "",
            "tool_name": "search",
            "tool_args": {"q": "x"},
            "tool_result": {"hits": 3},
            "metadata": {"tags": ["a"]},
            "importance": 0.9,
            "created_at": "2024-01-02T03:04:05Z",
            "idempotency_key": "k-1",
        },
    )
    assert response.status_code == 201, response.content
    event = response.json()["events"][0]
    assert {
        k: event[k]
        for k in (
            "role",
            "content",
            "tool_name",
            "tool_args",
            "tool_result",
            "metadata",
            "importance",
            "created_at",
            "idempotency_key",
            "sequence",
        )
    } == {
        "role": "tool",
        "content": "",
        "tool_name": "search",
        "tool_args": {"q": "x"},
        "tool_result": {"hits": 3},
        "metadata": {"tags": ["a"]},
        "importance": 0.9,
        "created_at": "2024-01-02T03:04:05Z",
        "idempotency_key": "k-1",
        "sequence": 1,
    }
    assert isinstance(event["id"], int)


@pytest.mark.parametrize(
    ("role", "importance"), [("user", 0.5), ("assistant", 0.5), ("tool", 0.3), ("system", 0.1)]
)
def test_importance_defaults_by_role(alice, role: str, importance: float) -> None:
    response = post_events(alice, "s1", {"role": role, "content": "x"})
    assert response.json()["importance"] == importance
    assert Event.objects.get().importance == importance


def test_client_sequences_may_skip_but_never_go_back(alice) -> None:
    assert (
        post_events(alice, "s1", {"role": "user", "content": "a", "sequence": 10}).json()[
            "sequence"
        ]
        == 10
    )
    assert post_events(alice, "s1", {"role": "user", "content": "b"}).json()["sequence"] == 11
    for bad in (11, 5):
        response = post_events(alice, "s1", {"role": "user", "content": "late", "sequence": bad})
        assert response.status_code == 409
        assert error_code(response) == "sequence_conflict"
        assert response.json()["error"]["details"]["last_sequence"] == 11
    assert stored() == [(10, "a"), (11, "b")]


def test_lazy_session_creation_on_first_append(alice) -> None:
    assert not Session.objects.exists()
    response = post_events(alice, "brand-new", {"role": "user", "content": "hi"})
    assert response.status_code == 201
    session = alice.get("/api/v1/sessions/brand-new/").json()
    assert session["workspace"] == "default" and session["channel"] == "general"
    assert session["event_count"] == 1 and session["last_sequence"] == 1


def test_append_reactivates_an_idle_session_and_refuses_an_archived_one(alice) -> None:
    post_events(alice, "s1", {"role": "user", "content": "a"})
    alice.patch("/api/v1/sessions/s1/", {"status": "idle"}, format="json")
    post_events(alice, "s1", {"role": "user", "content": "b"})
    assert Session.objects.get().status == "active"
    alice.patch("/api/v1/sessions/s1/", {"status": "archived"}, format="json")
    response = post_events(alice, "s1", {"role": "user", "content": "c"})
    assert response.status_code == 409
    assert error_code(response) == "session_archived"
    assert stored() == [(1, "a"), (2, "b")]


def test_append_moves_the_session_to_the_top_of_the_list(alice) -> None:
    post_events(alice, "old", {"role": "user", "content": "a"})
    post_events(alice, "new", {"role": "user", "content": "b"})
    post_events(alice, "old", {"role": "user", "content": "c"})
    assert [s["id"] for s in alice.get("/api/v1/sessions/").json()["results"]] == ["old", "new"]


# --- bulk ------------------------------------------------------------------------------------


def test_bulk_append_is_ordered_and_atomic(alice) -> None:
    response = post_events(
        alice,
        "s1",
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c", "sequence": 7},
        {"role": "assistant", "content": "d"},
    )
    assert response.status_code == 201
    body = response.json()
    assert body["created"] == 4 and "sequence" not in body
    assert [e["sequence"] for e in body["events"]] == [1, 2, 7, 8]
    assert stored() == [(1, "a"), (2, "b"), (7, "c"), (8, "d")]


def test_bulk_with_one_invalid_event_stores_none(alice) -> None:
    post_events(alice, "s1", {"role": "user", "content": "before"})
    response = post_events(
        alice, "s1", {"role": "user", "content": "ok"}, {"role": "robot", "content": "bad"}
    )
    assert response.status_code == 400
    assert error_code(response) == "validation_error"
    assert "events[1].role" in response.json()["error"]["details"]["fields"]
    assert stored() == [(1, "before")]


def test_bulk_with_a_sequence_conflict_stores_none(alice) -> None:
    post_events(alice, "s1", {"role": "user", "content": "before"})
    response = post_events(
        alice,
        "s1",
        {"role": "user", "content": "ok"},
        {"role": "user", "content": "x", "sequence": 1},
    )
    assert response.status_code == 409
    assert error_code(response) == "sequence_conflict"
    assert response.json()["error"]["details"]["index"] == 1
    assert stored() == [(1, "before")]
    assert Session.objects.get().event_count == 1


def test_refused_first_append_leaves_no_empty_session(alice) -> None:
    response = post_events(
        alice,
        "s1",
        {"role": "user", "content": "a", "sequence": 5},
        {"role": "user", "content": "b", "sequence": 5},
    )
    assert response.status_code == 409
    assert not Session.objects.filter(external_id="s1").exists()


def test_bulk_refuses_duplicate_idempotency_keys_in_one_request(alice) -> None:
    response = post_events(
        alice,
        "s1",
        {"role": "user", "content": "a", "idempotency_key": "k"},
        {"role": "user", "content": "b", "idempotency_key": "k"},
    )
    assert response.status_code == 400
    assert error_code(response) == "duplicate_idempotency_key"
    assert not Event.objects.exists()


def test_too_many_events_in_one_request(alice, settings, monkeypatch) -> None:
    monkeypatch.setattr("memoryhub.event_log.MAX_BULK_EVENTS", 3)
    response = post_events(alice, "s1", *[{"role": "user", "content": str(i)} for i in range(4)])
    assert response.status_code == 413
    assert error_code(response) == "too_many_events"
    assert not Event.objects.exists()


# --- idempotency -----------------------------------------------------------------------------


def test_retried_single_append_is_stored_once(alice) -> None:
    event = {"role": "user", "content": "pay 10 EUR", "idempotency_key": "req-1"}
    first = post_events(alice, "s1", event)
    retry = post_events(alice, "s1", event)
    assert first.status_code == 201 and retry.status_code == 200
    assert retry.json()["created"] == 0
    assert retry.json()["id"] == first.json()["id"] and retry.json()["sequence"] == 1
    assert stored() == [(1, "pay 10 EUR")]
    assert Session.objects.get().event_count == 1


def test_retried_bulk_stores_only_the_missing_events(alice) -> None:
    a = {"role": "user", "content": "a", "idempotency_key": "a"}
    b = {"role": "user", "content": "b", "idempotency_key": "b"}
    c = {"role": "user", "content": "c", "idempotency_key": "c"}
    post_events(alice, "s1", a, b)
    response = post_events(alice, "s1", a, b, c)
    assert response.status_code == 201
    assert response.json()["created"] == 1
    assert [e["sequence"] for e in response.json()["events"]] == [1, 2, 3]
    assert stored() == [(1, "a"), (2, "b"), (3, "c")]


def test_retry_with_its_explicit_sequence_is_not_a_conflict(alice) -> None:
    event = {"role": "user", "content": "a", "sequence": 1, "idempotency_key": "k1"}
    post_events(alice, "s1", event)
    retry = post_events(alice, "s1", event)
    assert retry.status_code == 200 and retry.json()["sequence"] == 1
    assert stored() == [(1, "a")]


@pytest.mark.parametrize(
    "change",
    [
        {"content": "pay 99 EUR"},
        {"role": "assistant"},
        {"metadata": {"x": 1}},
        {"tool_name": "pay"},
        {"sequence": 7},
    ],
)
def test_reused_idempotency_key_with_other_content_is_409(alice, change: dict) -> None:
    event = {"role": "user", "content": "pay 10 EUR", "idempotency_key": "req-1"}
    first = post_events(alice, "s1", event)
    response = post_events(alice, "s1", {**event, **change})
    assert response.status_code == 409, response.content
    assert error_code(response) == "idempotency_mismatch"
    details = response.json()["error"]["details"]
    assert details["event_id"] == first.json()["id"] and details["fields"] == list(change)
    # In a bulk, the whole request is refused: nothing of it is stored.
    response = post_events(alice, "s1", {"role": "user", "content": "new"}, {**event, **change})
    assert response.status_code == 409 and details["idempotency_key"] == "req-1"
    assert stored() == [(1, "pay 10 EUR")]


def test_a_resend_that_leaves_out_a_default_is_the_same_event(alice) -> None:
    event = {
        "role": "user",
        "content": "pay 10 EUR",
        "idempotency_key": "req-1",
        "metadata": {"lang": "en"},
    }
    first = post_events(alice, "s1", event)
    retry = post_events(
        alice, "s1", {"role": "user", "content": "pay 10 EUR", "idempotency_key": "req-1"}
    )
    assert retry.status_code == 200 and retry.json()["id"] == first.json()["id"]
    # sent, and different
    assert post_events(alice, "s1", {**event, "metadata": {}}).status_code == 409


def test_idempotency_keys_are_per_session(alice) -> None:
    post_events(alice, "s1", {"role": "user", "content": "a", "idempotency_key": "k"})
    response = post_events(alice, "s2", {"role": "user", "content": "b", "idempotency_key": "k"})
    assert response.status_code == 201
    assert Event.objects.count() == 2


# --- isolation -------------------------------------------------------------------------------


def test_bob_cannot_read_or_append_to_alices_session(alice, bob) -> None:
    fill(alice, "s1", 2)
    alice_session = Session.objects.get(tenant__name="alice")
    assert bob.get(url("s1")).status_code == 404
    assert bob.get(url("s1"), {"limit": 5}).status_code == 404
    assert bob.get(url("s1"), {"after": 0}).status_code == 404
    # Bob appending to "s1" writes to his own, new session, never to alice's.
    response = post_events(bob, "s1", {"role": "user", "content": "bob's", "sequence": 1})
    assert response.status_code == 201
    bob_session = Session.objects.get(tenant__name="bob", external_id="s1")
    assert bob_session.pk != alice_session.pk
    assert list(bob_session.events.values_list("content", flat=True)) == ["bob's"]
    assert list(alice_session.events.values_list("content", flat=True)) == ["m1", "m2"]
    assert [e["content"] for e in alice.get(url("s1")).json()["results"]] == ["m1", "m2"]


def test_bob_cannot_replay_alices_idempotency_key_to_read_her_event(alice, bob) -> None:
    post_events(alice, "s1", {"role": "user", "content": "alice secret", "idempotency_key": "k"})
    response = post_events(bob, "s1", {"role": "user", "content": "bob", "idempotency_key": "k"})
    assert response.status_code == 201
    assert response.json()["content"] == "bob"


def test_workspace_limited_key_cannot_append_to_another_workspace(alice, cast) -> None:
    alice.post("/api/v1/sessions/", {"id": "w2-chat", "workspace": "w2"}, format="json")
    post_events(alice, "w2-chat", {"role": "user", "content": "w2 only"})
    limited = make_client(make_key(cast.alice_tenant, workspace="w1"))
    assert limited.get(url("w2-chat")).status_code == 404
    response = post_events(limited, "w2-chat", {"role": "user", "content": "intrusion"})
    assert response.status_code in (403, 404, 409)
    error_code(response)
    assert stored("w2-chat") == [(1, "w2 only")]


def test_the_appends_locking_read_sees_exactly_what_get_session_sees(alice, bob, cast) -> None:
    """The append locks its session with a statement compiled once per key scope: for keys of
    every kind (tenant, workspace-limited, user-limited) it finds the sessions get_session finds,
    with the same fields, and no other."""
    from django.db import transaction

    from accounts.models import ApiKey, Workspace
    from memoryhub import event_log, sessions

    for sid, fields in (
        ("mine", {"user_id": "u1", "metadata": {"k": [1]}}),
        ("theirs", {"user_id": "u2"}),
        ("shared", {}),
        ("elsewhere", {"workspace": "w2", "user_id": "u1"}),
    ):
        assert (
            alice.post("/api/v1/sessions/", {"id": sid, **fields}, format="json").status_code == 201
        )
    post_events(bob, "bobs", {"role": "user", "content": "hi"})
    w2 = Workspace.get_named(cast.alice_tenant, "w2")
    keys = [
        ApiKey.create_key(tenant=cast.alice_tenant, **extra).api_key
        for extra in ({}, {"user_id": "u1"}, {"workspace": w2}, {"workspace": w2, "user_id": "u2"})
    ]
    found = 0
    for key in keys:
        for sid in ("mine", "theirs", "shared", "elsewhere", "bobs", "none"):
            with transaction.atomic():
                locked = event_log._lock_session(key, sid)
                try:
                    expected = sessions.get_session(key, sid, for_update=True, related=False)
                except sessions.NotFound:
                    expected = None
            assert (locked is None) == (expected is None), (key.user_id, key.workspace_id, sid)
            if expected is not None:
                found += 1
                assert {
                    f.attname: getattr(locked, f.attname) for f in Session._meta.concrete_fields
                } == {
                    f.attname: getattr(expected, f.attname) for f in Session._meta.concrete_fields
                }
    # every key sees some, none sees bob's or another user's; a user-limited key not the unowned one
    assert found == 4 + 2 + 1 + 0


def test_an_append_is_three_statements_with_its_notice_inside(alice, settings, monkeypatch) -> None:
    """The session's locking read; the event with the session's counters and the lanes' notice;
    the chunk (no conversation context asked for here: it may cost a read of the log)."""
    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 0)
    assert alice.post("/api/v1/sessions/", {"id": "s1"}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        assert post_events(alice, "s1", {"role": "user", "content": "hello"}).status_code == 201
    statements = [
        q["sql"]
        for q in queries.captured_queries
        if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))
    ]
    assert [sql.split()[0] for sql in statements] == ["SELECT", "WITH", "INSERT"], statements
    assert (
        "FOR UPDATE" in statements[0]
        and "pg_notify" in statements[1]
        and "retrieval_chunk" in statements[2]
    )


def test_an_append_reads_neither_the_workspace_nor_the_channel(alice) -> None:
    """The append reads its session alone (no join): its chunks need the workspace and channel
    ids only, and nothing on the path loads them afterwards."""
    assert post_events(alice, "s1", {"role": "user", "content": "first"}).status_code == 201
    with CaptureQueriesContext(connection) as queries:
        response = post_events(alice, "s1", {"role": "user", "content": "second"})
    assert response.status_code == 201 and response.json()["session"] == "s1"
    touched = [
        q["sql"]
        for q in queries.captured_queries
        if '"accounts_workspace"' in q["sql"] or '"accounts_channel"' in q["sql"]
    ]
    assert touched == []
    chunk_scope = Session.objects.values_list("workspace_id", "channel_id").get(external_id="s1")
    from retrieval.models import Chunk

    assert set(
        Chunk.objects.filter(session__external_id="s1").values_list("workspace_id", "channel_id")
    ) == {chunk_scope}
