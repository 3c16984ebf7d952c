"""Result shapes of channels, webhooks, consolidation, schedules and runs, users, export and
import, and health (re-exported by types.py)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from memoryhub_client._types_sessions import Json

# --- channels, webhooks, consolidation -----------------------------------------------------------


class Channel(TypedDict):
    id: int
    name: str
    description: str
    workspace: str
    is_default: bool
    created_at: str


class Webhook(TypedDict):
    id: str
    kind: Literal["agent", "notification"]
    url: str
    description: str
    created_at: str


class WebhookCreated(Webhook):
    secret: str  # shown this once


class WebhookList(TypedDict):
    results: list[Webhook]


class Consolidation(TypedDict):
    dry_run: bool
    report_id: int | None
    counts: dict[str, int]
    deletions: list[dict[str, Any]]


# --- schedules and runs --------------------------------------------------------------------------


class Cadence(TypedDict, total=False):
    type: Literal["cron", "once", "interval"]
    value: Json
    timezone: str
    description: str


class Schedule(TypedDict):
    id: str
    name: str
    goal: str
    action: str
    params: dict[str, Any]
    cadence: Cadence
    user_id: str
    notification_policy: str
    channel: str
    workspace: str | None
    status: str
    next_run_at: str | None
    next_run_local: str
    last_run_at: str | None
    last_run_local: str
    last_run_status: str
    consecutive_failures: int
    created_at: str
    updated_at: str


class Run(TypedDict):
    id: str
    run_id: str
    schedule: str
    manual: bool
    due_at: str | None
    started_at: str | None
    finished_at: str | None
    status: str
    error: str
    output_summary: str
    output: Json
    turn_count: int
    cost: float
    notified: bool


# --- lifecycle and health ------------------------------------------------------------------------


class Imported(TypedDict):
    """What an import did; `skipped`/`merged` count rows the tenant held already (on_conflict)."""

    on_conflict: Literal["fail", "skip", "merge"]
    imported: dict[str, int]
    skipped: dict[str, int]
    merged: dict[str, int]
    skipped_sessions: list[str]
    merged_sessions: list[str]


class KeyInfo(TypedDict):
    """The key the client sends (describe_key): its tenant, limits (None: none) and scopes."""

    tenant: str
    workspace: str | None
    user_id: str | None
    scopes: list[str]


class EndUser(TypedDict):
    """An end user who owns sessions, facts or notes the key may see (list_users)."""

    user_id: str
    sessions: int
    facts: int
    notes: int
    last_activity: str | None


class UserForgotten(TypedDict):
    user_id: str
    deleted: dict[str, int]
    total: int
    redacted: dict[str, int]


class WorkspaceDeleted(TypedDict):
    workspace: str
    dry_run: bool
    deleted: dict[str, int]
    total: int


class HealthDetails(TypedDict):
    restarts: int
    restarted: dict[str, int]


class Health(TypedDict):
    status: str
    details: HealthDetails


class Ready(TypedDict):
    status: Literal["ready", "not_ready"]
    checks: dict[str, str]
