"""One agent session over each transport (streamable HTTP at /mcp/ and `manage.py mcp` on stdio):
initialize, list the tools, remember and recall, a tool error with its REST code, and tenants and
users kept apart."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from mcp import ClientSession, types

from retrieval.mcp_server import catalog
from tests.base import make_key, make_tenant
from tests.mcp_server.conftest import ROOT, Mcp, as_result, server_env

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = {
    "memory_search",
    "memory_context",
    "memory_browse",
    "memory_stats",
    "memory_users",
    "memory_remember",
    "memory_note",
    "memory_fact",
    "scratchpad_read",
    "scratchpad_write",
    "scratchpad_clear",
    "summary_expand",
}


async def _describe(session: ClientSession) -> dict[str, Any]:
    """What a client learns before calling anything: (re)initialize's answer and the tool list."""
    init = await session.initialize()
    listed = await session.list_tools()
    return {"init": init, "tools": {tool.name: tool for tool in listed.tools}}


def _properties(schema: dict[str, Any], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """(dotted name, schema) of every property of an object schema, nested objects and arrays of
    objects included."""
    found = []
    for name, prop in schema.get("properties", {}).items():
        found.append((prefix + name, prop))
        items = prop.get("items") if prop.get("type") == "array" else None
        if isinstance(items, dict) and "properties" in items:
            found += _properties(items, f"{prefix}{name}[].")
        if "properties" in prop:
            found += _properties(prop, f"{prefix}{name}.")
    return found


def test_initialize_and_list_tools(mcp: Mcp) -> None:
    key = make_key(make_tenant("alice"))
    seen = mcp.session(key, _describe)
    assert seen["init"].server_info.name == "memoryhub"
    assert "memory_remember" in (seen["init"].instructions or "")
    tools = seen["tools"]
    assert set(tools) == TOOLS
    # The catalogue sits in every agent's context before it asks anything: at most ~6,000
    # characters as the client receives it (it was 19,202 with the REST reference's texts).
    listed = types.ListToolsResult(tools=list(tools.values())).model_dump_json(
        by_alias=True, exclude_none=True
    )
    assert len(listed) <= 6000, len(listed)
    for tool in tools.values():
        assert len(tool.description or "") > 40 and tool.title, tool.name
        schema = tool.input_schema
        assert schema["type"] == "object"
        # Every argument is typed, and described where its name and type do not say it all.
        for name, prop in schema["properties"].items():
            assert (
                prop.get("type")
                or prop.get("anyOf")
                or prop.get("enum")
                or name in ("tool_args", "tool_result")
            ), f"{tool.name}.{name} has no type"
        for name, prop in _properties(schema):
            assert prop.get("description") or name.split("[].")[-1] in catalog.SELF_EVIDENT, (
                f"{tool.name}.{name} has no description"
            )
    assert tools["memory_search"].input_schema["required"] == ["query"]
    assert tools["memory_search"].input_schema["properties"]["mode"]["enum"] == [
        "hybrid",
        "vector",
        "text",
        "exact",
        "fuzzy",
        "regex",
    ]
    assert tools["memory_remember"].input_schema["required"] == ["session", "events"]
    assert tools["memory_search"].annotations.read_only_hint is True
    assert tools["memory_note"].annotations is None  # not read-only: the protocol's default


def test_remember_then_recall_and_an_error(mcp: Mcp) -> None:
    key = make_key(make_tenant("alice"))
    remembered, context, bad = mcp.calls(
        key,
        [
            (
                "memory_remember",
                {
                    "session": "trip",
                    "user_id": "ann",
                    "events": [
                        {
                            "role": "user",
                            "content": "I am flying to Lisbon on May 3rd and I want an aisle seat.",
                        },
                        {"role": "assistant", "content": "Noted: Lisbon on May 3rd, aisle seat."},
                    ],
                },
            ),
            ("memory_context", {"user_id": "ann", "query": "Which seat does she want to Lisbon?"}),
            (
                "memory_search",
                {
                    "query": "Lisbon",
                    "since": "2026-02-01T00:00:00Z",
                    "until": "2026-01-01T00:00:00Z",
                },
            ),
        ],
    )
    assert not remembered.is_error, remembered.text
    assert remembered.data["created"] == 2 and [
        e["sequence"] for e in remembered.data["events"]
    ] == [1, 2]
    assert not context.is_error, context.text
    assert context.text.startswith("## Relevant Memory") and "aisle seat" in context.text
    assert context.data["markdown"] == context.text and context.data["user_id"] == "ann"
    assert bad.is_error and bad.code == "invalid_time_range"
    assert '"invalid_time_range"' in bad.text  # the text is the REST error envelope too


def test_tenants_and_users_stay_apart(mcp: Mcp) -> None:
    alice = make_tenant("alice")
    alice_key, ann_key, bob_key = (
        make_key(alice),
        make_key(alice, user="ann"),
        make_key(make_tenant("bob")),
    )
    mcp.calls(
        alice_key,
        [
            (
                "memory_remember",
                {
                    "session": "s-ann",
                    "user_id": "ann",
                    "events": [{"role": "user", "content": "Ann's locker code is 4711."}],
                },
            ),
            (
                "memory_remember",
                {
                    "session": "s-ben",
                    "user_id": "ben",
                    "events": [{"role": "user", "content": "Ben's locker code is 1234."}],
                },
            ),
        ],
    )
    search, other_user = mcp.calls(
        ann_key,
        [
            ("memory_search", {"query": "locker code", "scope": "account"}),
            ("memory_context", {"user_id": "ben", "query": "locker code"}),
        ],
    )
    assert [r["text"] for r in search.data["results"]] == ["Ann's locker code is 4711."]
    assert other_user.code == "user_forbidden"
    bob_search, bob_session = mcp.calls(
        bob_key,
        [
            ("memory_search", {"query": "locker code", "scope": "account"}),
            ("scratchpad_read", {"session": "s-ann"}),
        ],
    )
    assert bob_search.data["results"] == []
    assert bob_session.code == "session_not_found"


def test_stdio_refuses_a_bad_key_before_serving(tmp_path: Any) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--key", "mh_deadbeef_nope"],
        cwd=ROOT,
        env=server_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode != 0
    assert "Invalid API key" in result.stderr
    assert result.stdout == ""  # stdout is the protocol's: nothing else is written there


def test_stdio_checks_the_key_on_every_call(stdio_mcp: Mcp) -> None:
    """A key revoked while the stdio server runs stops working at the next call, as over REST."""
    from accounts.models import ApiKey

    key = make_key(make_tenant("alice"))

    async def scenario(session: ClientSession) -> tuple[Any, Any]:
        first = as_result(await session.call_tool("memory_stats", {}))
        await _revoke(key)
        return first, as_result(await session.call_tool("memory_stats", {}))

    async def _revoke(raw: str) -> None:
        from asgiref.sync import sync_to_async
        from django.db import connection

        def revoke() -> None:
            try:
                ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw)).revoke()
            finally:
                # this helper thread's own connection, or it outlives the test database
                connection.close()

        await sync_to_async(revoke, thread_sensitive=False)()

    first, second = stdio_mcp.session(key, scenario)
    assert not first.is_error and first.data["tenant"] == "alice"
    assert second.code == "invalid_api_key"


def test_search_reads_relative_dates_against_as_of(mcp: Mcp) -> None:
    key = make_key(make_tenant("alice"))
    mcp.calls(
        key,
        [
            (
                "memory_remember",
                {
                    "session": "last-week",
                    "events": [
                        {
                            "role": "user",
                            "content": "We went hiking in the hills.",
                            "created_at": "2023-05-16T10:00:00Z",
                        }
                    ],
                },
            ),
            (
                "memory_remember",
                {
                    "session": "this-week",
                    "events": [
                        {
                            "role": "user",
                            "content": "We went hiking in the hills.",
                            "created_at": "2023-05-23T10:00:00Z",
                        }
                    ],
                },
            ),
        ],
    )
    asked, unasked, bad = mcp.calls(
        key,
        [
            (
                "memory_search",
                {"query": "hiking last week", "top_k": 1, "as_of": "2023-05-24T12:00:00Z"},
            ),
            ("memory_search", {"query": "hiking last week", "top_k": 1}),
            ("memory_search", {"query": "hiking last week", "as_of": "last week"}),
        ],
    )
    assert [r["session"] for r in asked.data["results"]] == ["last-week"]
    assert [r["session"] for r in unasked.data["results"]] == ["this-week"]
    assert bad.is_error and bad.code == "validation_error" and "as_of" in bad.text
