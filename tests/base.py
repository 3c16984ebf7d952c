"""Plain make_* helpers and the named cast: alice and bob are two tenants that must never meet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rest_framework.test import APIClient

from accounts.models import ApiKey, Tenant, Workspace


def make_tenant(name: str, **fields: Any) -> Tenant:
    tenant, _ = Tenant.get_or_create_named(name)
    if fields:
        Tenant.objects.filter(pk=tenant.pk).update(**fields)
        tenant.refresh_from_db()
    return tenant


def make_key(tenant: Tenant, scopes: tuple[str, ...] = ("read", "write", "admin"),
             workspace: str | None = None, user: str = "") -> str:
    ws = Workspace.get_named(tenant, workspace) if workspace else None
    return ApiKey.create_key(tenant=tenant, scopes=scopes, workspace=ws, user_id=user).raw


def make_client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


def error_code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "details"} <= set(body["error"]), body
    return body["error"]["code"]


@dataclass
class Cast:
    alice_tenant: Tenant
    bob_tenant: Tenant
    alice_key: str
    bob_key: str
    alice: APIClient
    bob: APIClient


def make_cast() -> Cast:
    alice_tenant = make_tenant("alice")
    bob_tenant = make_tenant("bob")
    alice_key = make_key(alice_tenant)
    bob_key = make_key(bob_tenant)
    return Cast(alice_tenant, bob_tenant, alice_key, bob_key, make_client(alice_key), make_client(bob_key))


def post_events(client: APIClient, session: str, *events: dict[str, Any]) -> Any:
    if len(events) == 1:
        return client.post(f"/api/v1/sessions/{session}/events/", events[0], format="json")
    return client.post(f"/api/v1/sessions/{session}/events/", {"events": list(events)}, format="json")
