"""Shared test fixtures: a cast of tenants (alice, bob) with keys and API clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from tests.base import Cast, make_cast, post_events


def pytest_configure(config: pytest.Config) -> None:
    # Settings never start a database; the test run starts the embedded one (when no DATABASE_URL).
    from memoryhub.plumbing.embedded_pg import ensure_running

    ensure_running()


@pytest.fixture(autouse=True)
def _fast_and_inline(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.plumbing import counters

    # Deterministic embeddings and inline background work unless a test asks otherwise.
    settings.MEMORYHUB_EMBEDDER = "hash"
    settings.MEMORYHUB_TASKS_EAGER = True
    # Request counters are written at once, so that none is left over for the next test.
    monkeypatch.setattr(counters, "FLUSH_SECONDS", 0)
    # A model call that is retried waits milliseconds, not seconds (tests/memoryhub/test_llm.py).
    monkeypatch.setattr("memoryhub.plumbing.llm.BACKOFF_SECONDS", 0.01)


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    from django.core.cache import cache

    from accounts.authentication import key_cache
    from memoryhub import recent

    cache.clear()
    key_cache.clear()
    recent.clear_local()
    yield
    cache.clear()
    key_cache.clear()
    recent.clear_local()


@pytest.fixture
def staff_client(client, db):  # type: ignore[no-untyped-def]
    """The Django test client logged in as an operator (superuser "op")."""
    client.force_login(
        get_user_model().objects.create_superuser("op", "op@example.com", "pw-long-enough-123")
    )
    return client


@pytest.fixture
def cast(db) -> Cast:  # type: ignore[no-untyped-def]
    return make_cast()


@pytest.fixture
def alice(cast: Cast) -> APIClient:
    return cast.alice


@pytest.fixture
def bob(cast: Cast) -> APIClient:
    return cast.bob


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture
def index(django_capture_on_commit_callbacks) -> Callable[..., Any]:  # type: ignore[no-untyped-def]
    """Post events and run the indexing/embedding tasks their commit enqueues (eager mode)."""

    def post(client: Any, session: str, *events: dict[str, Any]) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            response = post_events(client, session, *events)
        assert response.status_code in (200, 201), response.content
        return response

    return post
