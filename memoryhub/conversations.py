"""A conversation's lifecycle (docs/event-log.md#conversation-lifecycle): active → idle → archived,
and what ending it does.

A status move is validated (repeating the current status is refused, archived is final); leaving
"active" records `ended_at` (kept from idle to archived, cleared when the session is active again).
The end of a conversation (idle, or archived) clears its conversation-tier memories
(docs/event-log.md#conversation-lifecycle; "cleared when the conversation ends"): its notes, and its
facts that consolidation has not promoted to long-term (pinned ones stay too), unless
KEEP_CONVERSATION_MEMORIES. Its scratchpad and its event log are kept. The end also wakes the
summarise lane, which runs the fact extractor over the events not extracted yet
(memoryhub.session_work): extracted facts are never conversation-tier, so they outlive the clearing
whichever comes first.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from memoryhub.errors import Conflict
from memoryhub.models import STATUS_TRANSITIONS, Fact, Note, Session, SessionStatus
from memoryhub.plumbing.background import notify_work
from memoryhub.signals import memory_deleted

logger = logging.getLogger(__name__)

# Ending a conversation clears its conversation-tier notes and facts
# (docs/event-log.md#conversation-lifecycle), except pinned ones and facts consolidation promoted to
# long-term; True keeps them all.
KEEP_CONVERSATION_MEMORIES = False


def check_move(session: Session, status: str) -> None:
    if status == session.status:
        raise Conflict(
            "invalid_status_transition",
            f"Session {session.external_id!r} is already {status}.",
            {"from": session.status, "to": status},
        )
    if status not in STATUS_TRANSITIONS[session.status]:
        raise Conflict(
            "invalid_status_transition",
            f"A session cannot move from {session.status!r} to {status!r}.",
            {"from": session.status, "to": status},
        )


def move(session: Session, status: str, *, now: datetime | None = None) -> list[str]:
    """Set the status and what goes with it (ended_at); the fields to save. No checks, no side
    effects."""
    session.status = status
    if status == SessionStatus.ACTIVE:
        session.ended_at = None
    elif session.ended_at is None:
        session.ended_at = now or timezone.now()
    return ["status", "ended_at"]


@transaction.atomic
def after_move(session: Session, previous: str) -> dict[str, int]:
    """Side effects of a committed status move (inside its transaction): the end of the
    conversation (idle or archived) clears its memories and wakes the background lane for its
    last extraction. Returns what was cleared."""
    if session.status == SessionStatus.ACTIVE or session.status == previous:
        return {}
    notify_work()  # the session is due (events past facts_extracted_to): extract them now
    if KEEP_CONVERSATION_MEMORIES:
        return {}
    cleared = clear_conversation_memories(session)
    if any(cleared.values()):
        logger.info("session %s ended (%s): cleared %s", session.pk, session.status, cleared)
    return cleared


def clear_conversation_memories(session: Session) -> dict[str, int]:
    """Delete the conversation-tier notes and facts of `session`, keeping pinned ones and facts
    promoted to long-term; their search chunks go with them."""
    notes = list(Note.objects.filter(session=session, tier="conversation", pinned=False))
    facts = list(
        Fact.objects.filter(session=session, tier="conversation", pinned=False).exclude(
            lifetime="long_term"
        )
    )
    for note in notes:
        memory_deleted.send(
            sender=Note, kind="note", tenant_id=note.tenant_id, source_id=note.note_id
        )
    for fact in facts:
        memory_deleted.send(
            sender=Fact, kind="fact", tenant_id=fact.tenant_id, source_id=str(fact.pk)
        )
    Note.objects.filter(pk__in=[n.pk for n in notes]).delete()
    Fact.objects.filter(pk__in=[f.pk for f in facts]).delete()
    return {"notes": len(notes), "facts": len(facts)}
