from tests.base import error_code


def test_health_needs_no_key(anon) -> None:
    response = anon.get("/api/v1/health/")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "details": {"restarts": 0, "restarted": {}, "search": "hash embedder"},
    }


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


def test_the_schema_generates_without_warnings_and_validates(db, tmp_path) -> None:
    from django.core.management import call_command

    target = tmp_path / "schema.yml"
    # --fail-on-warn turns every drf-spectacular warning (an undocumented view, an enum name
    # collision, a serializer it cannot guess) into a failure.
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(target))
    text = target.read_text()
    assert "openapi: 3" in text and "/api/v1/search/" in text
