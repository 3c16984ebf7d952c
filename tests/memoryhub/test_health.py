from tests.base import error_code


def test_health_needs_no_key(anon) -> None:
    response = anon.get("/api/v1/health/")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_ready_reports_database_and_migrations(anon, db) -> None:
    response = anon.get("/api/v1/ready/")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "migrations": "ok"}


def test_unknown_api_path_is_json_404(alice) -> None:
    response = alice.get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert error_code(response) == "not_found"


def test_schema_and_docs_are_served(anon, db) -> None:
    schema = anon.get("/api/v1/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/sessions/" in schema.content
    docs = anon.get("/api/v1/docs/")
    assert docs.status_code == 200
    assert b"swagger" in docs.content.lower()
