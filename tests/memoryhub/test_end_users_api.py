"""GET /api/v1/users/: the end users a key may see, with their counts and last activity."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.base import error_code, make_client, make_key, new_session, post_events


def _fill(client: Any, workspace: str = "") -> None:
    where = {"workspace": workspace} if workspace else {}
    new_session(client, f"ann-1{workspace}", user_id="ann", **where)
    new_session(client, f"ann-2{workspace}", user_id="ann", **where)
    post_events(client, f"ann-1{workspace}", {"role": "user", "content": "hello"})
    for body in (
        {"content": "Ann likes tea", "user_id": "ann"},
        {"content": "Bob likes jazz", "user_id": "bob"},
        {"content": "Shared knowledge"},
    ):
        assert client.post("/api/v1/facts/", {**body, **where}, format="json").status_code == 201
    assert (
        client.post(
            "/api/v1/notes/", {"content": "Ann's note", "user_id": "ann", **where}, format="json"
        ).status_code
        == 201
    )


def _users(client: Any, **params: Any) -> dict[str, Any]:
    response = client.get("/api/v1/users/", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_lists_users_with_counts(cast: Any) -> None:
    _fill(cast.alice)
    body = _users(cast.alice)
    assert body["count"] == 2 and body["next"] is None
    rows = {r["user_id"]: r for r in body["results"]}
    assert [r["user_id"] for r in body["results"]] == ["ann", "bob"]
    assert (rows["ann"]["sessions"], rows["ann"]["facts"], rows["ann"]["notes"]) == (2, 1, 1)
    assert (rows["bob"]["sessions"], rows["bob"]["facts"], rows["bob"]["notes"]) == (0, 1, 0)
    assert rows["ann"]["last_activity"] and rows["bob"]["last_activity"]


def test_pages(cast: Any) -> None:
    for n in range(5):
        assert (
            cast.alice.post(
                "/api/v1/facts/", {"content": f"fact {n}", "user_id": f"u{n}"}, format="json"
            ).status_code
            == 201
        )
    first = _users(cast.alice, limit=2)
    assert (
        first["count"] == 5
        and [r["user_id"] for r in first["results"]] == ["u0", "u1"]
        and first["next"]
    )
    last = _users(cast.alice, limit=2, offset=4)
    assert (
        [r["user_id"] for r in last["results"]] == ["u4"]
        and last["next"] is None
        and last["previous"]
    )


def test_query_count_does_not_grow_with_users(cast: Any) -> None:
    for n in range(8):
        assert (
            cast.alice.post(
                "/api/v1/facts/", {"content": f"fact {n}", "user_id": f"u{n}"}, format="json"
            ).status_code
            == 201
        )
    _users(cast.alice)  # the key is cached
    with CaptureQueriesContext(connection) as few:
        _users(cast.alice, limit=2)
    with CaptureQueriesContext(connection) as many:
        _users(cast.alice, limit=8)
    assert len(many) == len(few)


def test_tenants_and_users_are_isolated(cast: Any) -> None:
    _fill(cast.alice)
    _fill(cast.bob)  # the same user ids in another tenant
    assert (
        cast.bob.post(
            "/api/v1/facts/", {"content": "Only bob's tenant", "user_id": "zed"}, format="json"
        ).status_code
        == 201
    )
    assert [r["user_id"] for r in _users(cast.alice)["results"]] == ["ann", "bob"]
    assert [r["user_id"] for r in _users(cast.bob)["results"]] == ["ann", "bob", "zed"]
    as_ann = make_client(make_key(cast.alice_tenant, scopes=("read",), user="ann"))
    body = _users(as_ann)
    assert body["count"] == 1 and [(r["user_id"], r["facts"]) for r in body["results"]] == [
        ("ann", 1)
    ]


def test_a_workspace_key_sees_its_workspace(cast: Any) -> None:
    _fill(cast.alice)
    _fill(cast.alice, workspace="other")
    in_other = make_client(make_key(cast.alice_tenant, workspace="other"))
    rows = {r["user_id"]: r for r in _users(in_other)["results"]}
    # not the default's
    assert (rows["ann"]["sessions"], rows["ann"]["facts"], rows["ann"]["notes"]) == (2, 1, 1)
    assert {r["user_id"]: r["sessions"] for r in _users(cast.alice)["results"]}["ann"] == 4


def test_bad_input(cast: Any) -> None:
    response = cast.alice.get("/api/v1/users/", {"limit": 0})
    assert response.status_code == 400 and error_code(response) == "invalid_parameter"
    response = cast.alice.get("/api/v1/users/", {"offset": "x"})
    assert response.status_code == 400 and error_code(response) == "invalid_parameter"
    assert make_client("mh_nope_nope").get("/api/v1/users/").status_code == 401
