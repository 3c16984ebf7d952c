"""Authentication and scopes: `Authorization: Bearer <key>` on every endpoint
(docs/memory-model.md#sharing)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey
from memoryhub.models import Event, Session
from memoryhub.plumbing import counters
from tests.base import error_code, make_client, make_key, post_events

# (method, path, body) for every session/event endpoint; "s1" exists for alice.
ENDPOINTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("get", "/api/v1/sessions/", None),
    ("post", "/api/v1/sessions/", {"id": "s2"}),
    ("get", "/api/v1/sessions/s1/", None),
    ("patch", "/api/v1/sessions/s1/", {"title": "t"}),
    ("delete", "/api/v1/sessions/s1/", None),
    ("get", "/api/v1/sessions/s1/events/", None),
    ("post", "/api/v1/sessions/s1/events/", {"role": "user", "content": "x"}),
    ("get", "/api/v1/sessions/s1/restore/", None),
]
READS = [e for e in ENDPOINTS if e[0] == "get"]
WRITES = [e for e in ENDPOINTS if e[0] != "get"]


def call(client: APIClient, method: str, path: str, body: dict[str, Any] | None) -> Any:
    return (
        getattr(client, method)(path, body, format="json")
        if body is not None
        else getattr(client, method)(path)
    )


@pytest.fixture
def s1(alice) -> None:
    assert post_events(alice, "s1", {"role": "user", "content": "existing"}).status_code == 201


def assert_untouched() -> None:
    session = Session.objects.get(external_id="s1")
    assert session.title == "" and session.events.count() == 1
    assert not Session.objects.filter(external_id="s2").exists()


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_every_endpoint_needs_a_key(anon, s1, method: str, path: str, body: Any) -> None:
    response = call(anon, method, path, body)
    assert response.status_code == 401
    assert error_code(response) == "not_authenticated"
    assert response["WWW-Authenticate"] == "Bearer"
    assert_untouched()


@pytest.mark.parametrize(
    "header",
    [
        "Bearer mh_00000000_notakey",  # well formed, unknown prefix
        "Bearer nonsense",
        "Bearer",
        "Bearer a b",
        "Token abc",
        "Basic dXNlcjpwYXNz",
    ],
)
def test_bad_keys_are_refused(s1, header: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    for method, path, body in ENDPOINTS:
        response = call(client, method, path, body)
        assert response.status_code == 401, (method, path, response.content)
        assert error_code(response) == "invalid_api_key"
    assert_untouched()


def test_right_prefix_wrong_secret_is_refused(s1, cast) -> None:
    prefix = ApiKey.parse_prefix(cast.alice_key)
    forged = make_client(f"mh_{prefix}_forged-secret")
    response = forged.get("/api/v1/sessions/")
    assert response.status_code == 401
    assert error_code(response) == "invalid_api_key"


def test_revoked_key_is_refused(s1, cast) -> None:
    raw = make_key(cast.alice_tenant)
    client = make_client(raw)
    assert client.get("/api/v1/sessions/").status_code == 200
    ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw)).revoke()
    for method, path, body in ENDPOINTS:
        response = call(client, method, path, body)
        assert response.status_code == 401
        assert error_code(response) == "invalid_api_key"
        assert "revoked" in response.json()["error"]["message"]
    assert_untouched()


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_read_scope_cannot_write(s1, cast, method: str, path: str, body: Any) -> None:
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    response = call(reader, method, path, body)
    assert response.status_code == 403
    assert error_code(response) == "insufficient_scope"
    assert_untouched()


@pytest.mark.parametrize(("method", "path", "body"), READS)
def test_read_scope_can_read(s1, cast, method: str, path: str, body: Any) -> None:
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    assert call(reader, method, path, body).status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), READS)
def test_write_scope_alone_cannot_read(s1, cast, method: str, path: str, body: Any) -> None:
    writer = make_client(make_key(cast.alice_tenant, scopes=("write",)))
    response = call(writer, method, path, body)
    assert response.status_code == 403
    assert error_code(response) == "insufficient_scope"


def test_write_scope_can_write(s1, cast) -> None:
    writer = make_client(make_key(cast.alice_tenant, scopes=("write",)))
    assert post_events(writer, "s1", {"role": "user", "content": "w"}).status_code == 201
    assert writer.patch("/api/v1/sessions/s1/", {"title": "w"}, format="json").status_code == 200


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS)
def test_admin_scope_can_do_everything(s1, cast, method: str, path: str, body: Any) -> None:
    admin = make_client(make_key(cast.alice_tenant, scopes=("admin",)))
    assert call(admin, method, path, body).status_code in (200, 201)


def test_last_used_time_is_recorded_coarsely(s1, cast, settings) -> None:
    settings.MEMORYHUB_API_KEY_CACHE_SECONDS = 0  # the test moves last_used_at in the database
    raw = make_key(cast.alice_tenant)
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw))
    assert key.last_used_at is None
    client = make_client(raw)
    client.get("/api/v1/sessions/")
    key.refresh_from_db()
    first = key.last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=30)
    client.get("/api/v1/sessions/")
    key.refresh_from_db()
    assert key.last_used_at == first  # not written on every request
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=first - timedelta(minutes=5))
    client.get("/api/v1/sessions/")
    key.refresh_from_db()
    assert key.last_used_at > first


def test_a_keys_last_use_is_written_after_the_request_not_in_it(
    s1, cast, settings, monkeypatch
) -> None:
    from memoryhub.api.middleware import key_uses

    # as deployed: written by the process later
    monkeypatch.setattr(counters, "FLUSH_SECONDS", 3600)
    raw = make_key(cast.alice_tenant)
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw))
    try:
        assert make_client(raw).get("/api/v1/sessions/").status_code == 200
        key.refresh_from_db()
        assert key.last_used_at is None  # the request wrote nothing
        assert key.pk in key_uses.pending
    finally:
        key_uses.flush()
    key.refresh_from_db()
    assert key.last_used_at is not None and timezone.now() - key.last_used_at < timedelta(
        seconds=30
    )


def test_a_later_last_use_is_never_moved_back(cast) -> None:
    from memoryhub.api.middleware import _write_key_uses

    raw = make_key(cast.alice_tenant)
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(raw))
    later = timezone.now() + timedelta(hours=1)
    ApiKey.objects.filter(pk=key.pk).update(last_used_at=later)
    _write_key_uses({key.pk: [timezone.now().timestamp()]})  # another process's older use
    key.refresh_from_db()
    assert key.last_used_at == later
    other = ApiKey.objects.get(prefix=ApiKey.parse_prefix(make_key(cast.bob_tenant)))
    used = timezone.now() - timedelta(minutes=1)
    _write_key_uses({key.pk: [used.timestamp()], other.pk: [used.timestamp()]})
    other.refresh_from_db()
    assert other.last_used_at == used  # both written by the one statement, each by its own rule
    key.refresh_from_db()
    assert key.last_used_at == later


def test_a_batch_keeps_the_latest_time_of_a_key(settings, monkeypatch) -> None:
    from memoryhub.plumbing.counters import BatchedCounter

    monkeypatch.setattr(counters, "FLUSH_SECONDS", 3600)
    written: list[dict[Any, list[float]]] = []
    latest = BatchedCounter("test-latest", written.append, combine=max)
    summed = BatchedCounter("test-sum", written.append)
    for value in (5.0, 9.0, 7.0):
        latest.add("k", value)
        summed.add("k", value)
    latest.flush()
    summed.flush()
    assert written == [{"k": [9.0]}, {"k": [21.0]}]


def test_a_key_is_read_as_the_orm_reads_it(cast) -> None:
    from accounts.authentication import read_key
    from accounts.models import Workspace

    workspace = Workspace.objects.create(tenant=cast.alice_tenant, name="limited")
    raws = [
        make_key(cast.alice_tenant),
        make_key(cast.bob_tenant, scopes=("read",)),
        ApiKey.create_key(
            tenant=cast.alice_tenant, workspace=workspace, user_id="u-7", scopes=("read", "write")
        ).raw,
    ]
    revoked = ApiKey.objects.get(prefix=ApiKey.parse_prefix(raws[1]))
    revoked.revoked_at = timezone.now()
    revoked.save()
    for raw in raws:
        prefix = ApiKey.parse_prefix(raw)
        expected = ApiKey.objects.select_related("tenant", "workspace").get(prefix=prefix)
        key = read_key(prefix)
        assert key is not None and not key._state.adding
        for a, b in ((key, expected), (key.tenant, expected.tenant)):
            assert [getattr(a, f.attname) for f in type(a)._meta.concrete_fields] == [
                getattr(b, f.attname) for f in type(b)._meta.concrete_fields
            ]
        if expected.workspace is None:
            assert key.workspace is None and key.workspace_id is None
        else:
            assert key.workspace is not None
            assert [getattr(key.workspace, f.attname) for f in Workspace._meta.concrete_fields] == [
                getattr(expected.workspace, f.attname) for f in Workspace._meta.concrete_fields
            ]
        assert key.matches(raw) and key.is_active == (raw != raws[1])
    assert read_key("nosuchprefix") is None


def test_a_key_only_ever_acts_for_its_own_tenant(alice, bob, cast) -> None:
    post_events(alice, "a-only", {"role": "user", "content": "a"})
    post_events(bob, "b-only", {"role": "user", "content": "b"})
    assert [s["id"] for s in alice.get("/api/v1/sessions/").json()["results"]] == ["a-only"]
    assert [s["id"] for s in bob.get("/api/v1/sessions/").json()["results"]] == ["b-only"]
    assert Event.objects.get(content="a").tenant_id == cast.alice_tenant.pk
    assert Event.objects.get(content="b").tenant_id == cast.bob_tenant.pk


def test_health_ready_schema_and_docs_need_no_key(anon, db) -> None:
    for path in ("/api/v1/health/", "/api/v1/ready/", "/api/v1/schema/", "/api/v1/docs/"):
        assert anon.get(path).status_code == 200, path
