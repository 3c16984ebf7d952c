"""What the core domain does after an append: the rolling-summary trigger (S6) and fact
extraction (S5). Connected in MemoryhubConfig.ready()."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from memoryhub.signals import events_appended
from memoryhub.tasks import enqueue_on_commit


def on_events_appended(sender: Any, session: Any, events: list[Any], **kwargs: Any) -> None:
    if settings.MEMORYHUB_AUTO_SUMMARISE and session.event_count >= settings.MEMORYHUB_SUMMARY_MIN_MESSAGES:
        enqueue_on_commit("memoryhub.memory_tasks.summarise_session", session.pk)
    if settings.MEMORYHUB_FACT_EXTRACTOR != "none" and events:
        enqueue_on_commit("memoryhub.memory_tasks.extract_facts", session.pk, [e.pk for e in events])


def connect() -> None:
    events_appended.connect(on_events_appended, dispatch_uid="memoryhub.memory_after_append")
