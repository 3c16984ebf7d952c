"""What an API key may see: the one definition of tenant (and workspace) visibility."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models

if TYPE_CHECKING:
    from accounts.models import ApiKey


class KeyScopedQuerySet(models.QuerySet[Any]):
    """Rows of the key's tenant, and of its workspace for a workspace-limited key.

    A model whose workspace is reached through a relation names the path in `workspace_field`.
    """

    workspace_field = "workspace_id"

    def visible_to(self, key: ApiKey) -> KeyScopedQuerySet:
        qs = self.filter(tenant_id=key.tenant_id)
        if key.workspace_id is not None:
            qs = qs.filter(**{self.workspace_field: key.workspace_id})
        return qs


class SessionScopedQuerySet(KeyScopedQuerySet):
    """Rows that belong to a session and take its workspace."""

    workspace_field = "session__workspace_id"
