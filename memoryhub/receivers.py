"""What the core domain does after an append: wake the background lanes (the rolling summary of
S6, the summary tree and fact extraction of S5 are the summarise lane's, memoryhub.session_work,
which finds the session due from its rows); and note an API key's last use (accounts' key_used) for
the batched write. Connected in MemoryhubConfig.ready()."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from accounts.signals import key_used
from memoryhub.background import notify_work
from memoryhub.middleware import note_key_use
from memoryhub.signals import events_appended


def on_events_appended(sender: Any, session: Any, events: list[Any], **kwargs: Any) -> None:
    notify_work()  # delivered when the append commits
    if settings.MEMORYHUB_TASKS_EAGER:  # tests and one-off tools: the lane's work, inline
        session_pk = session.pk
        transaction.on_commit(lambda: _work_now(session_pk))


def _work_now(session_pk: int) -> None:
    from memoryhub.session_work import work_on_session

    # What an append used to queue: the S6 trigger and fact extraction. The tree is the lane's.
    work_on_session(session_pk, summaries=settings.MEMORYHUB_AUTO_SUMMARISE, tree=False)


def connect() -> None:
    events_appended.connect(on_events_appended, dispatch_uid="memoryhub.memory_after_append")
    key_used.connect(note_key_use, dispatch_uid="memoryhub.key_use")
