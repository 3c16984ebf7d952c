"""The API documentation teaches what the server does: every field and parameter is described, every
operation has an example, and each example, replayed against the server in the documentation's
story (tests/api_story.py), answers its documented status with a body of the documented shape that
the OpenAPI schema validates strictly (no undocumented field)."""

from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.api_examples_record import record, recording
from tests.api_story import build_story, schema_errors, shape_errors
from tests.base import make_client, make_key, make_tenant

METHODS = ("get", "post", "put", "patch", "delete")


def _schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


SCHEMA = None


def schema() -> dict[str, Any]:
    global SCHEMA
    if SCHEMA is None:
        SCHEMA = _schema()
    return SCHEMA


def _operations() -> list[tuple[str, str]]:
    from django.urls import get_resolver

    get_resolver()  # URLs loaded, so the generator sees every view
    return [
        (path, method)
        for path, ops in schema()["paths"].items()
        for method in ops
        if method in METHODS
    ]


def _examples(content: dict[str, Any] | None) -> dict[str, Any]:
    return (content or {}).get("application/json", {}).get("examples", {})


def _cases(path: str, method: str) -> list[tuple[str, int, Any, Any]]:
    """(name, status, request example or None, response example) for each response example."""
    operation = schema()["paths"][path][method]
    requests = _examples(operation.get("requestBody", {}).get("content"))
    cases = []
    for status, response in operation["responses"].items():
        for name, documented in _examples(response.get("content")).items():
            request = requests.get(name, {}).get("value")
            cases.append((name, int(status), request, documented["value"]))
    return cases


def test_every_field_parameter_and_operation_is_documented() -> None:
    undescribed = [
        f"{name}.{field}"
        for name, component in schema()["components"]["schemas"].items()
        for field, prop in (component.get("properties") or {}).items()
        if not prop.get("description")
    ]
    assert undescribed == []
    for path, method in _operations():
        operation = schema()["paths"][path][method]
        assert operation.get("summary"), f"{method} {path}"
        assert [
            p["name"] for p in operation.get("parameters", []) if not p.get("description")
        ] == [], (method, path)
        assert _cases(path, method), f"{method} {path} has no example"
        if "requestBody" in operation:
            assert _examples(operation["requestBody"]["content"]), (
                f"{method} {path} has no request example"
            )


def test_the_search_example_swagger_offers_is_valid(db: Any) -> None:
    """Swagger's "Try it out" starts from the first request example (it used to send since ==
    until)."""
    operation = schema()["paths"]["/api/v1/search/"]["post"]
    first = next(iter(_examples(operation["requestBody"]["content"]).values()))["value"]
    client = make_client(make_key(make_tenant("travel")))
    response = client.post("/api/v1/search/", first, format="json")
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(("path", "method"), _operations(), ids=lambda v: v)
def test_examples_replayed_against_the_server(
    path: str, method: str, db: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django.db import transaction

    components = schema()["components"]["schemas"]
    operation = schema()["paths"][path][method]
    tenant = make_tenant("travel")
    client = make_client(make_key(tenant))
    for name, status, request, documented in _cases(path, method):
        savepoint = transaction.savepoint()  # each example starts from the same story
        with django_capture_on_commit_callbacks(execute=True):
            params = build_story(client, tenant)
        call = getattr(client, method)
        url = path.format(**params)
        with django_capture_on_commit_callbacks(execute=True):
            response = call(url, request, format="json") if request is not None else call(url)
        transaction.savepoint_rollback(savepoint)
        assert response.status_code == status, (name, response.content)
        body = response.json()
        response_schema = operation["responses"][str(status)]["content"]["application/json"][
            "schema"
        ]
        assert schema_errors(body, response_schema, components, strict=True) == [], name
        if request is not None:
            request_schema = operation["requestBody"]["content"]["application/json"]["schema"]
            assert schema_errors(request, request_schema, components, strict=True) == [], name
        stale = schema_errors(documented, response_schema, components, strict=True) + shape_errors(
            documented, body, response_schema, components
        )
        # tests/api_examples_record.py: the server's answer becomes the example
        if stale and recording():
            record(name, status, body)
            continue
        assert stale == [], name
