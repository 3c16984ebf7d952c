"""Scratchpad (docs/memory-model.md#scratchpad): GET/PUT/DELETE /sessions/{id}/scratchpad/, limits,
archive and forget."""

from __future__ import annotations

import pytest

from memoryhub.models import Scratchpad, ScratchpadItem
from tests.base import error_code, make_client, make_key, post_events


def url(session: str = "s1") -> str:
    return f"/api/v1/sessions/{session}/scratchpad/"


@pytest.fixture
def session(alice):  # type: ignore[no-untyped-def]
    post_events(alice, "s1", {"role": "user", "content": "hi"})
    return "s1"


def items(client, session: str = "s1") -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    return client.get(url(session)).json()["items"]


def test_empty_then_write_replaces_whole_pad(alice, session) -> None:  # type: ignore[no-untyped-def]
    body = alice.get(url()).json()
    assert body["items"] == [] and body["count"] == 0 and body["version"] == 0
    r = alice.put(
        url(),
        {"items": [{"key": "goal", "value": "ship v2"}, {"key": "step", "value": "3/5"}]},
        format="json",
    )
    assert r.status_code == 200 and r.json()["count"] == 2 and r.json()["version"] == 1
    assert items(alice) == [{"key": "goal", "value": "ship v2"}, {"key": "step", "value": "3/5"}]
    # an object map is accepted too
    r = alice.put(url(), {"items": {"only": "this"}}, format="json")
    assert r.status_code == 200
    assert items(alice) == [{"key": "only", "value": "this"}]
    assert ScratchpadItem.objects.count() == 1 and Scratchpad.objects.get().version == 2


def test_plain_string_items_get_numbered_keys(alice, session) -> None:  # type: ignore[no-untyped-def]
    r = alice.put(url(), {"items": ["find the bug", "write the test"]}, format="json")
    assert r.status_code == 200
    assert items(alice) == [
        {"key": "1", "value": "find the bug"},
        {"key": "2", "value": "write the test"},
    ]


def test_limits_exactly_at_the_edge(alice, session) -> None:  # type: ignore[no-untyped-def]
    full = [{"key": f"k{i}", "value": "v" * 240} for i in range(32)]
    assert alice.put(url(), {"items": full}, format="json").status_code == 200
    assert len(items(alice)) == 32


@pytest.mark.parametrize(
    "payload,code",
    [
        ({"items": [{"key": f"k{i}", "value": "v"} for i in range(33)]}, "too_many_items"),
        ({"items": [{"key": "k", "value": "v" * 241}]}, "item_too_long"),
        ({"items": [{"key": "k" * 241, "value": "v"}]}, "item_too_long"),
        ({"items": [{"key": "a", "value": "1"}, {"key": "a", "value": "2"}]}, "duplicate_key"),
        ({"items": [{"key": "", "value": "1"}]}, "invalid_item"),
        # 253 characters as JSON
        ({"items": [{"key": "a", "value": {"text": "v" * 240}}]}, "item_too_long"),
        ({"items": [{"key": 5, "value": "a"}]}, "invalid_item"),
        ({"items": [{"key": "a", "value": "1", "extra": 1}]}, "invalid_item"),
        ({"items": [5]}, "invalid_item"),
        ({"items": ["x" * 241]}, "item_too_long"),
        ({"items": "text"}, "invalid_items"),
        ({}, "validation_error"),
        ({"items": [], "more": 1}, "unknown_field"),
    ],
)
def test_bad_write_changes_nothing(alice, session, payload, code) -> None:  # type: ignore[no-untyped-def]
    alice.put(url(), {"items": [{"key": "keep", "value": "me"}]}, format="json")
    r = alice.put(url(), payload, format="json")
    assert r.status_code == 400 and error_code(r) == code, r.json()
    assert items(alice) == [{"key": "keep", "value": "me"}]
    assert Scratchpad.objects.get().version == 1


def test_clear(alice, session) -> None:  # type: ignore[no-untyped-def]
    alice.put(
        url(), {"items": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}]}, format="json"
    )
    r = alice.delete(url())
    assert r.status_code == 200 and r.json()["cleared"] == 2 and r.json()["items"] == []
    assert items(alice) == [] and not ScratchpadItem.objects.exists()


def test_kept_on_archive_and_read_only(alice, session) -> None:  # type: ignore[no-untyped-def]
    alice.put(url(), {"items": [{"key": "trail", "value": "kept"}]}, format="json")
    assert (
        alice.patch("/api/v1/sessions/s1/", {"status": "archived"}, format="json").status_code
        == 200
    )
    assert items(alice) == [{"key": "trail", "value": "kept"}]
    r = alice.put(url(), {"items": []}, format="json")
    assert r.status_code == 409 and error_code(r) == "session_archived"
    assert alice.delete(url()).status_code == 409
    assert items(alice) == [{"key": "trail", "value": "kept"}]


def test_cleared_when_the_session_is_forgotten(alice, session) -> None:  # type: ignore[no-untyped-def]
    alice.put(url(), {"items": [{"key": "a", "value": "1"}]}, format="json")
    r = alice.delete("/api/v1/sessions/s1/")
    assert r.status_code == 200
    assert not Scratchpad.objects.exists() and not ScratchpadItem.objects.exists()
    assert r.json()["deleted"].get("memoryhub.ScratchpadItem") == 1


def test_unknown_session(alice) -> None:  # type: ignore[no-untyped-def]
    assert error_code(alice.get(url("ghost"))) == "session_not_found"
    r = alice.put(url("ghost"), {"items": [{"key": "a", "value": "1"}]}, format="json")
    assert r.status_code == 404 and not Scratchpad.objects.exists()


def test_cross_tenant_isolation(alice, bob, session) -> None:  # type: ignore[no-untyped-def]
    alice.put(url(), {"items": [{"key": "secret", "value": "alice"}]}, format="json")
    assert bob.get(url()).status_code == 404
    assert (
        bob.put(url(), {"items": [{"key": "x", "value": "bob"}]}, format="json").status_code == 404
    )
    assert bob.delete(url()).status_code == 404
    assert items(alice) == [{"key": "secret", "value": "alice"}]


def test_workspace_limited_and_read_only_keys(cast, session) -> None:  # type: ignore[no-untyped-def]
    limited = make_client(make_key(cast.alice_tenant, workspace="lab"))
    assert limited.get(url()).status_code == 404
    assert limited.put(url(), {"items": []}, format="json").status_code == 404
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    assert reader.get(url()).status_code == 200
    r = reader.put(url(), {"items": [{"key": "a", "value": "1"}]}, format="json")
    assert r.status_code == 403 and error_code(r) == "insufficient_scope"
    assert not ScratchpadItem.objects.exists()


def test_per_key_writes_keep_the_other_items(alice, session) -> None:  # type: ignore[no-untyped-def]
    """Two agents writing different keys do not overwrite each other."""
    alice.put(
        url(),
        {"items": [{"key": "goal", "value": "Book the flight"}, {"key": "done", "value": "hotel"}]},
        format="json",
    )
    first = alice.patch(url(), {"set": {"open": "Which day?"}}, format="json")
    second = alice.patch(
        url(),
        {"set": {"goal": "Book the 7:15 flight"}, "remove": ["done", "never-there"]},
        format="json",
    )
    assert first.status_code == second.status_code == 200, second.json()
    assert items(alice) == [
        {"key": "goal", "value": "Book the 7:15 flight"},
        {"key": "open", "value": "Which day?"},
    ]
    assert second.json()["version"] == first.json()["version"] + 1


def test_a_stale_expected_version_is_409_and_changes_nothing(alice, session) -> None:  # type: ignore[no-untyped-def]
    read = alice.put(url(), {"items": {"plan": "A"}}, format="json").json()
    assert (
        alice.put(
            url(), {"items": {"plan": "B"}, "expected_version": read["version"]}, format="json"
        ).status_code
        == 200
    )
    for stale in (
        alice.put(
            url(), {"items": {"plan": "C"}, "expected_version": read["version"]}, format="json"
        ),
        alice.patch(
            url(), {"set": {"plan": "C"}, "expected_version": read["version"]}, format="json"
        ),
    ):
        assert stale.status_code == 409 and error_code(stale) == "stale_version"
        assert stale.json()["error"]["details"]["version"] == read["version"] + 1
    assert items(alice) == [{"key": "plan", "value": "B"}]
    # Past the item limit, a patch is refused whole.
    full = {f"k{i}": "v" for i in range(31)}
    assert alice.patch(url(), {"set": full}, format="json").status_code == 200
    over = alice.patch(url(), {"set": {"one": "more", "two": "more"}}, format="json")
    assert (
        over.status_code == 400 and error_code(over) == "too_many_items" and len(items(alice)) == 32
    )
