"""Delete a workspace with its memory: everything scoped to it goes, and nothing is left for a
later cleanup (docs/memory-model.md#workspace-deletion).

Everything hangs off a workspace by a foreign key with ON DELETE CASCADE: its channels and
sessions, and through them events, chunks (a fact's superseded ones too: the cascade reads
Chunk's base manager, every_version), notes, facts and their FactVersion history, summaries,
scratchpads, documents, schedules and their runs, API keys limited to it. Django's collector finds
these models itself (as forget-user discovers its models), so a model added later with such a key
goes too; what keeps no foreign key (a consolidation's archived copies of the workspace's
memories) is removed by the receivers of `workspace_forgotten`. One transaction: all or nothing.

A preview (dry_run) performs the very same deletion in a transaction that is rolled back, so its
counts are exactly those of a real run.
"""

from __future__ import annotations

import logging
from collections import Counter

from django.db import transaction

from accounts.models import Workspace
from memoryhub.errors import Conflict
from memoryhub.models import Session
from memoryhub.signals import session_forgotten, workspace_forgotten

logger = logging.getLogger(__name__)


def delete_workspace(workspace: Workspace, *, dry_run: bool = False) -> dict[str, int]:
    """Delete the workspace and everything in it; {model label: rows} (what would go, for a dry
    run). A tenant with an immutable transcript keeps its events: 409 immutable_transcript."""
    if (
        workspace.tenant.immutable_transcript
        and Session.objects.filter(workspace=workspace).exists()
    ):
        raise Conflict(
            "immutable_transcript",
            "This tenant keeps an immutable transcript: a workspace with conversations cannot be"
            " deleted; forget their users instead.",
            {"workspace": workspace.name},
        )
    with transaction.atomic():
        counts = _delete(workspace)
        if dry_run:  # the innermost block only: a caller's transaction (the admin's) goes on
            transaction.set_rollback(True)
    if not dry_run:
        logger.info(
            "deleted workspace %s of tenant %s: %s", workspace.pk, workspace.tenant_id, counts
        )
    return counts


def _delete(workspace: Workspace) -> dict[str, int]:
    totals: Counter[str] = Counter()
    locked = Workspace.objects.select_for_update().filter(pk=workspace.pk).first()
    if locked is None:  # deleted meanwhile by another request
        return {}
    sessions = list(Session.objects.filter(workspace=locked).order_by("pk"))
    for session in sessions:
        session_forgotten.send(sender=Session, session=session)
    for _, extra in workspace_forgotten.send(
        sender=Workspace, workspace=locked, session_ids=[s.pk for s in sessions]
    ):
        totals.update(extra or {})
    _, per_model = locked.delete()
    totals.update(per_model)
    return {label: count for label, count in sorted(totals.items()) if count}
