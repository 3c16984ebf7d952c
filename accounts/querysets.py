"""What an API key may see: the one definition of tenant (and workspace) visibility."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Q

if TYPE_CHECKING:
    from accounts.models import ApiKey


def owned_by(field: str, user_id: str) -> Q:
    """The ownership rule: a user sees their own rows and rows that belong to no one (shared)."""
    return Q(**{field: user_id}) | Q(**{field: ""})


def conversation_owned_by(field: str, user_id: str) -> Q:
    """The sharing rule for conversation data (sessions' messages and summaries) in a read for
    one user: only theirs. A conversation nobody owns is the tenant's, read by tenant-wide reads,
    not shared knowledge (search's spelling of the same rule: retrieval.search.sql.owner_clause)."""
    return Q(**{field: user_id})


class KeyScopedQuerySet(models.QuerySet[Any]):
    """Rows of the key's tenant; of its workspace for a workspace-limited key; of its user (and
    shared ones) for a user-limited key.

    A model whose workspace or owner is reached through a relation names the path in
    `workspace_field` / `user_field`.
    """

    workspace_field = "workspace_id"
    user_field = "user_id"
    # Which rows a read for one user includes: `owned_by` (theirs and shared ones) for knowledge,
    # `conversation_owned_by` (theirs only) for conversations.
    owner_rule = staticmethod(owned_by)

    def visible_to(self, key: ApiKey) -> KeyScopedQuerySet:
        qs = self.filter(tenant_id=key.tenant_id)
        if key.workspace_id is not None:
            qs = qs.filter(**{self.workspace_field: key.workspace_id})
        if key.user_id:
            qs = qs.filter(self.owner_rule(self.user_field, key.user_id))
        return qs

    def owned_by(self, user_id: str) -> KeyScopedQuerySet:
        return self.filter(self.owner_rule(self.user_field, user_id))


class ConversationQuerySet(KeyScopedQuerySet):
    """Sessions: a conversation nobody owns is the tenant's, not shared with each user, so a
    user-limited key does not see it (as it does not see another user's)."""

    owner_rule = staticmethod(conversation_owned_by)


class SessionScopedQuerySet(ConversationQuerySet):
    """Rows that belong to a session (its messages, its summaries): they take its workspace and
    its user, and the conversations' sharing rule."""

    workspace_field = "session__workspace_id"
    user_field = "session__user_id"
