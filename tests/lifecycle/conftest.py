from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.base import post_events


@pytest.fixture
def index(django_capture_on_commit_callbacks) -> Callable[..., Any]:  # type: ignore[no-untyped-def]
    """Post events and run the indexing/embedding tasks their commit enqueues (eager mode)."""

    def post(client: Any, session: str, *events: dict[str, Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_events(client, session, *events)
        assert response.status_code in (200, 201), response.content
        return response

    return post


def new_session(client: Any, session: str, **fields: Any) -> None:
    response = client.post("/api/v1/sessions/", {"id": session, **fields}, format="json")
    assert response.status_code == 201, response.content


def search_texts(client: Any, query: str, **body: Any) -> list[str]:
    response = client.post("/api/v1/search/", {"query": query, "scope": "account", **body}, format="json")
    assert response.status_code == 200, response.content
    return [r["text"] for r in response.json()["results"]]
