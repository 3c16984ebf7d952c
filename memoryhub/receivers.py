"""What the core domain does after an append: wake the background lanes (the rolling summary, the
summary tree and fact extraction are the summarise lane's, memoryhub.session_work, which finds the
session due from its rows). Connected in MemoryhubConfig.ready(), which also
connects the API's batched write of a key's last use (docs/wiring.md lists every receiver)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub import metrics
from memoryhub.plumbing.background import notify_work
from memoryhub.signals import events_appended


def on_events_appended(sender: Any, session: Any, events: list[Any], **kwargs: Any) -> None:
    notify_work()  # delivered when the append commits
    # the dashboard's arrivals
    metrics.count_arrivals({session.tenant_id: len(events)}, kind="events")
    if settings.MEMORYHUB_TASKS_EAGER:  # tests and one-off tools: the lane's work, inline
        session_pk = session.pk
        transaction.on_commit(lambda: _work_now(session_pk))


def _work_now(session_pk: int) -> None:
    from memoryhub import summaries as summary_rules
    from memoryhub.session_work import work_on_session

    # What an append used to queue: the rolling-summary trigger and fact extraction. The tree is the
    # lane's.
    work_on_session(session_pk, summaries=summary_rules.AUTO_SUMMARISE, tree=False)


def on_fact_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    # However a fact goes (the API, a consolidation merge or prune, its conversation's end, the
    # admin), its history stays and its last version is closed (docs/memory-model.md#fact-history).
    # delete_fact closed it already; this finds none open then.
    from memoryhub.facts import close_version

    close_version(instance, at=timezone.now(), closed_by="deleted")


def connect() -> None:
    from django.db.models.signals import post_delete

    from memoryhub.models import Fact

    events_appended.connect(on_events_appended, dispatch_uid="memoryhub.memory_after_append")
    post_delete.connect(
        on_fact_deleted, sender=Fact, dispatch_uid="memoryhub.fact_history_on_delete"
    )
