"""mem0's entities (its `users()`, `delete_users()` and `reset()`): the users and agents the key's
memories belong to, listed and deleted.

- A user entity is a MemoryHub end user. Deleting one forgets the user: every row of hers in the
  tenant, by the same function and under the same rule as `DELETE /api/v1/users/{id}/` (an admin
  key limited to neither a workspace nor a user, since her rows may lie in any workspace).
- An agent entity is the tag `agent:<id>` that `add(agent_id=…)` gives a memory. Deleting one
  deletes the memories so tagged that the key sees (as `delete_all(agent_id=…)`).
- A run entity is a session. Deleting one deletes its memories and the session with its events.
- mem0's apps have no counterpart: deleting one is a 400.

Deleting an entity that holds nothing answers 200: `reset()` deletes the users before the agents,
and an agent whose memories were all a user's has none left by then.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from accounts.models import ApiKey
from memoryhub.end_users import end_user_ids, end_users
from memoryhub.errors import Invalid
from memoryhub.forget import forget_user
from memoryhub.models import Session
from memoryhub.ownership import require_scope, require_tenant_wide
from memoryhub.sessions import forget_session
from retrieval.mem0_compat import memories
from retrieval.mem0_compat.memories import AGENT_TAG, Entities

ENTITY_TYPES = ("user", "agent", "run")


def _agents(key: ApiKey) -> list[dict[str, Any]]:
    """The agents of the memories the key sees (by their lowercased id): memories and last
    change."""
    found: dict[str, dict[str, Any]] = {}
    everyone = Entities()
    for rows in (memories.facts_of(key, everyone), memories.notes_of(key, everyone)):
        for tags, updated_at in rows.filter(metadata__has_key="agent_id").values_list(
            "tags", "updated_at"
        ):
            for tag in tags:
                if tag.startswith(AGENT_TAG):
                    entry = found.setdefault(
                        tag[len(AGENT_TAG) :], {"memories": 0, "last": updated_at}
                    )
                    entry["memories"] += 1
                    entry["last"] = max(entry["last"], updated_at)
    return [
        _entity(name, "agent", entry["memories"], entry["last"])
        for name, entry in sorted(found.items())
    ]


def _entity(name: str, kind: str, total: int, at: datetime | None, **extra: Any) -> dict[str, Any]:
    return {
        "id": name,
        "name": name,
        "type": kind,
        "total_memories": total,
        **extra,
        "created_at": at,
        "updated_at": at,
        "owner": None,
        "organization": None,
        "metadata": {},
    }


def list_entities(key: ApiKey, *, offset: int, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """The end users the key sees, then the agents: (count, this page)."""
    ids = end_user_ids(key)
    user_count = ids.count()
    users = end_users(key, [row["user_id"] for row in ids[offset : offset + limit]])
    rows = [
        _entity(
            r["user_id"],
            "user",
            r["facts"] + r["notes"],
            r["last_activity"],
            sessions=r["sessions"],
        )
        for r in users
    ]
    agents = _agents(key)
    start = max(0, offset - user_count)
    rows += agents[start : start + limit - len(rows)]
    return user_count + len(agents), rows


@transaction.atomic
def delete_entity(key: ApiKey, kind: str, name: str) -> int:
    """Delete one entity (see the module's docstring); returns the rows deleted."""
    if kind == "user":
        require_scope(key, "admin", "Deleting a user")
        require_tenant_wide(key, "Deleting a user")
        return sum(forget_user(tenant_id=key.tenant_id, user_id=name).values())
    if kind == "agent":
        return memories.delete_all(
            key, memories.entities_from({"agent_id": name}, where="delete_users")
        )
    if kind == "run":
        deleted = memories.delete_all(
            key, memories.entities_from({"run_id": name}, where="delete_users")
        )
        if Session.objects.visible_to(key).filter(external_id=name).exists():
            deleted += sum(forget_session(key=key, session_id=name).values())
        return deleted
    raise Invalid(
        "unsupported_entity",
        f"MemoryHub deletes entities of type {', '.join(ENTITY_TYPES)}, not {kind!r}.",
        {"types": list(ENTITY_TYPES)},
    )
