"""What an agent reads of the MCP tools is in its terms: no setting name, file or inner
part of the server in a tool's title, description or argument descriptions, every argument
described, and an argument named as other memory APIs name it answered with the right name."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework import serializers

from memoryhub.api.common import FIELD_ALIASES
from retrieval.mcp_server import catalog
from tests.memoryhub.test_openapi_descriptions import INTERNALS, texts


@pytest.fixture(scope="module")
def tools() -> list[Any]:
    return catalog.build()


def test_no_tool_text_names_a_setting_or_an_internal(tools: list[Any]) -> None:
    leaks = [
        (tool.name, where, INTERNALS.findall(text))
        for tool in tools
        for where, text in [
            ("title", tool.title),
            ("description", tool.description),
            *texts(tool.schema, "inputSchema"),
        ]
        if INTERNALS.search(text)
    ]
    assert leaks == []
    assert INTERNALS.search("Set MEMORYHUB_MCP_STREAMS to allow more.")  # the check bites


def test_every_tool_and_argument_is_described(tools: list[Any]) -> None:
    assert len(tools) >= 10
    bare = [
        (tool.name, name)
        for tool in tools
        for name, prop in tool.schema.get("properties", {}).items()
        if not str(prop.get("description", "")).strip() and name not in catalog.SELF_EVIDENT
    ]
    assert [t.name for t in tools if not t.description.strip() or not t.title.strip()] == []
    assert bare == []


def test_the_catalogue_is_lean(tools: list[Any]) -> None:
    """What every agent carries in its context before asking anything: at most ~6,000 characters
    as a client receives the listing (19,202 when it carried the REST reference's texts)."""
    from mcp import types

    from retrieval.mcp_server.server import _tool

    listed = types.ListToolsResult(tools=[_tool(spec) for spec in tools]).model_dump_json(
        by_alias=True, exclude_none=True
    )
    assert len(listed) <= 6000, len(listed)
    # The REST endpoints keep their whole reference: the tools only leave options out.
    search = next(t for t in tools if t.name == "memory_search")
    assert {"explain", "group_by"} <= set(search.rest_only)
    assert {"tags", "agent", "since", "until", "synthesize", "expand"} <= set(
        search.schema["properties"]
    )
    assert not set(search.rest_only) & set(search.schema["properties"])


def test_an_option_left_to_rest_is_named_as_such(tools: list[Any]) -> None:
    search = next(t for t in tools if t.name == "memory_search")
    with pytest.raises(serializers.ValidationError) as refused:
        search.check_known({"query": "x", "explain": True})
    detail = refused.value.detail["explain"][0]
    assert (
        detail.code == "unknown_field" and "REST API only" in str(detail) and "query" in str(detail)
    )


def test_an_argument_named_as_elsewhere_is_answered_with_the_right_name(tools: list[Any]) -> None:
    checked = 0
    for tool in tools:
        known = set(tool.schema.get("properties", {}))
        for alias, meant in FIELD_ALIASES.items():
            if alias in known or meant not in known:
                continue
            with pytest.raises(serializers.ValidationError) as refused:
                tool.check_known({alias: "x"})
            detail = refused.value.detail[alias][0]
            assert detail.code == "unknown_field" and f"Did you mean '{meant}'?" in str(detail), (
                tool.name,
                alias,
            )
            checked += 1
    assert checked >= 5  # e.g. messages → events on memory_remember, limit → top_k on memory_search
