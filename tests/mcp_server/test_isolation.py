"""Through MCP a key reaches exactly what it reaches through REST: its tenant, its workspace if it
is limited to one, its user (and shared memories) if it is limited to a user. And the HTTP endpoint
itself refuses requests without a valid key: a JSON-RPC error carrying the REST error envelope's
code, which the official client hands its caller."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.base import make_key, make_tenant
from tests.mcp_server.conftest import Mcp

pytestmark = pytest.mark.django_db(transaction=True)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _texts(result: Any) -> list[str]:
    return [r["text"] for r in result.data["results"]]


def test_another_tenant_sees_and_touches_nothing(http_mcp: Mcp) -> None:
    alice_key, bob_key = make_key(make_tenant("alice")), make_key(make_tenant("bob"))
    _, note, fact = http_mcp.calls(
        alice_key,
        [
            (
                "memory_remember",
                {
                    "session": "a-chat",
                    "events": [{"role": "user", "content": "Alice's secret plan."}],
                },
            ),
            (
                "memory_note",
                {"action": "create", "note_id": "a-note", "content": "Alice's secret note."},
            ),
            (
                "memory_fact",
                {
                    "action": "upsert",
                    "content": "Alice's secret fact.",
                    "category": "x",
                    "key": "y",
                },
            ),
        ],
    )
    calls = http_mcp.calls(
        bob_key,
        [
            ("memory_search", {"query": "secret", "scope": "account"}),
            ("memory_context", {"query": "secret"}),
            ("memory_browse", {}),
            ("memory_note", {"action": "get", "note_id": "a-note"}),
            ("memory_note", {"action": "delete", "note_id": "a-note"}),
            ("memory_fact", {"action": "delete", "fact_id": fact.data["id"]}),
            ("scratchpad_write", {"session": "a-chat", "items": []}),
            ("memory_browse", {"session": "a-chat"}),
            ("memory_stats", {}),
        ],
    )
    search, context, browse, note_get, note_delete, fact_delete, pad, browse_session, stats = calls
    assert (
        search.data["results"] == []
        and context.data["items"] == []
        and browse.data["results"] == []
    )
    assert note_get.code == note_delete.code == "note_not_found"
    assert fact_delete.code == "fact_not_found"
    assert pad.code == browse_session.code == "session_not_found"
    assert (
        stats.data["tenant"],
        stats.data["sessions"],
        stats.data["notes"],
        stats.data["facts"],
    ) == ("bob", 0, 0, 0)
    still = http_mcp.calls(
        alice_key,
        [
            ("memory_note", {"action": "get", "note_id": "a-note"}),
            ("memory_fact", {"action": "get", "fact_id": fact.data["id"]}),
        ],
    )
    assert not still[0].is_error and not still[1].is_error


def test_a_user_limited_key_acts_only_as_its_user(http_mcp: Mcp) -> None:
    tenant = make_tenant("alice")
    admin_key, ann_key = make_key(tenant), make_key(tenant, user="ann")
    http_mcp.calls(
        admin_key,
        [
            (
                "memory_remember",
                {
                    "session": "ben-chat",
                    "user_id": "ben",
                    "events": [{"role": "user", "content": "Ben's blood type is AB."}],
                },
            ),
            (
                "memory_note",
                {"action": "create", "content": "The office closes at 6pm.", "note_id": "shared"},
            ),
        ],
    )
    calls = http_mcp.calls(
        ann_key,
        [
            (
                "memory_remember",
                {
                    "session": "ann-chat",
                    "events": [{"role": "user", "content": "Ann's blood type is O."}],
                },
            ),
            ("memory_search", {"query": "blood type office closes", "scope": "account"}),
            ("memory_context", {"query": "blood type"}),
            ("memory_browse", {}),
            ("memory_search", {"query": "blood", "user_id": "ben"}),
            (
                "memory_remember",
                {"session": "x", "user_id": "ben", "events": [{"role": "user", "content": "hi"}]},
            ),
            ("memory_browse", {"session": "ben-chat"}),
            ("memory_note", {"action": "create", "content": "Ann likes jazz."}),
        ],
    )
    remembered, search, context, browse, as_ben, remember_as_ben, ben_session, note = calls
    assert remembered.data["events"][0]["content"] == "Ann's blood type is O."
    assert sorted(_texts(search)) == ["Ann's blood type is O.", "The office closes at 6pm."]
    assert "Ben" not in context.text and "Ann's blood type is O." in context.text
    assert [e["content"] for e in browse.data["results"]] == ["Ann's blood type is O."]
    assert as_ben.code == remember_as_ben.code == "user_forbidden"
    assert ben_session.code == "session_not_found"
    assert note.data["user_id"] == "ann"  # written as its user
    # An unlimited key naming ann sees the same: hers and shared ones, never Ben's.
    # (One query about each memory: search lists only what is about the query.)
    mine = http_mcp.calls(
        admin_key,
        [
            ("memory_search", {"query": query, "user_id": "ann", "scope": "account"})
            for query in ("blood type", "jazz", "office closes")
        ],
    )
    assert sorted(text for found in mine for text in _texts(found)) == [
        "Ann likes jazz.",
        "Ann's blood type is O.",
        "The office closes at 6pm.",
    ]


def test_a_workspace_limited_key_stays_in_its_workspace(http_mcp: Mcp) -> None:
    tenant = make_tenant("alice")
    admin_key, research_key = make_key(tenant), make_key(tenant, workspace="research")
    http_mcp.call(
        admin_key,
        "memory_remember",
        {
            "session": "ops-chat",
            "workspace": "ops",
            "events": [{"role": "user", "content": "The ops pager rotation starts Monday."}],
        },
    )
    mine, other, elsewhere, search = http_mcp.calls(
        research_key,
        [
            (
                "memory_remember",
                {
                    "session": "r-chat",
                    "events": [{"role": "user", "content": "Research pager: none."}],
                },
            ),
            ("memory_search", {"query": "pager", "workspace": "ops"}),
            (
                "memory_remember",
                {"session": "y", "workspace": "ops", "events": [{"role": "user", "content": "x"}]},
            ),
            ("memory_search", {"query": "pager", "scope": "account"}),
        ],
    )
    assert not mine.is_error
    assert other.code == elsewhere.code == "workspace_forbidden"
    assert _texts(search) == ["Research pager: none."]


@pytest.mark.parametrize(
    ("authorization", "code"),
    [
        (None, "not_authenticated"),
        ("Bearer mh_00000000_not-a-key", "invalid_api_key"),
        ("Basic dXNlcjpwYXNz", "invalid_api_key"),
    ],
)
def test_http_requests_need_a_valid_key(
    server_url: str, authorization: str | None, code: str
) -> None:
    headers = {**HEADERS, **({"Authorization": authorization} if authorization else {})}
    response = httpx.post(f"{server_url}/mcp/", json=INIT, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    error = response.json()["error"]
    assert error["data"]["code"] == code and error["message"] == error["data"]["message"]


def test_the_official_client_surfaces_a_wrong_key_as_such(http_mcp: Mcp) -> None:
    """A wrong key reaches the agent as an MCP error saying the key is invalid, not as an
    anonymous "Server returned an error response"."""
    from mcp.shared.exceptions import MCPError

    async def initialize(session: Any) -> None:
        await session.initialize()

    with pytest.raises(BaseException) as raised:
        http_mcp.session("mh_00000000_not-a-key", initialize)
    found = _first(raised.value, MCPError)
    assert found is not None, repr(raised.value)
    assert found.error.message == "Invalid API key."
    assert found.error.data["code"] == "invalid_api_key"


def _first(exc: BaseException, kind: type[BaseException]) -> Any:
    """The first `kind` in `exc`, its exception groups and causes."""
    if isinstance(exc, kind):
        return exc
    inner = [*getattr(exc, "exceptions", ()), exc.__cause__, exc.__context__]
    return next(
        (found for e in inner if e is not None and (found := _first(e, kind)) is not None), None
    )


def test_a_revoked_key_is_refused_and_a_valid_one_served_with_or_without_the_slash(
    server_url: str,
) -> None:
    from accounts.models import ApiKey

    raw = make_key(make_tenant("alice"))
    for path in ("/mcp/", "/mcp"):
        response = httpx.post(
            f"{server_url}{path}", json=INIT, headers={**HEADERS, "Authorization": f"Bearer {raw}"}
        )
        assert response.status_code == 200, response.text
        assert response.json()["result"]["serverInfo"]["name"] == "memoryhub"
    ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw)).revoke()
    response = httpx.post(
        f"{server_url}/mcp/", json=INIT, headers={**HEADERS, "Authorization": f"Bearer {raw}"}
    )
    assert (
        response.status_code == 401
        and response.json()["error"]["data"]["code"] == "invalid_api_key"
    )
