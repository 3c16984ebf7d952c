"""Run notifications, delivered: a finished run whose schedule's policy asks for it is POSTed,
signed, to the tenant's notification webhook, and retried with backoff until it is accepted.

`record_delivery` writes the Delivery in the transaction that finishes the run (so a crash between
the two cannot lose it) and enqueues its first attempt on commit. Each attempt claims the row
(SELECT … FOR UPDATE SKIP LOCKED, pending and due) and moves `next_attempt_at` past the time the
POST may take before sending, so a second worker or a retry pass never sends it twice at once;
the dispatcher's pass (every minute) enqueues the retries that are due with `retry_due`. Receivers
may still see a body twice (a reply lost on the way back): `X-MemoryHub-Delivery` names it.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryhub.tasks import enqueue_on_commit
from scheduling import webhooks
from scheduling.models import Delivery, DeliveryStatus, Run, Schedule, WebhookKind

logger = logging.getLogger(__name__)

DELIVER = "scheduling.tasks.deliver_notification"
EVENT = "schedule.run.finished"
MAX_BACKOFF = timedelta(hours=6)
# Attempts per delivery, the wait before the first retry (doubled after each failed attempt, at
# most MAX_BACKOFF; retries go out with the dispatcher's pass, every minute) and the seconds one
# POST may take.
MAX_ATTEMPTS = 5
BACKOFF_SECONDS = 30
TIMEOUT_SECONDS = 10.0
NO_WEBHOOK = (
    "No notification webhook is configured for this tenant "
    "(POST /api/v1/webhooks/ with kind 'notification')."
)


def payload(delivery_id: Any, run: Run, schedule: Schedule) -> dict[str, Any]:
    """What the receiver gets: enough to route the message (channel, channel_context_id) and
    say what happened; the full output is at GET /api/v1/runs/{id}/."""
    return {
        "event": EVENT,
        "delivery_id": str(delivery_id),
        "tenant": schedule.tenant.name,
        "schedule": {
            "id": str(schedule.pk),
            "name": schedule.name,
            "goal": schedule.goal,
            "action": schedule.action,
            "user_id": schedule.user_id,
            "workspace": schedule.workspace.name if schedule.workspace_id else None,
            "channel": schedule.channel,
            "channel_context_id": schedule.channel_context_id,
            "notification_policy": schedule.notification_policy,
        },
        "run": {
            "id": str(run.pk),
            "status": run.status,
            "error": run.error,
            "manual": run.manual,
            "started_at": _iso(run.started_at),
            "finished_at": _iso(run.finished_at),
            "output_summary": run.output_summary,
            "turn_count": run.turn_count,
            "cost": run.cost,
        },
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def record_delivery(run: Run, schedule: Schedule, now: datetime | None = None) -> Delivery:
    """Inside the transaction that finishes `run`: the delivery to make, its first attempt on
    commit."""
    now = now or timezone.now()
    target = webhooks.target_for(schedule.tenant_id, WebhookKind.NOTIFICATION)
    delivery_id = uuid.uuid4()
    delivery = Delivery(
        id=delivery_id,
        tenant_id=run.tenant_id,
        run=run,
        payload=payload(delivery_id, run, schedule),
        max_attempts=MAX_ATTEMPTS,
        created_at=now,
    )
    if target is None:
        delivery.status, delivery.last_error = DeliveryStatus.NO_WEBHOOK, NO_WEBHOOK
    else:
        delivery.webhook, delivery.url, delivery.next_attempt_at = target.webhook, target.url, now
    delivery.save()
    if delivery.status == DeliveryStatus.PENDING:
        enqueue_on_commit(DELIVER, str(delivery.pk), group="schedules")
    return delivery


def deliver(delivery_id: str) -> str:
    """One attempt (the cluster's task). Returns the delivery's status after it, or 'skipped'."""
    delivery = _claim(delivery_id, timezone.now())
    if delivery is None:
        return "skipped"  # delivered, given up, not due yet, or another worker holds it
    target = webhooks.target_for(delivery.tenant_id, WebhookKind.NOTIFICATION)
    error, code = "", None  # an error (empty: accepted) and the answer's HTTP status
    if target is None:
        # removed since the run finished; it may come back before the last attempt
        error = NO_WEBHOOK
    else:
        body = json.dumps(delivery.payload, sort_keys=True).encode()
        try:
            code, _ = webhooks.send(
                target,
                body,
                timeout=TIMEOUT_SECONDS,
                max_reply=64 * 1024,
                extra_headers={
                    "X-MemoryHub-Delivery": str(delivery.pk),
                    "X-MemoryHub-Event": EVENT,
                },
            )
        except webhooks.SendError as exc:
            error, code = _describe(exc), exc.status
    return _record_attempt(delivery, target, error=error, code=code, now=timezone.now())


def _describe(exc: webhooks.SendError) -> str:
    text = " ".join(exc.text.split())[:300]
    return f"{exc.message}: {text}" if text else exc.message


def _claim(delivery_id: str, now: datetime) -> Delivery | None:
    # The lease: until the POST could have timed out (plus a margin) no one else picks it up;
    # a worker killed mid-attempt leaves it to the retry pass after that.
    lease = timedelta(seconds=TIMEOUT_SECONDS + 60)
    with transaction.atomic():
        delivery = (
            Delivery.objects.select_for_update(skip_locked=True)
            .filter(pk=delivery_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
            .first()
        )
        if delivery is None:
            return None
        delivery.attempts += 1
        delivery.next_attempt_at = now + lease
        delivery.save(update_fields=["attempts", "next_attempt_at"])
    return delivery


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failed attempt: the base, doubled each time, capped."""
    base = timedelta(seconds=BACKOFF_SECONDS)
    return min(base * 2 ** max(attempts - 1, 0), MAX_BACKOFF)


def _record_attempt(
    delivery: Delivery,
    target: webhooks.Target | None,
    *,
    error: str,
    code: int | None,
    now: datetime,
) -> str:
    delivery.last_status_code = code
    if target is not None:
        delivery.webhook, delivery.url = target.webhook, target.url
    if not error:
        delivery.status, delivery.delivered_at, delivery.next_attempt_at = (
            DeliveryStatus.DELIVERED,
            now,
            None,
        )
    elif delivery.attempts >= delivery.max_attempts:
        delivery.status, delivery.next_attempt_at, delivery.last_error = (
            DeliveryStatus.FAILED,
            None,
            error[:500],
        )
        logger.warning(
            "notification not delivered", extra={"delivery": str(delivery.pk), "error": error}
        )
    else:
        delivery.next_attempt_at, delivery.last_error = (
            now + backoff(delivery.attempts),
            error[:500],
        )
    fields = [
        "status",
        "delivered_at",
        "next_attempt_at",
        "last_error",
        "last_status_code",
        "webhook_id",
        "url",
    ]
    with transaction.atomic():
        # update(), not save(): the run (and with it this row) may have been pruned during the POST.
        Delivery.objects.filter(pk=delivery.pk).update(
            **{name: getattr(delivery, name) for name in fields}
        )
        if delivery.status == DeliveryStatus.DELIVERED:
            Run.objects.filter(pk=delivery.run_id).update(notified=True)
    return delivery.status


def retry_due(now: datetime | None = None, *, limit: int = 500) -> int:
    """Enqueue an attempt for every pending delivery whose time has come (the dispatcher's pass)."""
    now = now or timezone.now()
    due = list(
        Delivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )
    for delivery_id in due:
        enqueue_on_commit(DELIVER, str(delivery_id), group="schedules")
    return len(due)


@transaction.atomic
def retry(delivery: Delivery) -> Delivery:
    """An operator's "try again" on a failed or unsent delivery: as many attempts again, from
    now."""
    delivery = Delivery.objects.select_for_update().get(pk=delivery.pk)
    if delivery.status in (DeliveryStatus.FAILED, DeliveryStatus.NO_WEBHOOK):
        delivery.status, delivery.next_attempt_at = DeliveryStatus.PENDING, timezone.now()
        delivery.max_attempts = delivery.attempts + MAX_ATTEMPTS
        delivery.save(update_fields=["status", "next_attempt_at", "max_attempts"])
        enqueue_on_commit(DELIVER, str(delivery.pk), group="schedules")
    return delivery
