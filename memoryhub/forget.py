"""Forget a user (docs/memory-model.md#forget; GDPR): every row of theirs in one tenant, in one
transaction.

Rows belong to a user through a `user_id` string (sessions, chunks, notes, facts, schedules and
any later model that carries one) or through a session of theirs (events, chunks, summaries,
scratchpads, documents — deleted by cascade). The models are discovered rather than listed, so a
model added later with `tenant` and `user_id` is forgotten too.

Some rows of nobody in particular copy a user's words: what a consolidation deleted, in its
report, in the output of the scheduled run that made it and in that run's notification. The app
that owns such a table registers a redactor, `(tenant_id, user_id) -> {label: rows redacted}`,
with `register_redactor` in its AppConfig.ready(); they are called in the same transaction
(`redact_deletions` is the one way such a list is redacted). Last, `user_forgotten` lets other
apps remove what derived data still holds of the user (retrieval folds its search statistics) in
that transaction too. docs/wiring.md lists them all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pgtrigger
from django.apps import apps
from django.db import models, transaction

from memoryhub.models import Session
from memoryhub.signals import session_forgotten, user_forgotten

# Lifted for forget-user only: a tenant with an immutable transcript still loses a user's events.
IMMUTABLE_TRIGGER = "memoryhub.Event:event_immutable_transcript"


def user_owned_models() -> list[type[models.Model]]:
    """Concrete models with a tenant and a plain `user_id` string (not a FK to auth users)."""
    found = []
    for model in apps.get_models():
        # a view (EndUser) holds no rows
        if model._meta.proxy or not model._meta.managed or model is Session:
            continue
        names = {f.name: f for f in model._meta.concrete_fields}
        field = names.get("user_id")
        if "tenant" in names and isinstance(field, models.CharField) and not field.is_relation:
            found.append(model)
    return found


FORGOTTEN_KEYS = ("tenant", "step", "kind", "held")  # what stays of a redacted entry


def redact_deletions(entries: Any, *, tenant_name: str, user_id: str) -> tuple[Any, int]:
    """A consolidation's list of deletions ({"user_id", "text", "session", "merged_into", …}) with
    the entries of `user_id` in the tenant reduced to what they were (step, kind) and
    `"forgotten": true`. Returns the list and how many entries were redacted."""
    if not isinstance(entries, list):
        return entries, 0
    redacted, count = [], 0
    for entry in entries:
        if (
            isinstance(entry, dict)
            and entry.get("user_id") == user_id
            and entry.get("tenant", tenant_name) == tenant_name
        ):
            redacted.append(
                {**{k: entry[k] for k in FORGOTTEN_KEYS if k in entry}, "forgotten": True}
            )
            count += 1
        else:
            redacted.append(entry)
    return redacted, count


# (tenant_id, user_id) -> {model label: rows redacted}
Redactor = Callable[[int, str], dict[str, int]]
_redactors: list[Redactor] = []


def register_redactor(redactor: Redactor) -> None:
    """Redact a user's words from a table of another app on forget (idempotent: ready() may run
    more than once in tests)."""
    if redactor not in _redactors:
        _redactors.append(redactor)


def redactors() -> list[Redactor]:
    """The registered redactors, in the order they were registered."""
    return list(_redactors)


def forget_user(*, tenant_id: int, user_id: str) -> dict[str, int]:
    """Delete everything of `user_id` in the tenant. Returns {model label: rows deleted}."""
    return forget_user_report(tenant_id=tenant_id, user_id=user_id)["deleted"]


@transaction.atomic
def forget_user_report(*, tenant_id: int, user_id: str) -> dict[str, dict[str, int]]:
    """Delete everything of `user_id` in the tenant and redact their words where other rows copied
    them. Returns {"deleted": {model label: rows deleted}, "redacted": {model label: rows
    redacted}}."""
    if not user_id:
        raise ValueError("user_id must not be empty: it would match every row without a user")
    counts: Counter[str] = Counter()
    with pgtrigger.ignore(IMMUTABLE_TRIGGER):
        sessions = list(
            Session.objects.select_for_update().filter(tenant_id=tenant_id, user_id=user_id)
        )
        for session in sessions:
            session_forgotten.send(sender=Session, session=session)
        if sessions:
            _, per_model = Session.objects.filter(pk__in=[s.pk for s in sessions]).delete()
            counts.update(per_model)
        for model in user_owned_models():
            # The base manager: every row, also those a default manager leaves out (a fact's past
            # versions).
            _, per_model = model._base_manager.filter(tenant_id=tenant_id, user_id=user_id).delete()
            counts.update(per_model)
        redacted: Counter[str] = Counter()
        for redactor in redactors():
            redacted.update(redactor(tenant_id, user_id))
        user_forgotten.send(sender=Session, tenant_id=tenant_id, user_id=user_id)
    return {
        "deleted": {label: count for label, count in sorted(counts.items()) if count},
        "redacted": dict(sorted(redacted.items())),
    }  # every table looked at, 0 included
