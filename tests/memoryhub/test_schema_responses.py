"""The schema's error responses and strict bodies (memoryhub.api.docs): what the
postprocessing hook adds, checked against the server where a case is cheap to make."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from tests.base import make_client, make_key, make_tenant

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if method in METHODS
    ]


def test_every_keyed_operation_documents_the_key_errors(schema: dict[str, Any]) -> None:
    for path, method, op in operations(schema):
        statuses = set(op["responses"])
        assert {"400", "413"} <= statuses, (method, path)
        if op.get("security") and any(op["security"]):
            assert {"401", "403", "503"} <= statuses, (method, path)
        else:
            assert "401" not in statuses, (method, path)
        if "{" in path:
            assert "404" in statuses, (method, path)
        for status in statuses - {"200", "201", "202"}:
            if path != "/api/v1/ready/":
                assert op["responses"][status]["content"]["application/json"]["schema"] == {
                    "$ref": "#/components/schemas/Error"
                }, (method, path, status)


def test_lists_filters_do_not_promise_a_404(schema: dict[str, Any]) -> None:
    """A named workspace or channel only filters a list: it never answers 404 (measured)."""
    assert "404" not in schema["paths"]["/api/v1/sessions/"]["get"]["responses"]
    assert "404" not in schema["paths"]["/api/v1/channels/"]["post"]["responses"]
    assert "404" in schema["paths"]["/api/v1/browse/"]["get"]["responses"]


@pytest.mark.django_db
def test_strict_bodies_forbid_unknown_fields_as_the_server_does(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    assert components["NoteInputRequest"]["additionalProperties"] is False
    assert components["EventInputRequest"]["additionalProperties"] is False
    client = make_client(make_key(make_tenant("strict")))
    response = client.post("/api/v1/notes/", {"content": "x", "surprise": 1}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "unknown_field"


@pytest.mark.django_db
def test_a_missing_key_is_the_documented_401(schema: dict[str, Any]) -> None:
    response = APIClient().get("/api/v1/sessions/")
    assert response.status_code == 401
    assert set(response.json()) == {"error"}
    assert "401" in schema["paths"]["/api/v1/sessions/"]["get"]["responses"]
