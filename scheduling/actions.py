"""The registry of named jobs a schedule can run. Each returns an ActionResult whose output is
what the called function reported; an exception is a failed run."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memoryhub.tasks import MAINTENANCE, SCHEDULES
from scheduling import jobs, webhooks
from scheduling.models import WebhookKind

# Runs kept per schedule: older ones are pruned when a run finishes (scheduling.dispatcher) and by
# the `prune_runs` action (its default `keep`). 50: a screen of history in the admin.
RUNS_KEPT = 50
# Seconds an `agent_goal` run waits for its agent webhook's answer: long enough for an agent that
# does a few model calls; a run is bounded by the schedules cluster's timeout (300 s) anyway.
AGENT_WEBHOOK_TIMEOUT_SECONDS = 30.0

if TYPE_CHECKING:
    from accounts.models import ApiKey
    from scheduling.models import Run, Schedule


class ActionError(Exception):
    """The action ran and failed; `output` is what it reported."""

    def __init__(
        self, message: str, output: str = "", *, turn_count: int = 0, cost: float = 0.0
    ) -> None:
        super().__init__(message)
        self.output = output or message
        self.turn_count = turn_count
        self.cost = cost


class ParamsError(ValueError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class ActionResult:
    output: Any
    turn_count: int = 0
    cost: float = 0.0

    def text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return json.dumps(self.output, default=str, sort_keys=True)


@dataclass
class Action:
    name: str
    # (schedule, run, authority): the authority is the key the run acts for (scheduling.authority),
    # whose limits every query of the action applies.
    run: Callable[[Schedule, Run, ApiKey], ActionResult]
    params: dict[str, type]  # allowed params and their types
    description: str
    needs_goal: bool = False
    # Works on the whole tenant (every workspace, every user): only an admin key for the whole
    # tenant may schedule it, as only such a key may call its REST endpoint (scheduling.authority).
    tenant_wide: bool = False
    # The cluster its runs execute on: bulk jobs go to maintenance, so that they never hold the
    # schedules cluster's workers while other tenants' runs are due.
    lane: str = SCHEDULES


def embed_backfill(schedule: Schedule, run: Run, authority: ApiKey) -> ActionResult:
    return ActionResult(
        jobs.embed_backfill(tenant_id=authority.tenant_id, limit=schedule.params.get("limit"))
    )


def summarise(schedule: Schedule, run: Run, authority: ApiKey) -> ActionResult:
    return ActionResult(jobs.summarise(tenant_id=authority.tenant_id))


def consolidate(schedule: Schedule, run: Run, authority: ApiKey) -> ActionResult:
    return ActionResult(
        jobs.consolidate(
            tenant_id=authority.tenant_id, dry_run=bool(schedule.params.get("dry_run", False))
        )
    )


def prune_runs(schedule: Schedule, run: Run, authority: ApiKey) -> ActionResult:
    """The history of the schedules its authority may change: those of the schedule's workspace,
    and of its user when it has one (a user-limited key's schedule: that user's own only)."""
    from scheduling.models import Run as RunModel
    from scheduling.models import Schedule as ScheduleModel

    keep = int(schedule.params.get("keep", RUNS_KEPT))
    deleted = 0
    ids = list(ScheduleModel.objects.within_authority(authority).values_list("pk", flat=True))
    for schedule_id in ids:
        deleted += RunModel.objects.prune_history(schedule_id, keep=keep, spare=run.pk)
    return ActionResult({"schedules": len(ids), "runs_deleted": deleted, "kept_per_schedule": keep})


def agent_goal(schedule: Schedule, run: Run, authority: ApiKey) -> ActionResult:
    """POST the goal to the tenant's agent webhook (signed), or the server default; its JSON reply
    gives status, output, turn_count, cost."""
    target = webhooks.target_for(schedule.tenant_id, WebhookKind.AGENT)
    if target is None:
        raise ActionError(
            "No agent webhook configured for this tenant (POST /api/v1/webhooks/, kind 'agent') "
            "and no server default (MEMORYHUB_AGENT_WEBHOOK_URL)."
        )
    body = json.dumps(
        {
            "schedule_id": str(schedule.pk),
            "run_id": str(run.pk),
            "name": schedule.name,
            "goal": schedule.goal,
            "tenant": schedule.tenant.name,
            "user_id": schedule.user_id,
            "channel": schedule.channel,
            "channel_context_id": schedule.channel_context_id,
            "params": schedule.params,
        }
    ).encode()
    try:
        _, raw = webhooks.send(
            target, body, timeout=AGENT_WEBHOOK_TIMEOUT_SECONDS, max_reply=10 * 1024 * 1024
        )
    except webhooks.SendError as exc:
        if exc.status is not None:
            raise ActionError(
                f"Agent webhook answered HTTP {exc.status}.", f"HTTP {exc.status}: {exc.text}"
            ) from None
        raise ActionError(f"Agent webhook {exc.message}") from None
    try:
        reply = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return ActionResult(raw)
    if not isinstance(reply, dict):
        return ActionResult(reply)
    output = reply.get("output", reply.get("result", ""))
    turns = _number(reply.get("turn_count", reply.get("turns", 0)), int)
    cost = _number(reply.get("cost", 0.0), float)
    status = str(reply.get("status", "succeeded")).lower()
    if status in {"failed", "failure", "error"}:
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        raise ActionError(
            f"Agent reported {status}.",
            text or f"Agent reported {status}.",
            turn_count=turns,
            cost=cost,
        )
    return ActionResult(output, turn_count=turns, cost=cost)


def _number(value: Any, kind: type) -> Any:
    try:
        return max(kind(value), 0)
    except (TypeError, ValueError):
        return kind(0)


REGISTRY: dict[str, Action] = {
    a.name: a
    for a in [
        Action(
            "embed_backfill",
            embed_backfill,
            {"limit": int},
            "Embed this tenant's chunks still without a vector.",
            lane=MAINTENANCE,
            tenant_wide=True,
        ),
        Action(
            "summarise",
            summarise,
            {},
            "Summarise this tenant's sessions that are due.",
            lane=MAINTENANCE,
            tenant_wide=True,
        ),
        Action(
            "consolidate",
            consolidate,
            {"dry_run": bool},
            "Consolidate this tenant's memory (promote, prune, merge, cap, compress).",
            lane=MAINTENANCE,
            tenant_wide=True,
        ),
        Action(
            "prune_runs",
            prune_runs,
            {"keep": int},
            "Prune the run history of the schedules of its workspace (of its user, if it has one) "
            "to the newest N.",
        ),
        Action(
            "agent_goal",
            agent_goal,
            {},
            "POST the goal to the tenant's agent webhook.",
            needs_goal=True,
        ),
    ]
}


def check_params(action: str, params: Any, goal: str) -> dict[str, Any]:
    """Params checked against the action's declared ones (ParamsError with a code otherwise)."""
    spec = REGISTRY.get(action)
    if spec is None:
        raise ParamsError(
            "unknown_action", f"Unknown action {action!r}; known: {', '.join(sorted(REGISTRY))}."
        )
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ParamsError("invalid_params", "params must be a JSON object.")
    for name, value in params.items():
        kind = spec.params.get(name)
        if kind is None:
            raise ParamsError("invalid_params", f"Action {action!r} takes no parameter {name!r}.")
        if not isinstance(value, kind) or (kind is int and (isinstance(value, bool) or value < 1)):
            raise ParamsError(
                "invalid_params",
                f"Parameter {name!r} must be a"
                f" {'positive integer' if kind is int else kind.__name__}.",
            )
    if spec.needs_goal and not goal.strip():
        raise ParamsError("goal_required", f"Action {action!r} needs a goal.")
    return params
