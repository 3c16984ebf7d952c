"""Messages that older Python clients marked as cleared instead of deleting them
(docs/event-log.md#removing-messages).

Before the framework adapters deleted what they clear or pop, they wrote the session's metadata
`{"transcript": {"cleared_through": N, "retracted": [sequence, ...]}}` and hid those events from
their own reads only: search, context and export still found them. Cleared has one meaning,
deleted: `honour_cleared_marks` deletes the marked events the way DELETE /sessions/{id}/events/
deletes (memoryhub.event_log.delete_events, with their chunks, covering summaries and the facts
drawn only from them) and removes the mark, in one transaction. A tenant with an immutable
transcript keeps its events: the mark stays, as the record of what the user cleared, and is logged.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import Q

from memoryhub.event_log import delete_events
from memoryhub.models import Session

logger = logging.getLogger(__name__)

TRANSCRIPT = "transcript"  # the session metadata key the older clients wrote their marks under
_MARK_KEYS = {"cleared_through", "retracted"}


def read_mark(metadata: Any) -> tuple[int, set[int]] | None:
    """(cleared_through, retracted sequences) of the older clients' mark, or None when the
    metadata holds none (a "transcript" value of another shape is the client's own data: left
    alone)."""
    mark = metadata.get(TRANSCRIPT) if isinstance(metadata, dict) else None
    if not isinstance(mark, dict) or not mark or set(mark) - _MARK_KEYS:
        return None
    through = mark.get("cleared_through") or 0
    retracted = mark.get("retracted") or []
    if type(through) is not int or not isinstance(retracted, list):
        return None
    if any(type(s) is not int for s in retracted):
        return None
    return through, set(retracted)


@transaction.atomic
def honour_cleared_marks(session_pk: int) -> dict[str, int]:
    """Delete the events the session's mark names with what was derived from them, then remove the
    mark; counts per model label ({} when there is no mark, or the transcript is immutable)."""
    session = (
        Session.objects.select_for_update(of=("self",)).select_related("tenant").get(pk=session_pk)
    )
    mark = read_mark(session.metadata)
    if mark is None:
        return {}
    if session.tenant.immutable_transcript:
        logger.warning(
            "session %s keeps the messages an older client marked as cleared: its tenant keeps an"
            " immutable transcript",
            session.pk,
        )
        return {}
    through, retracted = mark
    marked = session.events.filter(Q(sequence__lte=through) | Q(sequence__in=sorted(retracted)))
    deleted = delete_events(session, set(marked.values_list("sequence", flat=True)))
    session.metadata = {k: v for k, v in session.metadata.items() if k != TRANSCRIPT}
    session.save(update_fields=["metadata"])
    return deleted


def honour_every_cleared_mark() -> int:
    """Honour the mark of every session that has one; returns how many sessions lost events."""
    marked = Session.objects.filter(metadata__has_key=TRANSCRIPT).order_by("pk")
    return sum(bool(honour_cleared_marks(pk)) for pk in marked.values_list("pk", flat=True))
