"""The database going away: 503 database_unavailable with Retry-After, and back without a restart.

The outage is real: the connection is pointed at a socket folder where no server listens, the way
a stopped PostgreSQL looks to Django, and pointed back afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from memoryhub.api.errors import RETRY_AFTER_SECONDS
from memoryhub.models import Event
from tests.base import error_code, make_client, make_key, make_tenant, post_events

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def outage(tmp_path: Any) -> Iterator[Any]:
    """Call it to take the database away; it comes back when the test ends (or on a second call)."""
    real_host = connection.settings_dict["HOST"]

    def toggle(down: bool = True) -> None:
        connection.close()
        connection.settings_dict["HOST"] = str(tmp_path) if down else real_host

    yield toggle
    toggle(False)


def test_an_append_while_the_database_is_down_is_503_then_works_again(outage, settings) -> None:  # type: ignore[no-untyped-def]
    client = make_client(make_key(make_tenant("alice")))
    client.raise_request_exception = False
    assert post_events(client, "s1", {"role": "user", "content": "before"}).status_code == 201
    outage()
    response = post_events(
        client, "s1", {"role": "user", "content": "during", "idempotency_key": "k"}
    )
    assert response.status_code == 503
    assert error_code(response) == "database_unavailable"
    assert response["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert response.json()["error"]["details"]["retry_after"] == RETRY_AFTER_SECONDS
    # Liveness does not need the database; readiness says it is missing.
    assert client.get("/api/v1/health/").status_code == 200
    assert client.get("/api/v1/ready/").status_code == 503
    outage(False)
    response = post_events(
        client, "s1", {"role": "user", "content": "during", "idempotency_key": "k"}
    )
    assert response.status_code == 201, response.content
    assert list(Event.objects.order_by("sequence").values_list("content", flat=True)) == [
        "before",
        "during",
    ]


@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/api/v1/sessions/"),
        ("post", "/api/v1/search/"),
        ("get", "/api/v1/stats/"),
        ("post", "/api/v1/import/"),
    ],
)
def test_every_api_path_answers_503_in_the_envelope(outage, method: str, path: str) -> None:
    client = make_client(make_key(make_tenant("alice")))
    client.raise_request_exception = False
    outage()
    response = getattr(client, method)(
        path, {"query": "x"} if method == "post" else None, format="json"
    )
    assert response.status_code == 503, response.content
    assert error_code(response) == "database_unavailable" and response["Retry-After"]


def test_the_admin_answers_a_plain_503(outage, client) -> None:  # type: ignore[no-untyped-def]
    client.raise_request_exception = False
    outage()
    response = client.post("/admin/login/", {"username": "root", "password": "x"})
    assert response.status_code == 503 and response["Retry-After"]
    assert response["Content-Type"].startswith("text/plain")
