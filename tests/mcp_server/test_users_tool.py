"""memory_users: the end users GET /users/ lists, over MCP, with the key's limits."""

from __future__ import annotations

import pytest

from tests.base import make_client, make_key, make_tenant
from tests.mcp_server.conftest import Mcp

pytestmark = pytest.mark.django_db(transaction=True)


def test_memory_users_answers_what_rest_answers(http_mcp: Mcp) -> None:
    alice, bob = make_tenant("alice"), make_tenant("bob")
    alice_key, bob_key = make_key(alice), make_key(bob)
    for key, user in ((alice_key, "ann"), (alice_key, "bob"), (bob_key, "ann")):
        response = make_client(key).post(
            "/api/v1/facts/", {"content": f"{user} fact", "user_id": user}, format="json"
        )
        assert response.status_code == 201
    ann_key = make_key(alice, scopes=("read",), user="ann")
    everyone, first, bad = http_mcp.calls(
        alice_key,
        [("memory_users", {}), ("memory_users", {"limit": 1}), ("memory_users", {"limit": 0})],
    )
    as_ann = http_mcp.call(ann_key, "memory_users", {})
    in_bob = http_mcp.call(bob_key, "memory_users", {})
    rest = make_client(alice_key).get("/api/v1/users/").json()
    assert everyone.data["results"] == rest["results"] and everyone.data["count"] == 2
    assert [r["user_id"] for r in first.data["results"]] == ["ann"] and first.data[
        "next_offset"
    ] == 1
    assert [(r["user_id"], r["facts"]) for r in as_ann.data["results"]] == [("ann", 1)]
    assert [r["user_id"] for r in in_bob.data["results"]] == ["ann"]
    assert bad.is_error and bad.code == "invalid_parameter"
