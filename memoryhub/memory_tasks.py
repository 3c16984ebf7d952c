"""Background tasks of notes, facts and summaries, run by the django-q2 cluster (or inline when
MEMORYHUB_TASKS_EAGER). Enqueued with memoryhub.tasks.enqueue_on_commit by dotted path."""

from __future__ import annotations

from typing import Any

from memoryhub.models import Session


def summarise_session(session_pk: int) -> dict[str, Any]:
    """The S6 automatic trigger for one session (enqueued after every append)."""
    from memoryhub.summaries import maybe_summarise

    session = Session.objects.filter(pk=session_pk).first()
    if session is None:
        return {"summarised": False, "missing": True}
    return maybe_summarise(session)


def build_summary_tree(session_pk: int, final: bool = False) -> int:
    from memoryhub.summaries import build_tree

    session = Session.objects.filter(pk=session_pk).first()
    return build_tree(session, final=final) if session is not None else 0


def summarise_due(tenant_id: int | None = None) -> dict[str, Any]:
    from memoryhub.summaries import summarise_due as run

    return run(tenant_id=tenant_id)


def extract_facts(session_pk: int, event_ids: list[int]) -> int:
    """Run the configured fact extractor over newly appended events; returns facts stored."""
    from memoryhub.extractors import extract_and_store

    session = Session.objects.filter(pk=session_pk).first()
    if session is None:
        return 0
    return len(extract_and_store(session, event_ids))
