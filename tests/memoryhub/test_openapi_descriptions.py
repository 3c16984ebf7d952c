"""The OpenAPI document speaks to API users: every operation and schema says what it is
for, and none shows how the server is built (docstrings of implementation, setting names, files)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from memoryhub.api.docs import schema_description

METHODS = {"get", "post", "put", "patch", "delete"}
# Words of the implementation, not of the API: an operator's setting, a source file, the framework's
# or the database's inner parts, the cost of a code path.
INTERNALS = re.compile(
    r"prototype|unbound|\bms"
    r" of\b|\bCPU\b|queryset|\bSQL\b|\bcache[ds]?\b|per-class|monkey|\boverrid|subclass"
    r"|\b(?!manage\.py)\w+\.py\b|MEMORYHUB_|\bDRF\b|serializer|django|docstring|\bORM\b|postprocessing|\bhook\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def texts(node: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every description and summary in a part of the document, with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("description", "summary", "title") and isinstance(value, str):
                yield f"{where}.{key}", value
            else:
                yield from texts(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from texts(value, f"{where}[{index}]")


def test_every_operation_says_what_it_does(schema: dict[str, Any]) -> None:
    missing = [
        f"{method.upper()} {path}"
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if method in METHODS and not op.get("description", "").strip()
    ]
    assert missing == []


def test_every_schema_says_what_it_is(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    assert len(components) > 50  # the document was built whole
    assert [
        name
        for name, component in components.items()
        if not component.get("description", "").strip()
    ] == []


def test_no_description_shows_the_implementation(schema: dict[str, Any]) -> None:
    leaks = [
        (where, INTERNALS.findall(text), text[:120])
        for where, text in texts(schema, "")
        if INTERNALS.search(text)
    ]
    assert leaks == []


def test_the_check_catches_a_leak_and_a_gap() -> None:
    """The word list and the lookup the tests above rely on, on a made-up document."""
    leaky = {
        "components": {
            "schemas": {
                "X": {
                    "description": (
                        "Its fields are copied from unbound prototypes "
                        "(~1 ms of CPU); see memoryhub/api/common.py."
                    )
                }
            }
        }
    }
    assert [where for where, text in texts(leaky, "") if INTERNALS.search(text)] == [
        ".components.schemas.X.description"
    ]
    assert not INTERNALS.search(
        "The memories to put in front of the next prompt, within your token budget."
    )
    assert (
        schema_description("PatchedFactPatchInputRequest")
        == schema_description("FactPatchInput")
        is not None
    )
    assert schema_description("NotePage") is not None and schema_description("Unheard") is None


def test_the_reference_groups_operations_by_what_a_user_does(schema: dict[str, Any]) -> None:
    """Sessions and events first, then search and context, memory, schedules, operations; the two
    calls every user needs first (store events, get the context) lead the reference."""
    assert [t["name"] for t in schema["tags"]] == [
        "Sessions and events",
        "Search and context",
        "Memory",
        "Schedules",
        "Operations",
    ]
    order = [
        op["tags"][0]
        for ops in schema["paths"].values()
        for op in ops.values()
        if isinstance(op, dict)
    ]
    groups = [t["name"] for t in schema["tags"]]
    # every operation in a group, the groups in order
    assert order == sorted(order, key=groups.index)
    paths = list(schema["paths"])
    assert paths.index("/api/v1/sessions/{session_id}/events/") <= 2
    assert paths[sum(1 for p in paths if p.startswith("/api/v1/sessions/"))] == "/api/v1/context/"


def test_no_description_uses_planning_words(schema: dict[str, Any]) -> None:
    """No "seed", "issue", "stop" or spec section numbers in what API users and agents read: the
    OpenAPI document and the MCP catalogue (the console, README and client are checked in
    test_user_words.py with the same pattern)."""
    from retrieval.mcp_server import catalog
    from tests.memoryhub.test_user_words import PLANNING

    leaks = [(where, text[:120]) for where, text in texts(schema, "") if PLANNING.search(text)]
    for tool in catalog.build():
        leaks += [
            (tool.name, text[:120])
            for where, text in [
                ("description", tool.description),
                *texts(tool.schema, "inputSchema"),
            ]
            if PLANNING.search(text)
        ]
    assert leaks == []
    # the check bites
    assert PLANNING.search("Consolidate (S8).") and PLANNING.search("by type (seed 002)")
