"""API keys are cached per process for a few seconds; revocation still takes effect."""

from __future__ import annotations

import pytest
from django.utils import timezone

from accounts import authentication
from accounts.models import ApiKey
from tests.base import error_code, make_client, make_key


@pytest.fixture
def clock(monkeypatch):  # type: ignore[no-untyped-def]
    """The cache's monotonic clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(authentication.time, "monotonic", lambda: now[0])
    authentication.key_cache.clear()
    yield now
    authentication.key_cache.clear()


def _key_reads(captured) -> int:  # type: ignore[no-untyped-def]
    """The statements that read a key (authentication.read_key's, or the ORM's)."""
    return sum(
        q["sql"].startswith("SELECT")
        and ('FROM "accounts_apikey"' in q["sql"] or "FROM accounts_apikey k" in q["sql"])
        for q in captured
    )


def test_a_key_is_read_once_within_the_window(
    cast, clock, settings, django_assert_max_num_queries
) -> None:
    settings.MEMORYHUB_API_KEY_CACHE_SECONDS = 5
    client = make_client(make_key(cast.alice_tenant))
    assert client.get("/api/v1/sessions/").status_code == 200
    with django_assert_max_num_queries(10) as captured:
        assert client.get("/api/v1/sessions/").status_code == 200
    assert _key_reads(captured.captured_queries) == 0
    clock[0] += 5
    with django_assert_max_num_queries(10) as captured:
        assert client.get("/api/v1/sessions/").status_code == 200
    assert _key_reads(captured.captured_queries) == 1


def test_a_key_revoked_elsewhere_is_refused_within_the_window(cast, clock, settings) -> None:
    settings.MEMORYHUB_API_KEY_CACHE_SECONDS = 5
    raw = make_key(cast.alice_tenant)
    client = make_client(raw)
    assert client.get("/api/v1/sessions/").status_code == 200
    # Another process revokes it: no signal reaches this one.
    ApiKey.objects.filter(prefix=ApiKey.parse_prefix(raw)).update(revoked_at=timezone.now())
    clock[0] += 4.9
    assert client.get("/api/v1/sessions/").status_code == 200  # the window: at most 5 s
    clock[0] += 0.1
    response = client.get("/api/v1/sessions/")
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


def test_a_key_revoked_or_deleted_here_is_refused_at_once(cast, clock, settings) -> None:
    settings.MEMORYHUB_API_KEY_CACHE_SECONDS = 60
    revoked, deleted = make_key(cast.alice_tenant), make_key(cast.alice_tenant)
    for raw in (revoked, deleted):
        assert make_client(raw).get("/api/v1/sessions/").status_code == 200
    ApiKey.objects.get(prefix=ApiKey.parse_prefix(revoked)).revoke()
    ApiKey.objects.get(prefix=ApiKey.parse_prefix(deleted)).delete()
    assert error_code(make_client(revoked).get("/api/v1/sessions/")) == "invalid_api_key"
    assert error_code(make_client(deleted).get("/api/v1/sessions/")) == "invalid_api_key"


def test_the_cache_never_accepts_a_wrong_secret(cast, clock, settings) -> None:
    settings.MEMORYHUB_API_KEY_CACHE_SECONDS = 60
    raw = make_key(cast.alice_tenant)
    assert make_client(raw).get("/api/v1/sessions/").status_code == 200
    forged = make_client(f"mh_{ApiKey.parse_prefix(raw)}_forged-secret")
    assert error_code(forged.get("/api/v1/sessions/")) == "invalid_api_key"


def test_a_window_of_zero_reads_the_key_every_time(
    cast, clock, settings, django_assert_max_num_queries
) -> None:
    settings.MEMORYHUB_API_KEY_CACHE_SECONDS = 0
    client = make_client(make_key(cast.alice_tenant))
    assert client.get("/api/v1/sessions/").status_code == 200
    with django_assert_max_num_queries(10) as captured:
        assert client.get("/api/v1/sessions/").status_code == 200
    assert _key_reads(captured.captured_queries) == 1
