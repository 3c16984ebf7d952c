"""The authority a schedule acts with: that of the key that created it or last changed it.

A schedule runs later, without a request, so it cannot take its limits from one: they are stored
with it (`Schedule.authority_*`) when a key creates or changes it, and every run acts within them.

- Tenant-wide maintenance actions (`Action.tenant_wide`: embed_backfill, summarise, consolidate)
  act on every workspace and user of the tenant, exactly as POST /consolidation/ does, so they need
  what that endpoint needs: the admin scope and a key limited to neither a workspace nor a user.
  A refused create or change answers 403 (`insufficient_scope`, `workspace_limited_key`,
  `user_limited_key`) and stores nothing. Their authority is the tenant.
- The other actions (prune_runs, agent_goal) are open to any key that may write schedules; their
  authority is the schedule's own place: its workspace and its user (the key's limits already
  force both), so a user-limited key's schedule acts only on that user's rows.
- At run time the authority is checked again: a run whose key was revoked or deleted, or whose
  key no longer holds what the action needs, fails without acting, with the reason as its error
  (`key_revoked`, `key_deleted`, `authority_changed`, `no_authority`, `admin_scope_required`).
- Which schedules and runs a key may read follows from the same fields
  (`ScheduleQuerySet.visible_to`).
"""

from __future__ import annotations

from accounts.models import SCOPES, ApiKey
from memoryhub.errors import Forbidden
from memoryhub.ownership import require_scope, require_tenant_wide
from scheduling.actions import REGISTRY
from scheduling.models import Schedule


class Refused(Exception):
    """A run may not act: `code` is recorded as the run's error, the message as its output."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def is_tenant_wide(action: str) -> bool:
    spec = REGISTRY.get(action)
    return bool(spec and spec.tenant_wide)


def check_key_may_schedule(key: ApiKey, action: str) -> None:
    """403 unless the key may make (or change, pause, resume, run, delete) a schedule of
    `action`."""
    if is_tenant_wide(action):
        what = f"A schedule of {action!r} (it works on the whole tenant)"
        require_scope(key, "admin", what)
        require_tenant_wide(key, what)


def stamp(schedule: Schedule, key: ApiKey | None) -> None:
    """Record `key` (None: the operator, in the admin) as the schedule's authority (unsaved)."""
    tenant_wide = is_tenant_wide(schedule.action)
    schedule.authority_key = key
    schedule.authority_key_prefix = key.prefix if key is not None else ""
    schedule.authority_scopes = list(key.scopes) if key is not None else list(SCOPES)
    if tenant_wide:  # check_key_may_schedule made sure the key is the tenant's
        schedule.authority_workspace_id, schedule.authority_user_id = None, ""
    else:
        schedule.authority_workspace_id = schedule.workspace_id
        schedule.authority_user_id = schedule.user_id


AUTHORITY_FIELDS = [
    "authority_key",
    "authority_key_prefix",
    "authority_workspace",
    "authority_user_id",
    "authority_scopes",
]


def for_run(schedule: Schedule) -> ApiKey:
    """The authority a run of `schedule` acts with now, as an (unsaved) key whose limits the
    action's queries apply; Refused when it has none."""
    if not schedule.authority_scopes:
        raise Refused(
            "no_authority",
            "This schedule has no recorded authority (e.g. it was imported): "
            "change or resume it with an API key to give it that key's.",
        )
    scopes = list(schedule.authority_scopes)
    if schedule.authority_key_prefix:
        key = (
            ApiKey.objects.filter(pk=schedule.authority_key_id).first()
            if schedule.authority_key_id
            else None
        )
        if key is None:
            raise Refused(
                "key_deleted",
                "The API key this schedule acts for was deleted; change or resume it "
                "with another key.",
            )
        if not key.is_active:
            raise Refused(
                "key_revoked",
                "The API key this schedule acts for was revoked; change or resume it "
                "with another key.",
            )
        if key.workspace_id not in (None, schedule.authority_workspace_id) or key.user_id not in (
            "",
            schedule.authority_user_id,
        ):
            raise Refused(
                "authority_changed",
                "The API key this schedule acts for is now limited more narrowly "
                "than when the schedule was made.",
            )
        scopes = [s for s in scopes if key.has_scope(s)]  # a scope the key lost is lost here too
    authority = ApiKey(
        tenant_id=schedule.tenant_id,
        workspace_id=schedule.authority_workspace_id,
        user_id=schedule.authority_user_id,
        scopes=scopes,
    )
    if "write" not in scopes and "admin" not in scopes:
        raise Refused(
            "authority_changed", "The API key this schedule acts for may no longer write."
        )
    if is_tenant_wide(schedule.action):
        if not authority.has_scope("admin"):
            raise Refused(
                "admin_scope_required",
                f"{schedule.action!r} works on the whole tenant: it needs the "
                "authority of an admin key.",
            )
        try:  # the one definition of a tenant-wide key, as export, forget-user and webhooks use
            require_tenant_wide(authority, repr(schedule.action))
        except Forbidden:
            raise Refused(
                "tenant_wide_key_required",
                f"{schedule.action!r} works on the whole tenant: it needs "
                "the authority of a key for the whole tenant.",
            ) from None
    return authority
