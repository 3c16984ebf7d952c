"""POST /sessions/{id}/events/ refusing bad input with a clear 400 that stores nothing: bad events
and bulk shapes, NUL characters, invalid session ids, oversize content, created_at outside its
window."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.event_log import MAX_CONTENT_CHARS
from memoryhub.models import Event, Session
from tests.base import error_code, post_events
from tests.memoryhub.test_events import url

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


@pytest.mark.parametrize(
    "event",
    [
        {"role": "user", "content": "a\u0000b"},
        {"role": "user", "content": "x", "metadata": {"k": "a\u0000"}},
        {"role": "user", "content": "x", "metadata": {"k\u0000": 1}},
        {"role": "user", "content": "x", "tool_args": ["\u0000"]},
        {"role": "tool", "tool_name": "t", "tool_result": {"deep": [{"x": "\u0000"}]}},
    ],
)
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
    from memoryhub.api.events_input import EventInput

    limit = EventInput().fields["content"].max_length
    assert limit == MAX_CONTENT_CHARS
    response = post_events(alice, "s1", {"role": "user", "content": "x" * (limit + 1)})
    assert response.status_code == 400
    assert "content" in response.json()["error"]["details"]["fields"]
    assert not Event.objects.exists()
    assert post_events(alice, "s1", {"role": "user", "content": "x" * limit}).status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        {"events": []},
        {"events": "nope"},
        {"events": [1]},
        {"events": [{}]},
        [],
        "text",
        {"events": [{"role": "user", "content": "a"}], "extra": 1},
    ],
)
def test_bad_bulk_shapes(alice, body: Any) -> None:
    response = alice.post(url("s1"), body, format="json")
    assert response.status_code == 400, response.content
    error_code(response)
    assert not Event.objects.exists()


def test_malformed_json_is_a_clear_400(alice) -> None:
    response = alice.post(
        url("s1"), data='{"role": "user", "content": ', content_type="application/json"
    )
    assert response.status_code == 400
    assert error_code(response) == "malformed_json"
    assert not Event.objects.exists()


# --- created_at within a sane window -----------------------------------------


@pytest.mark.parametrize(
    "created_at", ["9999-12-31T00:00:00Z", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z"]
)
def test_a_created_at_outside_the_window_is_400_and_says_the_window(alice, created_at: str) -> None:
    for events in (
        [{"role": "user", "content": "x", "created_at": created_at}],
        [
            {"role": "user", "content": "ok"},
            {"role": "user", "content": "x", "created_at": created_at},
        ],
    ):
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
    response = post_events(
        alice,
        "s1",
        {"role": "user", "content": "old", "created_at": "1999-01-01T00:00:00Z"},
        {"role": "user", "content": "ahead", "created_at": ahead},
    )
    assert response.status_code == 201, response.content
    monkeypatch.setattr(fields, "EVENT_MAX_FUTURE_SECONDS", 60)
    response = post_events(alice, "s1", {"role": "user", "content": "too far", "created_at": ahead})
    assert error_code(response) == "created_at_out_of_range"
