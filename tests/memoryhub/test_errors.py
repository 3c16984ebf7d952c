"""One error envelope for every 4xx/5xx of the API: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.migrations.executor import MigrationExecutor

from memoryhub.models import Session
from tests.base import error_code


def envelope(response: Any) -> dict[str, Any]:
    error_code(response)  # checks the shape
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)
    return error


def test_unknown_api_path(alice) -> None:
    response = alice.get("/api/v1/nothing/here/")
    assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
    assert envelope(response)["code"] == "not_found"


def test_unknown_api_path_without_a_key_is_still_json(anon, db) -> None:
    response = anon.get("/api/v1/nothing/")
    assert response.status_code == 404
    assert envelope(response)["code"] == "not_found"


def test_non_api_404_is_not_forced_into_json(anon, db) -> None:
    response = anon.get("/no-such-page/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


def test_method_not_allowed(alice) -> None:
    response = alice.put("/api/v1/sessions/", {}, format="json")
    assert response.status_code == 405
    assert envelope(response)["code"] == "method_not_allowed"
    assert envelope(response)["message"] == "PUT is not allowed here: use GET or POST."


def test_a_wrong_method_says_which_one_to_use(alice) -> None:
    """GET /search/ was a bare 405: the answer names the method to use, as the Allow header does."""
    response = alice.get("/api/v1/search/")
    assert response.status_code == 405 and response["Allow"].startswith("POST")
    assert envelope(response)["message"] == "GET is not allowed here: use POST."
    assert envelope(response)["details"] == {"allowed": ["POST"]}


def test_unsupported_media_type(alice) -> None:
    response = alice.post(
        "/api/v1/sessions/", "id=x", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415
    assert envelope(response)["code"] == "unsupported_media_type"
    assert not Session.objects.exists()


@pytest.mark.parametrize("body", ['{"id": ', "{'id': 'x'}", "not json", '{"id": "x"} trailing'])
def test_malformed_json(alice, body: str) -> None:
    response = alice.post("/api/v1/sessions/", data=body, content_type="application/json")
    assert response.status_code == 400
    error = envelope(response)
    assert error["code"] == "malformed_json"
    assert not Session.objects.exists()


def test_validation_error_details_list_every_field(alice) -> None:
    response = alice.post("/api/v1/sessions/", {"id": "bad id", "metadata": 3}, format="json")
    assert response.status_code == 400
    error = envelope(response)
    assert error["code"] == "validation_error"
    fields = error["details"]["fields"]
    assert set(fields) == {"id", "metadata"}
    assert all({"code", "message"} <= set(p) for problems in fields.values() for p in problems)
    assert error["message"].startswith(("id:", "metadata:"))


def test_nested_errors_name_the_item(alice) -> None:
    response = alice.post(
        "/api/v1/sessions/s1/events/",
        {
            "events": [
                {"role": "user", "content": "fine"},
                {"role": "user", "content": "x", "importance": 7},
            ]
        },
        format="json",
    )
    assert response.status_code == 400
    assert "events[1].importance" in envelope(response)["details"]["fields"]


def test_domain_conflict_carries_details(alice) -> None:
    alice.post(
        "/api/v1/sessions/s1/events/",
        {"role": "user", "content": "a", "sequence": 3},
        format="json",
    )
    response = alice.post(
        "/api/v1/sessions/s1/events/",
        {"role": "user", "content": "b", "sequence": 2},
        format="json",
    )
    assert response.status_code == 409
    error = envelope(response)
    assert error["code"] == "sequence_conflict"
    assert error["details"] == {"index": 0, "sequence": 2, "last_sequence": 3}


def test_not_authenticated_and_not_found_share_the_envelope(anon, alice) -> None:
    assert envelope(anon.get("/api/v1/sessions/"))["code"] == "not_authenticated"
    assert envelope(alice.get("/api/v1/sessions/x/"))["code"] == "session_not_found"


def test_server_error_is_json_on_the_api(alice, monkeypatch) -> None:
    from memoryhub import sessions

    def explode(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(sessions, "sessions_filter", explode)
    alice.raise_request_exception = False
    response = alice.get("/api/v1/sessions/")
    assert response.status_code == 500
    error = envelope(response)
    assert error["code"] == "server_error"
    assert "boom" not in response.content.decode()  # internals are not leaked


def test_ready_reports_pending_migrations_as_503(anon, db, monkeypatch) -> None:
    real_plan = MigrationExecutor.migration_plan

    def plan_with_one_pending(
        self: MigrationExecutor, targets: Any, clean_start: bool = False
    ) -> Any:
        graph = self.loader.graph
        return real_plan(self, targets, clean_start) or [
            (graph.nodes[("memoryhub", "0001_squashed_0011")], False)
        ]

    monkeypatch.setattr(MigrationExecutor, "migration_plan", plan_with_one_pending)
    response = anon.get("/api/v1/ready/")
    assert response.status_code == 503
    assert response.json() == {
        "status": "not_ready",
        "checks": {"database": "ok", "migrations": "1 pending"},
    }


def test_ready_reports_an_unreachable_database_as_503(anon, db, monkeypatch) -> None:
    from django.db import OperationalError

    from memoryhub.api import health as views

    class Broken:
        def cursor(self) -> Any:
            raise OperationalError("connection refused")

    monkeypatch.setattr(views, "connection", Broken())
    response = anon.get("/api/v1/ready/")
    assert response.status_code == 503
    assert response.json()["status"] == "not_ready"
    assert response.json()["checks"]["database"].startswith("error")


def test_schema_documents_the_session_endpoints(anon, db) -> None:
    response = anon.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path, methods in {
        "/api/v1/sessions/": {"get", "post"},
        "/api/v1/sessions/{session_id}/": {"get", "patch", "delete"},
        "/api/v1/sessions/{session_id}/events/": {"get", "post"},
        "/api/v1/sessions/{session_id}/restore/": {"get"},
        "/api/v1/health/": {"get"},
        "/api/v1/ready/": {"get"},
    }.items():
        assert methods <= set(paths[path]), path
    params = {
        p["name"] for p in paths["/api/v1/sessions/{session_id}/events/"]["get"]["parameters"]
    }
    assert {"limit", "after"} <= params
    assert schema["components"]["securitySchemes"]["ApiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schema["components"]["securitySchemes"]["ApiKey"]["description"],
    }
    assert {"ApiKey": []} in paths["/api/v1/sessions/"]["get"]["security"]
    restore = paths["/api/v1/sessions/{session_id}/restore/"]["get"]["responses"]["200"]
    assert "content" in restore  # a documented body, not "No response body"


def test_docs_page_loads_its_assets_locally(anon, db) -> None:
    response = anon.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html.lower()
    assert "cdn.jsdelivr" not in html and "unpkg.com" not in html


def test_oversize_request_body_is_413_and_not_read(alice, settings) -> None:
    settings.MEMORYHUB_MAX_REQUEST_BYTES = 1000
    body = {"role": "user", "content": "x" * 2000}
    response = alice.post("/api/v1/sessions/s1/events/", body, format="json")
    assert response.status_code == 413
    error = envelope(response)
    assert error["code"] == "payload_too_large" and error["details"]["limit"] == 1000
    assert response["Connection"] == "close"  # the unread body must not be taken for a request
    assert not Session.objects.exists()
    small = alice.post(
        "/api/v1/sessions/s1/events/", {"role": "user", "content": "fits"}, format="json"
    )
    assert small.status_code == 201


def test_default_request_limit_leaves_room_for_a_full_bulk(settings) -> None:
    # One limit: the documented one is Django's own (DRF reads JSON bodies through request.body).
    assert (
        settings.MEMORYHUB_MAX_REQUEST_BYTES
        == settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        == 16 * 1024 * 1024
    )


def test_a_3_mb_bulk_without_content_length_check_is_a_413_from_django(alice, settings) -> None:
    """Past Django's DATA_UPLOAD_MAX_MEMORY_SIZE (a body whose length the middleware did not
    see)."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2_500_000
    body = {"events": [{"role": "user", "content": "x" * 3000} for _ in range(1000)]}
    response = alice.post("/api/v1/sessions/s1/events/", body, format="json")
    assert response.status_code == 413
    error = envelope(response)
    assert error["code"] == "payload_too_large" and error["details"]["limit"] == 2_500_000
    assert response["Connection"] == "close"
    assert not Session.objects.exists()


def test_a_3_mb_bulk_fits_the_real_limit(alice) -> None:
    body = {"events": [{"role": "user", "content": "x" * 3000} for _ in range(1000)]}
    response = alice.post("/api/v1/sessions/s1/events/", body, format="json")
    assert response.status_code == 201 and response.json()["created"] == 1000


def test_a_path_without_its_trailing_slash_is_served_not_redirected(alice) -> None:
    created = alice.post("/api/v1/sessions", {"id": "noslash"}, format="json")
    assert created.status_code == 201, created.content
    assert Session.objects.filter(external_id="noslash").exists()
    appended = alice.post(
        "/api/v1/sessions/noslash/events", {"role": "user", "content": "x"}, format="json"
    )
    assert appended.status_code == 201
    listed = alice.get("/api/v1/sessions/noslash/events", {"limit": 1})
    assert listed.status_code == 200 and listed.json()["results"][0]["content"] == "x"
    assert alice.get("/api/v1/nothing").status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/sessions/%00/",
        "/api/v1/sessions/a%00b/events/",
        "/api/v1/sessions/?agent=%00",
        "/api/v1/sessions/?x%00=1",
        "/api/v1/sessions/s1/events/?after=%00",
    ],
)
def test_null_characters_in_path_or_query_are_a_400(alice, path: str) -> None:
    alice.raise_request_exception = False
    response = alice.get(path)
    assert response.status_code == 400, response.content
    assert envelope(response)["code"] in {"null_characters_not_allowed", "invalid_parameter"}


@pytest.mark.parametrize(
    "path",
    [
        f"/api/v1/sessions/?offset={10**20}",
        f"/api/v1/sessions/s1/events/?after={10**20}",
        f"/api/v1/sessions/s1/events/?before={10**20}&limit=3",
    ],
)
def test_huge_numbers_in_the_query_are_not_a_server_error(alice, path: str) -> None:
    alice.raise_request_exception = False
    alice.post("/api/v1/sessions/s1/events/", {"role": "user", "content": "x"}, format="json")
    response = alice.get(path)
    assert response.status_code in (200, 400), response.content
    if response.status_code == 400:
        assert envelope(response)["code"] == "invalid_parameter"


def test_imports_have_their_own_larger_limit(alice, settings) -> None:
    settings.MEMORYHUB_MAX_REQUEST_BYTES = 1000
    settings.MEMORYHUB_IMPORT_MAX_BYTES = 5000
    body = {"format": "memoryhub-export", "schema_version": 1, "padding": "x" * 2000}
    # Past the general limit, within the import limit: the import view reads and judges it.
    response = alice.post("/api/v1/import/", body, format="json")
    assert response.status_code == 400 and envelope(response)["code"] == "invalid_import"
    body["padding"] = "x" * 6000
    response = alice.post("/api/v1/import/", body, format="json")
    assert response.status_code == 413 and envelope(response)["details"]["limit"] == 5000
