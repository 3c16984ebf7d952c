"""End users through the API: every user id that owns a session, a fact or a note the key may see,
with how many of each and their last activity.

The rows come from the models' `visible_to` (the one definition of what a key sees): a user-limited
key finds only itself, a workspace-limited key the users of its workspace with that workspace's
counts, a tenant key every user of its tenant. (The operator console reads the tenant-wide
database view memoryhub.models.EndUser instead: its counts are not limited to a workspace.)
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, Max, QuerySet

from accounts.models import ApiKey
from memoryhub.models import Fact, Note, Session

_OWNED = (("sessions", Session), ("facts", Fact), ("notes", Note))


def end_user_ids(key: ApiKey) -> QuerySet[Any]:
    """The distinct user ids the key sees (each a {"user_id": …} row), ordered by id: page it."""
    parts = [
        model.objects.visible_to(key).exclude(user_id="").order_by().values("user_id")
        for _, model in _OWNED
    ]
    return parts[0].union(*parts[1:]).order_by("user_id")


def end_users(key: ApiKey, user_ids: list[str]) -> list[dict[str, Any]]:
    """These users' counts (what the key sees of them) and last activity, in the given order."""
    rows: dict[str, dict[str, Any]] = {
        u: {"user_id": u, "sessions": 0, "facts": 0, "notes": 0, "last_activity": None}
        for u in user_ids
    }
    for name, model in _OWNED:
        grouped = (
            model.objects.visible_to(key)
            .filter(user_id__in=user_ids)
            .order_by()
            .values("user_id")
            .annotate(n=Count("pk"), last=Max("updated_at"))
        )
        for group in grouped:
            row = rows[group["user_id"]]
            row[name] = group["n"]
            row["last_activity"] = _later(row["last_activity"], group["last"])
    return list(rows.values())


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None or (b is not None and b > a) else a
