"""What an agent reads of the MCP tools is in its terms (issue 42): no setting name, file or inner
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
    leaks = [(tool.name, where, INTERNALS.findall(text)) for tool in tools
             for where, text in [("title", tool.title), ("description", tool.description),
                                 *texts(tool.schema, "inputSchema")]
             if INTERNALS.search(text)]
    assert leaks == []
    assert INTERNALS.search("Set MEMORYHUB_MCP_STREAMS to allow more.")  # the check bites


def test_every_tool_and_argument_is_described(tools: list[Any]) -> None:
    assert len(tools) >= 10
    bare = [(tool.name, name) for tool in tools for name, prop in tool.schema.get("properties", {}).items()
            if not str(prop.get("description", "")).strip()]
    assert [t.name for t in tools if not t.description.strip() or not t.title.strip()] == []
    assert bare == []


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
            assert detail.code == "unknown_field" and f"Did you mean '{meant}'?" in str(detail), (tool.name, alias)
            checked += 1
    assert checked >= 5  # e.g. messages → events on memory_remember, limit → top_k on memory_search
