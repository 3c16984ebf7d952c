"""Deletions held for review (tenants with `review_deletions`): approve carries out what still
exists of one, reject keeps the memories."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from retrieval.lifecycle.memories import apply_merge, delete_memories
from retrieval.lifecycle.models import PendingDeletion


class ReviewError(Exception):
    pass


@transaction.atomic
def approve_pending(pending_id: int, *, by: str = "") -> dict[str, Any]:
    """Carry out a held deletion (what still exists of it)."""
    pending = (
        PendingDeletion.objects.select_for_update().select_related("tenant").get(pk=pending_id)
    )
    if pending.status != PendingDeletion.Status.PENDING:
        raise ReviewError(f"review {pending.pk} is already {pending.status}")
    if pending.step == PendingDeletion.Step.PRUNE and pending.tenant.immutable_transcript:
        outcome: dict[str, Any] = {"deleted": 0, "skipped": "immutable_transcript"}
    elif pending.step == PendingDeletion.Step.MERGE:
        outcome = {
            "deleted": apply_merge(
                tenant_id=pending.tenant_id,
                survivor_id=pending.payload["survivor"],
                absorbed_ids=list(pending.chunk_ids),
            )
        }
    else:
        outcome = {
            "deleted": delete_memories(
                tenant_id=pending.tenant_id, chunk_ids=list(pending.chunk_ids)
            )
        }
    _decide(pending, PendingDeletion.Status.APPROVED, by, outcome)
    return outcome


@transaction.atomic
def reject_pending(pending_id: int, *, by: str = "") -> None:
    pending = PendingDeletion.objects.select_for_update().get(pk=pending_id)
    if pending.status != PendingDeletion.Status.PENDING:
        raise ReviewError(f"review {pending.pk} is already {pending.status}")
    _decide(pending, PendingDeletion.Status.REJECTED, by, {})


def _decide(pending: PendingDeletion, status: str, by: str, outcome: dict[str, Any]) -> None:
    pending.status = status
    pending.decided_at = timezone.now()
    pending.decided_by = by
    pending.outcome = outcome
    pending.save(update_fields=["status", "decided_at", "decided_by", "outcome"])


@transaction.atomic
def decide_items(
    pending_id: int, *, approve: list[int], reject: list[int], by: str = ""
) -> dict[str, Any]:
    """Decide some of a held deletion's memories: those in `approve` are deleted now (a merge folds
    them into its survivor), those in `reject` are kept. The review stays pending while memories
    of it are undecided; once none is left it is closed as approved (if any was) or rejected.
    Returns {"deleted", "kept", "left"}."""
    pending = (
        PendingDeletion.objects.select_for_update().select_related("tenant").get(pk=pending_id)
    )
    if pending.status != PendingDeletion.Status.PENDING:
        raise ReviewError(f"review {pending.pk} is already {pending.status}")
    ids = [int(i) for i in pending.chunk_ids]
    approve = [i for i in ids if i in set(approve)]
    reject = [i for i in ids if i in set(reject) and i not in approve]
    deleted = 0
    if approve and not (
        pending.step == PendingDeletion.Step.PRUNE and pending.tenant.immutable_transcript
    ):
        if pending.step == PendingDeletion.Step.MERGE:
            deleted = apply_merge(
                tenant_id=pending.tenant_id,
                survivor_id=pending.payload["survivor"],
                absorbed_ids=approve,
            )
        else:
            deleted = delete_memories(tenant_id=pending.tenant_id, chunk_ids=approve)
    decided = set(approve) | set(reject)
    left = [i for i in ids if i not in decided]
    history = dict(pending.outcome or {})
    history["deleted"] = int(history.get("deleted", 0)) + deleted
    history["approved_ids"] = [*history.get("approved_ids", []), *approve]
    history["kept_ids"] = [*history.get("kept_ids", []), *reject]
    pending.chunk_ids = left
    pending.outcome = history
    pending.save(update_fields=["chunk_ids", "outcome"])
    if not left:
        status = (
            PendingDeletion.Status.APPROVED
            if history["approved_ids"]
            else PendingDeletion.Status.REJECTED
        )
        _decide(pending, status, by, history)
    return {"deleted": deleted, "kept": len(reject), "left": len(left)}
