"""Schedules and runs, export/import, forget-user, delete a workspace, health, the key itself
(requests only)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from memoryhub_client._core import Call, as_is, body, page_of, path, query
from memoryhub_client.types import (
    Cadence,
    Channel,
    Consolidation,
    Deleted,
    EndUser,
    Health,
    Imported,
    KeyInfo,
    Page,
    Ready,
    Run,
    Schedule,
    UserForgotten,
    Webhook,
    WebhookCreated,
    WebhookList,
    WorkspaceDeleted,
)

NotificationPolicy = Literal["always", "on_failure", "on_success", "never"]

# --- health --------------------------------------------------------------------------------------


def health() -> Call[Health]:
    """Liveness (no key needed)."""
    return Call("GET", "health/", as_is, idempotent=True)


def ready() -> Call[Ready]:
    """Readiness: database reachable and migrations applied. A 503 is an answer here
    (`status: not_ready`), not an error, and is not retried."""
    return Call("GET", "ready/", as_is, idempotent=True, retry=False, accept=frozenset({503}))


def openapi() -> Call[dict[str, Any]]:
    """The service's OpenAPI 3 schema."""
    return Call("GET", "schema/", as_is, params=query(format="json"), idempotent=True)


# --- schedules -----------------------------------------------------------------------------------


def create_schedule(
    name: str,
    action: str,
    cadence: Cadence | Mapping[str, Any],
    *,
    goal: str | None = None,
    params: Mapping[str, Any] | None = None,
    user_id: str | None = None,
    notification_policy: NotificationPolicy | None = None,
    channel: str | None = None,
    workspace: str | None = None,
) -> Call[Schedule]:
    """Create a schedule (POST /schedules/). `cadence` is {"type": "cron"|"once"|"interval",
    "value": …, "timezone"?}: e.g. {"type": "interval", "value": "15m"}."""
    return Call(
        "POST",
        "schedules/",
        as_is,
        json=body(
            name=name,
            action=action,
            cadence=dict(cadence),
            goal=goal,
            params=params,
            user_id=user_id,
            notification_policy=notification_policy,
            channel=channel,
            workspace=workspace,
        ),
    )


def list_schedules(
    *,
    q: str | None = None,
    status: Literal["active", "paused", "completed", "failed"] | None = None,
    action: str | None = None,
    cadence_type: Literal["cron", "once", "interval"] | None = None,
    user_id: str | None = None,
    channel: str | None = None,
    workspace: str | None = None,
    name: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[Schedule]]:
    return Call(
        "GET",
        "schedules/",
        page_of,
        params=query(
            q=q,
            status=status,
            action=action,
            cadence_type=cadence_type,
            user_id=user_id,
            channel=channel,
            workspace=workspace,
            name=name,
            limit=limit,
            offset=offset,
        ),
        idempotent=True,
    )


def get_schedule(schedule_id: str) -> Call[Schedule]:
    return Call("GET", path("schedules", schedule_id), as_is, idempotent=True)


def update_schedule(
    schedule_id: str,
    *,
    name: str | None = None,
    goal: str | None = None,
    action: str | None = None,
    params: Mapping[str, Any] | None = None,
    cadence: Cadence | Mapping[str, Any] | None = None,
    user_id: str | None = None,
    notification_policy: NotificationPolicy | None = None,
    channel: str | None = None,
) -> Call[Schedule]:
    return Call(
        "PATCH",
        path("schedules", schedule_id),
        as_is,
        json=body(
            name=name,
            goal=goal,
            action=action,
            params=params,
            cadence=dict(cadence) if cadence is not None else None,
            user_id=user_id,
            notification_policy=notification_policy,
            channel=channel,
        ),
        idempotent=True,
    )


def delete_schedule(schedule_id: str) -> Call[Deleted]:
    return Call("DELETE", path("schedules", schedule_id), as_is, idempotent=True)


def pause_schedule(schedule_id: str) -> Call[Schedule]:
    return Call("POST", path("schedules", schedule_id, "pause"), as_is, idempotent=True)


def resume_schedule(schedule_id: str) -> Call[Schedule]:
    return Call("POST", path("schedules", schedule_id, "resume"), as_is, idempotent=True)


def run_schedule(schedule_id: str) -> Call[Run]:
    """Start a manual run now (202); the schedule's next run is unchanged."""
    return Call("POST", path("schedules", schedule_id, "run"), as_is)


def list_runs(
    schedule_id: str,
    *,
    status: Literal["queued", "running", "succeeded", "failed"] | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[Run]]:
    """A schedule's runs, newest first."""
    return Call(
        "GET",
        path("schedules", schedule_id, "runs"),
        page_of,
        params=query(status=status, limit=limit, offset=offset),
        idempotent=True,
    )


def get_run(run_id: str) -> Call[Run]:
    return Call("GET", path("runs", run_id), as_is, idempotent=True)


# --- lifecycle -----------------------------------------------------------------------------------


def export_memory(
    scope: Literal["tenant", "workspace", "session", "user"] | None = None,
    *,
    workspace: str | None = None,
    session: str | None = None,
    user_id: str | None = None,
) -> Call[dict[str, Any]]:
    """Export the tenant, one workspace, one session or everything of one end user (`user_id`)
    as JSON (POST /export/); the result is what `import_memory` takes."""
    return Call(
        "POST",
        "export/",
        as_is,
        json=body(scope=scope, workspace=workspace, session=session, user_id=user_id),
        idempotent=True,
    )


def import_memory(
    data: Mapping[str, Any] | bytes | str,
    *,
    on_conflict: Literal["fail", "skip", "merge"] | None = None,
) -> Call[Imported]:
    """Import an export into the key's tenant, all or nothing (POST /import/). Sessions and records
    the tenant holds already: "fail" (the service's default, 409 session_exists), "skip" (keep them)
    or "merge" (add the events and records they lack); skip and merge may be repeated safely."""
    if isinstance(data, str):
        raw = data.encode()
    elif isinstance(data, bytes):
        raw = data
    else:
        raw = json.dumps(data).encode()
    return Call("POST", "import/", as_is, content=raw, params=query(on_conflict=on_conflict))


def consolidate(*, dry_run: bool | None = None) -> Call[Consolidation]:
    """Consolidate the key's memories now (POST /consolidation/): merge duplicate facts, drop
    stale ones; `dry_run=True` only reports what it would do."""
    return Call("POST", "consolidation/", as_is, json=body(dry_run=dry_run))


# --- channels ------------------------------------------------------------------------------------


def list_channels(
    *,
    workspace: str | None = None,
    name: str | None = None,
    is_default: bool | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[Channel]]:
    return Call(
        "GET",
        "channels/",
        page_of,
        params=query(
            workspace=workspace,
            name=name,
            is_default=None if is_default is None else str(is_default).lower(),
            limit=limit,
            offset=offset,
        ),
        idempotent=True,
    )


def create_channel(
    name: str,
    *,
    description: str | None = None,
    workspace: str | None = None,
    is_default: bool | None = None,
) -> Call[Channel]:
    """Create a channel (POST /channels/); a taken name in the workspace is a ConflictError."""
    return Call(
        "POST",
        "channels/",
        as_is,
        json=body(name=name, description=description, workspace=workspace, is_default=is_default),
    )


def get_channel(channel_id: int) -> Call[Channel]:
    return Call("GET", path("channels", channel_id), as_is, idempotent=True)


def update_channel(
    channel_id: int,
    *,
    name: str | None = None,
    description: str | None = None,
    is_default: bool | None = None,
) -> Call[Channel]:
    """Change the given fields (PATCH /channels/{id}/)."""
    return Call(
        "PATCH",
        path("channels", channel_id),
        as_is,
        json=body(name=name, description=description, is_default=is_default),
        idempotent=True,
    )


# --- webhooks ------------------------------------------------------------------------------------


def list_webhooks() -> Call[WebhookList]:
    """The tenant's webhooks (at most one of each kind; secrets are not shown)."""
    return Call("GET", "webhooks/", as_is, idempotent=True)


def create_webhook(
    kind: Literal["agent", "notification"],
    url: str,
    *,
    secret: str | None = None,
    description: str | None = None,
) -> Call[WebhookCreated]:
    """Register the tenant's webhook of this kind (POST /webhooks/); the answer carries the signing
    secret, shown this once (generated when not given)."""
    return Call(
        "POST",
        "webhooks/",
        as_is,
        json=body(kind=kind, url=url, secret=secret, description=description),
    )


def get_webhook(webhook_id: str) -> Call[Webhook]:
    return Call("GET", path("webhooks", webhook_id), as_is, idempotent=True)


def delete_webhook(webhook_id: str) -> Call[Deleted]:
    return Call("DELETE", path("webhooks", webhook_id), as_is, idempotent=True)


def describe_key() -> Call[KeyInfo]:
    """The key this client sends: its tenant, the workspace and end user it is limited to (None:
    none) and its scopes (GET /key/). Never the secret."""
    return Call("GET", "key/", as_is, idempotent=True)


def list_users(*, limit: int | None = None, offset: int | None = None) -> Call[Page[EndUser]]:
    """End users who own sessions, facts or notes the key may see, by user id, with their counts
    and last activity (GET /users/). A key limited to one user finds only that user."""
    return Call("GET", "users/", page_of, params=query(limit=limit, offset=offset), idempotent=True)


def forget_user(user_id: str) -> Call[UserForgotten]:
    """Delete every row of this end user in the key's tenant (admin scope, tenant-wide key)."""
    return Call("DELETE", path("users", user_id), as_is, idempotent=True)


def delete_workspace(workspace: str, *, dry_run: bool = False) -> Call[WorkspaceDeleted]:
    """Delete the workspace (by name) and everything in it, in one transaction; the rows deleted by
    model. `dry_run=True` deletes nothing and answers what would go (admin scope)."""
    return Call(
        "DELETE",
        path("workspaces", workspace),
        as_is,
        params=query(dry_run=dry_run or None),
        idempotent=True,
    )
