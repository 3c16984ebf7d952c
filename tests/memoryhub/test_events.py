"""POST/GET /sessions/{id}/events/ (SPEC S2, S11): append, bulk, idempotency, reads, cache."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.models import Event, Session
from memoryhub.sessions import MAX_CONTENT_CHARS
from tests.base import error_code, make_client, make_key, post_events


def url(session: str) -> str:
    return f"/api/v1/sessions/{session}/events/"


def stored(session: str = "s1") -> list[tuple[int, str]]:
    return list(
        Event.objects.filter(session__external_id=session).order_by("sequence").values_list("sequence", "content")
    )


def fill(client: Any, session: str, n: int) -> None:
    response = post_events(client, session, *[{"role": "user", "content": f"m{i}"} for i in range(1, n + 1)])
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
    response = post_events(alice, "s1", {
        "role": "tool", "content": "", "tool_name": "search", "tool_args": {"q": "x"},
        "tool_result": {"hits": 3}, "metadata": {"tags": ["a"]}, "importance": 0.9,
        "created_at": "2024-01-02T03:04:05Z", "idempotency_key": "k-1",
    })
    assert response.status_code == 201, response.content
    event = response.json()["events"][0]
    assert {k: event[k] for k in ("role", "content", "tool_name", "tool_args", "tool_result", "metadata",
                                  "importance", "created_at", "idempotency_key", "sequence")} == {
        "role": "tool", "content": "", "tool_name": "search", "tool_args": {"q": "x"},
        "tool_result": {"hits": 3}, "metadata": {"tags": ["a"]}, "importance": 0.9,
        "created_at": "2024-01-02T03:04:05Z", "idempotency_key": "k-1", "sequence": 1,
    }
    assert isinstance(event["id"], int)


@pytest.mark.parametrize(("role", "importance"), [("user", 0.5), ("assistant", 0.5), ("tool", 0.3), ("system", 0.1)])
def test_importance_defaults_by_role(alice, role: str, importance: float) -> None:
    response = post_events(alice, "s1", {"role": role, "content": "x"})
    assert response.json()["importance"] == importance
    assert Event.objects.get().importance == importance


def test_client_sequences_may_skip_but_never_go_back(alice) -> None:
    assert post_events(alice, "s1", {"role": "user", "content": "a", "sequence": 10}).json()["sequence"] == 10
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
        alice, "s1", {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c", "sequence": 7}, {"role": "assistant", "content": "d"},
    )
    assert response.status_code == 201
    body = response.json()
    assert body["created"] == 4 and "sequence" not in body
    assert [e["sequence"] for e in body["events"]] == [1, 2, 7, 8]
    assert stored() == [(1, "a"), (2, "b"), (7, "c"), (8, "d")]


def test_bulk_with_one_invalid_event_stores_none(alice) -> None:
    post_events(alice, "s1", {"role": "user", "content": "before"})
    response = post_events(alice, "s1", {"role": "user", "content": "ok"}, {"role": "robot", "content": "bad"})
    assert response.status_code == 400
    assert error_code(response) == "validation_error"
    assert "events[1].role" in response.json()["error"]["details"]["fields"]
    assert stored() == [(1, "before")]


def test_bulk_with_a_sequence_conflict_stores_none(alice) -> None:
    post_events(alice, "s1", {"role": "user", "content": "before"})
    response = post_events(alice, "s1", {"role": "user", "content": "ok"}, {"role": "user", "content": "x", "sequence": 1})
    assert response.status_code == 409
    assert error_code(response) == "sequence_conflict"
    assert response.json()["error"]["details"]["index"] == 1
    assert stored() == [(1, "before")]
    assert Session.objects.get().event_count == 1


def test_refused_first_append_leaves_no_empty_session(alice) -> None:
    response = post_events(alice, "s1", {"role": "user", "content": "a", "sequence": 5},
                           {"role": "user", "content": "b", "sequence": 5})
    assert response.status_code == 409
    assert not Session.objects.filter(external_id="s1").exists()


def test_bulk_refuses_duplicate_idempotency_keys_in_one_request(alice) -> None:
    response = post_events(alice, "s1", {"role": "user", "content": "a", "idempotency_key": "k"},
                           {"role": "user", "content": "b", "idempotency_key": "k"})
    assert response.status_code == 400
    assert error_code(response) == "duplicate_idempotency_key"
    assert not Event.objects.exists()


def test_too_many_events_in_one_request(alice, settings, monkeypatch) -> None:
    monkeypatch.setattr("memoryhub.sessions.MAX_BULK_EVENTS", 3)
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


@pytest.mark.parametrize("change", [{"content": "pay 99 EUR"}, {"role": "assistant"},
                                    {"metadata": {"x": 1}}, {"tool_name": "pay"}, {"sequence": 7}])
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
    event = {"role": "user", "content": "pay 10 EUR", "idempotency_key": "req-1", "metadata": {"lang": "en"}}
    first = post_events(alice, "s1", event)
    retry = post_events(alice, "s1", {"role": "user", "content": "pay 10 EUR", "idempotency_key": "req-1"})
    assert retry.status_code == 200 and retry.json()["id"] == first.json()["id"]
    assert post_events(alice, "s1", {**event, "metadata": {}}).status_code == 409  # sent, and different


def test_idempotency_keys_are_per_session(alice) -> None:
    post_events(alice, "s1", {"role": "user", "content": "a", "idempotency_key": "k"})
    response = post_events(alice, "s2", {"role": "user", "content": "b", "idempotency_key": "k"})
    assert response.status_code == 201
    assert Event.objects.count() == 2


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"content": "no role"}, "role"),
        ({"role": "robot", "content": "x"}, "role"),
        ({"role": 1, "content": "x"}, "role"),
        ({"role": "user", "content": 42}, "content"),
        ({"role": "user", "content": ["a"]}, "content"),
        ({"role": "user", "content": "x", "sequence": "abc"}, "sequence"),
        ({"role": "user", "content": "x", "sequence": 0}, "sequence"),
        ({"role": "user", "content": "x", "sequence": 1.5}, "sequence"),
        ({"role": "user", "content": "x", "importance": 1.5}, "importance"),
        ({"role": "user", "content": "x", "importance": "high"}, "importance"),
        ({"role": "user", "content": "x", "importance": "0.5"}, "importance"),
        ({"role": "user", "content": "x", "importance": True}, "importance"),
        ({"role": "user", "content": "x", "sequence": "3"}, "sequence"),
        ({"role": "user", "content": "x", "sequence": True}, "sequence"),
        ({"role": "user", "content": "x", "metadata": [1, 2]}, "metadata"),
        ({"role": "user", "content": "x", "created_at": "yesterday"}, "created_at"),
        ({"role": "user", "content": "x", "tool_name": 7}, "tool_name"),
        ({"role": "user", "content": "x", "idempotency_key": 7}, "idempotency_key"),
        ({"role": "user", "content": "x", "colour": "red"}, "colour"),
    ],
)
def test_bad_event_is_400_and_stores_nothing(alice, event: dict[str, Any], field: str) -> None:
    response = post_events(alice, "s1", event)
    assert response.status_code == 400, response.content
    error_code(response)
    assert field in response.json()["error"]["details"]["fields"]
    assert not Event.objects.exists()
    assert not Session.objects.exists()


@pytest.mark.parametrize("event", [
    {"role": "user", "content": "a\u0000b"},
    {"role": "user", "content": "x", "metadata": {"k": "a\u0000"}},
    {"role": "user", "content": "x", "metadata": {"k\u0000": 1}},
    {"role": "user", "content": "x", "tool_args": ["\u0000"]},
    {"role": "tool", "tool_name": "t", "tool_result": {"deep": [{"x": "\u0000"}]}},
])
def test_null_characters_are_a_400_not_a_database_error(alice, event: dict[str, Any]) -> None:
    alice.raise_request_exception = False
    for response in (post_events(alice, "s1", event), post_events(alice, "s1", event, event)):
        assert response.status_code == 400, response.content
        assert error_code(response) == "null_characters_not_allowed"
    assert not Event.objects.exists() and not Session.objects.exists()


@pytest.mark.parametrize("session_id", ["x" * 201, "-starts-with-dash", "has%20space", "caf%C3%A9"])
def test_lazy_creation_refuses_an_invalid_session_id(alice, session_id: str) -> None:
    alice.raise_request_exception = False
    response = alice.post(url(session_id), {"role": "user", "content": "x"}, format="json")
    assert response.status_code == 400, response.content
    assert error_code(response) == "invalid_session_id"
    assert not Session.objects.exists()
    assert post_events(alice, "x" * 200, {"role": "user", "content": "x"}).status_code == 201


def test_empty_event_is_refused(alice) -> None:
    response = post_events(alice, "s1", {"role": "user", "content": "   "})
    assert response.status_code == 400
    assert error_code(response) == "empty_event"
    assert not Event.objects.exists()


def test_oversize_content_is_refused(alice, settings) -> None:
    from memoryhub.api.sessions import EventInput

    limit = EventInput().fields["content"].max_length
    assert limit == MAX_CONTENT_CHARS
    response = post_events(alice, "s1", {"role": "user", "content": "x" * (limit + 1)})
    assert response.status_code == 400
    assert "content" in response.json()["error"]["details"]["fields"]
    assert not Event.objects.exists()
    assert post_events(alice, "s1", {"role": "user", "content": "x" * limit}).status_code == 201


@pytest.mark.parametrize("body", [{"events": []}, {"events": "nope"}, {"events": [1]}, {"events": [{}]}, [],
                                  "text", {"events": [{"role": "user", "content": "a"}], "extra": 1}])
def test_bad_bulk_shapes(alice, body: Any) -> None:
    response = alice.post(url("s1"), body, format="json")
    assert response.status_code == 400, response.content
    error_code(response)
    assert not Event.objects.exists()


def test_malformed_json_is_a_clear_400(alice) -> None:
    response = alice.post(url("s1"), data='{"role": "user", "content": ', content_type="application/json")
    assert response.status_code == 400
    assert error_code(response) == "malformed_json"
    assert not Event.objects.exists()


# --- read ------------------------------------------------------------------------------------


def test_read_all_in_order(alice) -> None:
    fill(alice, "s1", 5)
    body = alice.get(url("s1")).json()
    assert [e["content"] for e in body["results"]] == ["m1", "m2", "m3", "m4", "m5"]
    assert body["count"] == 5 and body["last_sequence"] == 5 and body["next"] is None
    assert body["session"] == "s1"


def test_limit_returns_the_recent_n_in_chronological_order(alice) -> None:
    fill(alice, "s1", 10)
    body = alice.get(url("s1"), {"limit": 3}).json()
    assert [e["sequence"] for e in body["results"]] == [8, 9, 10]
    assert body["count"] == 10


def test_limit_larger_than_the_cached_window(alice, settings, monkeypatch) -> None:
    monkeypatch.setattr("memoryhub.recent.WINDOW", 4)
    fill(alice, "s1", 10)
    assert [e["sequence"] for e in alice.get(url("s1"), {"limit": 6}).json()["results"]] == [5, 6, 7, 8, 9, 10]
    assert [e["sequence"] for e in alice.get(url("s1"), {"limit": 2}).json()["results"]] == [9, 10]


def test_after_returns_events_since_a_sequence(alice) -> None:
    fill(alice, "s1", 6)
    body = alice.get(url("s1"), {"after": 4}).json()
    assert [e["sequence"] for e in body["results"]] == [5, 6]
    assert alice.get(url("s1"), {"after": 6}).json()["results"] == []


def test_paging_with_next_visits_every_event_once(alice) -> None:
    fill(alice, "s1", 7)
    page = alice.get(url("s1"), {"after": 0, "limit": 3}).json()
    seen = [e["sequence"] for e in page["results"]]
    pages = 1
    while page["next"]:
        page = alice.get(page["next"]).json()
        seen += [e["sequence"] for e in page["results"]]
        pages += 1
    assert seen == list(range(1, 8)) and pages == 3


def test_default_page_size_and_next(alice) -> None:
    fill(alice, "s1", 120)
    first = alice.get(url("s1")).json()
    assert [e["sequence"] for e in first["results"]] == list(range(1, 101))
    assert first["next"]
    second = alice.get(first["next"]).json()
    assert [e["sequence"] for e in second["results"]] == list(range(101, 121))
    assert second["next"] is None


def test_before_reads_backwards(alice) -> None:
    fill(alice, "s1", 10)
    body = alice.get(url("s1"), {"before": 6, "limit": 2}).json()
    assert [e["sequence"] for e in body["results"]] == [4, 5]


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": "x"}, {"limit": 1001}, {"after": -1}, {"after": "y"},
                                    {"before": 0}])
def test_bad_read_parameters(alice, params: dict[str, Any]) -> None:
    fill(alice, "s1", 1)
    response = alice.get(url("s1"), params)
    assert response.status_code == 400
    assert error_code(response) == "invalid_parameter"


def test_reading_an_unknown_session_is_404_and_creates_nothing(alice) -> None:
    response = alice.get(url("ghost"))
    assert response.status_code == 404
    assert error_code(response) == "session_not_found"
    assert not Session.objects.exists()


def test_event_list_query_count_is_pinned(alice, django_assert_max_num_queries) -> None:
    fill(alice, "s1", 150)
    alice.get(url("s1"))
    with django_assert_max_num_queries(3):  # key, session, events
        body = alice.get(url("s1"), {"after": 0, "limit": 150}).json()
    assert len(body["results"]) == 150


# --- the recent-window cache -----------------------------------------------------------------


def event_queries(client: Any, path: str, params: dict[str, Any]) -> tuple[Any, list[str]]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path, params)
    return response, [q["sql"] for q in ctx.captured_queries if "memoryhub_event" in q["sql"]]


def test_second_read_of_the_recent_window_does_not_hit_the_events_table(alice) -> None:
    fill(alice, "s1", 60)
    first, first_sql = event_queries(alice, url("s1"), {"limit": 10})
    assert first_sql, "the first read must load the window"
    second, second_sql = event_queries(alice, url("s1"), {"limit": 5})
    assert second_sql == []
    assert [e["sequence"] for e in second.json()["results"]] == [56, 57, 58, 59, 60]
    assert first.json()["results"][-5:] == second.json()["results"]


def test_append_writes_through_the_cache(alice, django_capture_on_commit_callbacks) -> None:
    fill(alice, "s1", 3)
    alice.get(url("s1"), {"limit": 10})  # warm
    with django_capture_on_commit_callbacks(execute=True):
        post_events(alice, "s1", {"role": "assistant", "content": "fresh"})
    response, sql = event_queries(alice, url("s1"), {"limit": 10})
    assert sql == []
    assert [e["content"] for e in response.json()["results"]] == ["m1", "m2", "m3", "fresh"]


def test_the_window_is_kept_unpickled_in_the_process_and_agrees_with_the_cache(
    alice, django_capture_on_commit_callbacks, monkeypatch,
) -> None:
    """The windows this process wrote are read back from its own map (no unpickling), hold what
    the shared cache holds, and the map stays bounded."""
    from django.core.cache import cache

    from memoryhub import recent

    fill(alice, "s1", 3)
    alice.get(url("s1"), {"limit": 10})  # warm
    with django_capture_on_commit_callbacks(execute=True):
        post_events(alice, "s1", {"role": "assistant", "content": "fresh"})
    session = Session.objects.get(external_id="s1")
    shared = cache.get(recent._key(session.pk, 4, 0))
    assert [e["content"] for e in shared] == ["m1", "m2", "m3", "fresh"]
    assert recent.get(session.pk, 3, 0) is None  # the window it extended is gone from both
    monkeypatch.setattr(cache, "get", lambda *a, **k: pytest.fail("read from the shared cache"))
    assert recent.get(session.pk, 4, 0) == shared
    monkeypatch.undo()
    # Another process wrote the entry: this one reads the cache once, then its own map.
    recent.clear_local()
    assert recent.get(session.pk, 4, 0) == shared
    monkeypatch.setattr(cache, "get", lambda *a, **k: pytest.fail("read from the shared cache"))
    assert recent.get(session.pk, 4, 0) == shared
    monkeypatch.undo()
    for pk in range(recent.LOCAL_ENTRIES + 10):
        recent.put(10_000 + pk, 1, 0, [{"sequence": 1}])
    assert len(recent._local) == recent.LOCAL_ENTRIES
    assert recent.get(10_000, 1, 0) == [{"sequence": 1}]  # the oldest left the map, not the cache


def test_cache_is_never_stale_after_an_append(alice) -> None:
    fill(alice, "s1", 3)
    alice.get(url("s1"), {"limit": 10})
    # on_commit hooks do not run inside the test transaction: the cache is not written through,
    # so the read must notice the new last sequence and reload.
    post_events(alice, "s1", {"role": "user", "content": "new"})
    assert [e["content"] for e in alice.get(url("s1"), {"limit": 10}).json()["results"]][-1] == "new"


def test_cache_is_per_session_and_per_tenant(alice, bob) -> None:
    fill(alice, "s1", 2)
    fill(bob, "s1", 1)
    alice.get(url("s1"), {"limit": 5})
    assert [e["content"] for e in bob.get(url("s1"), {"limit": 5}).json()["results"]] == ["m1"]
    assert len(alice.get(url("s1"), {"limit": 5}).json()["results"]) == 2


def test_a_read_racing_an_append_never_duplicates_events_in_the_cache(alice) -> None:
    """A read that loaded the session before an append committed, then the append's write-through."""
    from memoryhub import recent
    from memoryhub.sessions import recent_events

    fill(alice, "s1", 3)
    stale = Session.objects.get(external_id="s1")  # the reader's snapshot: last_sequence 3
    response = post_events(alice, "s1", {"role": "user", "content": "m4"}, {"role": "user", "content": "m5"})
    new = response.json()["events"]
    assert [e["sequence"] for e in recent_events(stale, 10)] == [1, 2, 3]
    recent.extend(stale.pk, 3, 5, 0, new)  # the append's on-commit write-through, arriving late
    body = alice.get(url("s1"), {"limit": 10}).json()
    assert [e["sequence"] for e in body["results"]] == [1, 2, 3, 4, 5]


def test_write_through_ignores_a_window_that_does_not_end_where_the_append_began(alice) -> None:
    from memoryhub import recent

    fill(alice, "s1", 2)
    session = Session.objects.get(external_id="s1")
    recent.put(session.pk, 2, 0, [{"sequence": 1}, {"sequence": 9}])  # inconsistent entry
    recent.extend(session.pk, 2, 3, 0, [{"sequence": 3}])
    assert recent.get(session.pk, 3, 0) is None


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
    from memoryhub import sessions

    for sid, fields in (("mine", {"user_id": "u1", "metadata": {"k": [1]}}), ("theirs", {"user_id": "u2"}),
                        ("shared", {}), ("elsewhere", {"workspace": "w2", "user_id": "u1"})):
        assert alice.post("/api/v1/sessions/", {"id": sid, **fields}, format="json").status_code == 201
    post_events(bob, "bobs", {"role": "user", "content": "hi"})
    w2 = Workspace.get_named(cast.alice_tenant, "w2")
    keys = [ApiKey.create_key(tenant=cast.alice_tenant, **extra).api_key
            for extra in ({}, {"user_id": "u1"}, {"workspace": w2}, {"workspace": w2, "user_id": "u2"})]
    found = 0
    for key in keys:
        for sid in ("mine", "theirs", "shared", "elsewhere", "bobs", "none"):
            with transaction.atomic():
                locked = sessions._lock_session(key, sid)
                try:
                    expected = sessions.get_session(key, sid, for_update=True, related=False)
                except sessions.NotFound:
                    expected = None
            assert (locked is None) == (expected is None), (key.user_id, key.workspace_id, sid)
            if expected is not None:
                found += 1
                assert {f.attname: getattr(locked, f.attname) for f in Session._meta.concrete_fields} == \
                    {f.attname: getattr(expected, f.attname) for f in Session._meta.concrete_fields}
    # every key sees some, none sees bob's or another user's; a user-limited key not the unowned one
    assert found == 4 + 2 + 1 + 0


def test_an_append_is_three_statements_with_its_notice_inside(alice, settings, monkeypatch) -> None:
    """The session's locking read; the event with the session's counters and the lanes' notice;
    the chunk (no conversation context asked for here: it may cost a read of the log)."""
    monkeypatch.setattr("retrieval.indexing.CONTEXT_MESSAGES", 0)
    assert alice.post("/api/v1/sessions/", {"id": "s1"}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        assert post_events(alice, "s1", {"role": "user", "content": "hello"}).status_code == 201
    statements = [q["sql"] for q in queries.captured_queries
                  if not q["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))]
    assert [sql.split()[0] for sql in statements] == ["SELECT", "WITH", "INSERT"], statements
    assert "FOR UPDATE" in statements[0] and "pg_notify" in statements[1] and "retrieval_chunk" in statements[2]


def test_an_append_reads_neither_the_workspace_nor_the_channel(alice) -> None:
    """The append reads its session alone (no join): its chunks need the workspace and channel
    ids only, and nothing on the path loads them afterwards."""
    assert post_events(alice, "s1", {"role": "user", "content": "first"}).status_code == 201
    with CaptureQueriesContext(connection) as queries:
        response = post_events(alice, "s1", {"role": "user", "content": "second"})
    assert response.status_code == 201 and response.json()["session"] == "s1"
    touched = [q["sql"] for q in queries.captured_queries
               if '"accounts_workspace"' in q["sql"] or '"accounts_channel"' in q["sql"]]
    assert touched == []
    chunk_scope = Session.objects.values_list("workspace_id", "channel_id").get(external_id="s1")
    from retrieval.models import Chunk

    assert set(Chunk.objects.filter(session__external_id="s1").values_list("workspace_id", "channel_id")) == {chunk_scope}


# --- created_at within a sane window (issue 40, item 4) -----------------------------------------


@pytest.mark.parametrize("created_at", ["9999-12-31T00:00:00Z", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z"])
def test_a_created_at_outside_the_window_is_400_and_says_the_window(alice, created_at: str) -> None:
    for events in ([{"role": "user", "content": "x", "created_at": created_at}],
                   [{"role": "user", "content": "ok"}, {"role": "user", "content": "x", "created_at": created_at}]):
        response = post_events(alice, "s1", *events)
        assert response.status_code == 400, response.content
        assert error_code(response) == "created_at_out_of_range"
        error = response.json()["error"]
        assert "1970-01-01" in error["message"] and "86400 seconds from now" in error["message"]
        assert any(name.endswith("created_at") for name in error["details"]["fields"]), error
    assert not Event.objects.exists() and not Session.objects.exists()


def test_a_created_at_in_the_past_or_a_little_ahead_is_kept(alice, monkeypatch) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memoryhub.api import fields

    ahead = (timezone.now() + timedelta(hours=1)).isoformat()
    response = post_events(alice, "s1", {"role": "user", "content": "old", "created_at": "1999-01-01T00:00:00Z"},
                           {"role": "user", "content": "ahead", "created_at": ahead})
    assert response.status_code == 201, response.content
    monkeypatch.setattr(fields, "EVENT_MAX_FUTURE_SECONDS", 60)
    response = post_events(alice, "s1", {"role": "user", "content": "too far", "created_at": ahead})
    assert error_code(response) == "created_at_out_of_range"
