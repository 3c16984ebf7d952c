"""Tenants, workspaces, channels and API keys (docs/memory-model.md#sharing)."""

from __future__ import annotations

import hashlib

import pytest
from django.db import IntegrityError, transaction

from accounts.models import DEFAULT_CHANNEL, DEFAULT_WORKSPACE, ApiKey, Channel, Tenant, Workspace
from tests.base import make_tenant

pytestmark = pytest.mark.django_db


def test_new_tenant_gets_a_default_workspace_with_a_default_channel() -> None:
    tenant, created = Tenant.get_or_create_named("Acme Corp")
    assert created and tenant.slug == "acme-corp"
    workspace = Workspace.objects.get(tenant=tenant)
    assert workspace.name == DEFAULT_WORKSPACE
    channel = Channel.objects.get(workspace=workspace)
    assert channel.name == DEFAULT_CHANNEL and channel.is_default and channel.tenant_id == tenant.pk
    again, created_again = Tenant.get_or_create_named("Acme Corp")
    assert again.pk == tenant.pk and not created_again
    assert Workspace.objects.filter(tenant=tenant).count() == 1


def test_named_workspaces_and_channels_are_unique_within_their_parent() -> None:
    alice, bob = make_tenant("alice"), make_tenant("bob")
    research = Workspace.get_named(alice, "research")
    assert Workspace.get_named(alice, "research").pk == research.pk
    assert Workspace.get_named(bob, "research").pk != research.pk
    topic = Channel.get_named(research, "topic")
    assert Channel.get_named(research, "topic").pk == topic.pk
    assert Channel.get_named(research, None).name == DEFAULT_CHANNEL
    with pytest.raises(IntegrityError), transaction.atomic():
        Workspace.objects.create(tenant=alice, name="research")


def test_key_is_random_shown_once_and_stored_hashed() -> None:
    tenant = make_tenant("alice")
    new = ApiKey.create_key(tenant=tenant, scopes=["read"])
    other = ApiKey.create_key(tenant=tenant, scopes=["read"])
    assert new.raw != other.raw
    stored = ApiKey.objects.get(pk=new.api_key.pk)
    assert new.raw.startswith(f"mh_{stored.prefix}_") and len(stored.prefix) == 8
    assert stored.key_hash == hashlib.sha256(new.raw.encode()).hexdigest()
    assert new.raw not in stored.key_hash
    assert stored.matches(new.raw) and not stored.matches(other.raw)
    assert ApiKey.parse_prefix(new.raw) == stored.prefix
    assert ApiKey.parse_prefix("Bearer-junk") is None
    assert ApiKey.parse_prefix("mh_short_secret") is None


def test_scopes_are_validated_and_admin_implies_all() -> None:
    tenant = make_tenant("alice")
    with pytest.raises(ValueError):
        ApiKey.create_key(tenant=tenant, scopes=["read", "root"])
    with pytest.raises(ValueError):
        ApiKey.create_key(tenant=tenant, scopes=[])
    reader = ApiKey.create_key(tenant=tenant, scopes=["read"]).api_key
    assert (
        reader.has_scope("read") and not reader.has_scope("write") and not reader.has_scope("admin")
    )
    admin = ApiKey.create_key(tenant=tenant, scopes=["admin"]).api_key
    assert admin.has_scope("read") and admin.has_scope("write") and admin.has_scope("admin")
    ordered = ApiKey.create_key(tenant=tenant, scopes=["write", "read", "write"]).api_key
    assert ordered.scopes == ["read", "write"]
    assert ApiKey.objects.filter(tenant=tenant).count() == 3


def test_revoke_is_recorded_once() -> None:
    key = ApiKey.create_key(tenant=make_tenant("alice")).api_key
    assert key.is_active
    key.revoke()
    first = key.revoked_at
    assert first is not None and not key.is_active
    key.revoke()
    key.refresh_from_db()
    assert key.revoked_at == first
    assert not ApiKey.objects.active().filter(pk=key.pk).exists()


def test_workspace_limited_key() -> None:
    tenant = make_tenant("alice")
    workspace = Workspace.get_named(tenant, "limited")
    key = ApiKey.create_key(tenant=tenant, workspace=workspace).api_key
    assert key.workspace_id == workspace.pk


def test_names_that_slugify_alike_are_two_tenants() -> None:
    first, _ = Tenant.get_or_create_named("Acme Corp")
    second, created = Tenant.get_or_create_named("acme corp")
    assert created and second.pk != first.pk
    assert first.slug == "acme-corp" and second.slug.startswith("acme-corp-")
    odd, _ = Tenant.get_or_create_named("!!!")
    assert odd.slug
