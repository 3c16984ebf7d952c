"""Schedule operations shared by the API and the admin: create, edit, pause, resume."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiKey
from memoryhub.errors import Conflict, Invalid, NotFound
from memoryhub.ownership import refuse_shared
from memoryhub.sessions import resolve_user, resolve_workspace
from scheduling import authority, webhooks
from scheduling import cadence as cadence_maths
from scheduling.actions import ParamsError, check_params
from scheduling.models import Run, Schedule, ScheduleStatus

AGENT_GOAL = "agent_goal"


def _bad(code: str, message: str, field: str) -> Invalid:
    return Invalid(code, message, details={"fields": {field: [{"code": code, "message": message}]}})


def checked_cadence(data: dict[str, Any]) -> cadence_maths.Cadence:
    try:
        return cadence_maths.validate(
            data["type"], data.get("value"), data.get("timezone") or "UTC", now=timezone.now()
        )
    except cadence_maths.CadenceError as exc:
        raise _bad(exc.code, exc.message, exc.field) from None


def checked_params(action: str, params: Any, goal: str) -> dict[str, Any]:
    try:
        return check_params(action, params, goal)
    except ParamsError as exc:
        field = {"invalid_params": "params", "unknown_action": "action"}.get(exc.code, "goal")
        raise _bad(exc.code, exc.message, field) from None


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def get_schedule(key: ApiKey, schedule_id: str, *, for_update: bool = False) -> Schedule:
    pk = _uuid(schedule_id)
    qs = Schedule.objects.visible_to(key)
    if for_update:
        qs = qs.select_for_update(of=("self",))
    schedule = qs.filter(pk=pk).first() if pk else None
    if schedule is None:
        raise NotFound("schedule_not_found", f"Schedule {schedule_id!r} does not exist.")
    return schedule


def get_schedule_for_write(key: ApiKey, schedule_id: str, *, for_update: bool = False) -> Schedule:
    """A schedule the key may change, pause, resume, run or delete: one it sees, not a shared one
    for a user-limited key, and a tenant-wide action only with an admin key for the whole tenant."""
    schedule = get_schedule(key, schedule_id, for_update=for_update)
    refuse_shared(key, schedule.user_id, f"Schedule {schedule_id!r}")
    authority.check_key_may_schedule(key, schedule.action)
    return schedule


def get_run(key: ApiKey, run_id: str) -> Run:
    pk = _uuid(run_id)
    run = (
        Run.objects.visible_to(key).select_related("delivery").filter(pk=pk).first() if pk else None
    )
    if run is None:
        raise NotFound("run_not_found", f"Run {run_id!r} does not exist.")
    return run


def filter_schedules(key: ApiKey, filters: dict[str, Any]) -> Any:
    qs = Schedule.objects.visible_to(key)
    if filters.get("q"):
        q = filters["q"]
        qs = qs.filter(Q(name__icontains=q) | Q(goal__icontains=q))
    for name in (
        "status",
        "action",
        "cadence_type",
        "user_id",
        "channel",
        "channel_context_id",
        "name",
    ):
        if name in filters:
            qs = qs.filter(**{name: filters[name]})
    if "workspace" in filters:
        qs = qs.filter(workspace__name=filters["workspace"])
    return qs.order_by("-created_at", "pk")


@transaction.atomic
def create_schedule(key: ApiKey, data: dict[str, Any]) -> Schedule:
    authority.check_key_may_schedule(key, data["action"])  # before anything: a 403 stores nothing
    cadence = checked_cadence(data["cadence"])
    params = checked_params(data["action"], data.get("params"), data.get("goal", ""))
    if data["action"] == AGENT_GOAL:
        webhooks.require_agent_webhook(key.tenant_id)
    workspace = resolve_workspace(key, data.get("workspace") or None)
    schedule = Schedule(
        tenant_id=key.tenant_id,
        workspace=workspace,
        user_id=resolve_user(key, data.get("user_id")) or "",
        name=data["name"],
        goal=data.get("goal", ""),
        action=data["action"],
        params=params,
        cadence_type=cadence.type,
        cadence_value=cadence.value,
        timezone=cadence.timezone,
        notification_policy=data["notification_policy"],
        channel=data.get("channel", ""),
        channel_context_id=data.get("channel_context_id", ""),
        next_run_at=cadence_maths.next_run(cadence, timezone.now()),
    )
    authority.stamp(schedule, key)
    schedule.save(force_insert=True)
    return schedule


@transaction.atomic
def update_schedule(key: ApiKey, schedule_id: str, changes: dict[str, Any]) -> Schedule:
    schedule = get_schedule_for_write(key, schedule_id, for_update=True)
    if "action" in changes:
        authority.check_key_may_schedule(key, changes["action"])
    if "user_id" in changes:
        changes = {**changes, "user_id": resolve_user(key, changes["user_id"]) or ""}
        # claiming a shared one is fine
        if schedule.user_id and changes["user_id"] != schedule.user_id:
            raise Conflict(
                "owner_mismatch",
                f"Schedule {schedule_id!r} belongs to another user: its owner cannot be changed.",
                {"user_id": changes["user_id"]},
            )
    for name in (
        "name",
        "goal",
        "user_id",
        "notification_policy",
        "channel",
        "channel_context_id",
        "action",
    ):
        if name in changes:
            setattr(schedule, name, changes[name])
    schedule.params = checked_params(
        schedule.action, changes.get("params", schedule.params), schedule.goal
    )
    if "action" in changes and schedule.action == AGENT_GOAL:
        webhooks.require_agent_webhook(schedule.tenant_id)
    if "cadence" in changes:
        cadence = checked_cadence(changes["cadence"])
        schedule.cadence_type, schedule.cadence_value, schedule.timezone = (
            cadence.type,
            cadence.value,
            cadence.timezone,
        )
        schedule.next_run_at = cadence_maths.next_run(cadence, timezone.now())
        if schedule.status in (ScheduleStatus.COMPLETED, ScheduleStatus.FAILED):
            # a new cadence gives a finished schedule a new life
            schedule.status = ScheduleStatus.ACTIVE
            schedule.consecutive_failures = 0
    authority.stamp(schedule, key)  # it now acts for the key that changed it last
    schedule.save()
    return schedule


@transaction.atomic
def pause(schedule: Schedule) -> Schedule:
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.status == ScheduleStatus.COMPLETED:
        raise Conflict("schedule_completed", "A completed schedule cannot be paused.")
    if schedule.status != ScheduleStatus.PAUSED:
        schedule.status = ScheduleStatus.PAUSED
        schedule.save(update_fields=["status", "updated_at"])
    return schedule


@transaction.atomic
def resume(schedule: Schedule, key: ApiKey | None = None) -> Schedule:
    """Active again from now: the failure streak is reset and the next time computed afresh. It
    then acts for `key` (None: the operator, in the admin), e.g. an imported schedule or one whose
    key was revoked."""
    schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
    if schedule.status == ScheduleStatus.ACTIVE:
        return schedule
    if schedule.status == ScheduleStatus.COMPLETED:
        raise Conflict(
            "schedule_completed",
            "A completed one-shot schedule cannot be resumed; give it a new cadence.",
        )
    # e.g. imported (paused) into a tenant that has no agent webhook yet
    if schedule.action == AGENT_GOAL:
        webhooks.require_agent_webhook(schedule.tenant_id)
    following = cadence_maths.next_run(schedule.cadence(), timezone.now())
    if following is None:
        raise Conflict(
            "schedule_expired", "This one-shot schedule's time has passed; give it a new cadence."
        )
    schedule.status, schedule.consecutive_failures, schedule.next_run_at = (
        ScheduleStatus.ACTIVE,
        0,
        following,
    )
    authority.stamp(schedule, key)
    schedule.save(
        update_fields=[
            "status",
            "consecutive_failures",
            "next_run_at",
            "updated_at",
            *authority.AUTHORITY_FIELDS,
        ]
    )
    return schedule
