"""Shared by the retrieval commands: --tenant NAME → the tenants to work on."""

from __future__ import annotations

from django.core.management.base import CommandError

from accounts.models import Tenant


def selected_tenants(name: str | None) -> list[Tenant]:
    """Every tenant by name order, or the one named; an unknown name is an error, not a no-op."""
    if not name:
        return list(Tenant.objects.order_by("name"))
    tenant = Tenant.objects.filter(name=name).first()
    if tenant is None:
        raise CommandError(f"No tenant named {name!r}.")
    return [tenant]
