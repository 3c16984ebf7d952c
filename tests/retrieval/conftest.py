from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.base import post_events


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "minilm: loads the real all-MiniLM-L6-v2 model (slower)")


@pytest.fixture
def index(django_capture_on_commit_callbacks) -> Callable[..., Any]:  # type: ignore[no-untyped-def]
    """Post events and run the indexing/embedding tasks their commit enqueues (eager mode)."""

    def post(client: Any, session: str, *events: dict[str, Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_events(client, session, *events)
        assert response.status_code in (200, 201), response.content
        return response

    return post


def search(client: Any, **body: Any) -> Any:
    return client.post("/api/v1/search/", body, format="json")
