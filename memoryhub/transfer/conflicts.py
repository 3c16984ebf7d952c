"""What an import does with what the importing tenant already holds: `on_conflict`.

    fail   (the default) a session of the file that already exists refuses the whole import
           (409 session_exists, naming it); so does any other row that collides (409 import_conflict).
           Whatever the option, a session or note another workspace holds answers a
           workspace-limited key as a missing one (Importer.check_visible).
    skip   a stored session stays as it is, with everything that hangs off it (its events, rolling
           summary, scratchpad, summaries, the notes and facts of that session); a stored note,
           fact, schedule... stays as it is with its children (a schedule's runs). The rest of the
           file is imported and the report says what was skipped.
    merge  a stored session gets the file's events it does not hold yet, appended after its own:
           an event is held already when its idempotency key, or its (created_at, role, content),
           matches a stored event of that session. Its rolling summary and summary tree stay the
           stored ones (the summariser goes on from the appended events). An archived session is
           read-only: events to append to it refuse the whole import (409 session_archived).
           Records are matched by their identity (a note by note_id, a fact by scope, category and
           key, a scratchpad by its session and its items by key, a schedule by workspace, user and
           name, a run by schedule and due time); stored ones are kept, missing ones added,
           nothing is duplicated.

Importing the same file twice with skip or merge changes nothing the second time. Either way the
whole import is one transaction: a bad file stores nothing.

A model says how a row of it is recognised with `transfer_identity(self) -> dict` (lookups within
the tenant); without it, its unconditional unique constraints or one-to-one link name it, and
failing those the row's whole carried content does. `transfer_keep_stored_for_session = True` on a
model keeps a merged session's stored rows of it (rows derived from the session's events).
"""  # noqa: E501

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import models

from memoryhub.errors import Invalid
from memoryhub.models import Event

ON_CONFLICT = ("fail", "skip", "merge")
LISTED_SESSIONS = 100  # the report names at most this many skipped or merged sessions


def check_on_conflict(value: Any) -> str:
    """The option as given (None, not given: the default), or 400 invalid_on_conflict. An empty
    `?on_conflict=` is refused: a value left out by mistake must not choose `fail` silently."""
    if value is None:
        return "fail"
    if value not in ON_CONFLICT:
        raise Invalid(
            "invalid_on_conflict",
            f"on_conflict must be one of {', '.join(ON_CONFLICT)} (got {str(value)[:40]!r}).",
            {"allowed": list(ON_CONFLICT)},
        )
    return str(value)


@dataclass
class ImportReport:
    """What an import did: rows created, rows left out because the tenant held them, sessions
    merged into (their appended events count under imported["events"])."""

    on_conflict: str
    imported: dict[str, int]
    skipped: dict[str, int] = field(default_factory=dict)
    merged: dict[str, int] = field(default_factory=dict)
    skipped_sessions: list[str] = field(default_factory=list)
    merged_sessions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "on_conflict": self.on_conflict,
            "imported": self.imported,
            "skipped": self.skipped,
            "merged": self.merged,
            "skipped_sessions": self.skipped_sessions[:LISTED_SESSIONS],
            "merged_sessions": self.merged_sessions[:LISTED_SESSIONS],
        }

    def summary(self) -> str:
        """One line for an operator, after "Imported into <tenant>: " (the admin's message)."""

        def words(counts: dict[str, int]) -> str:
            return (
                ", ".join(
                    f"{n} {_singular(kind) if n == 1 else kind}" for kind, n in counts.items()
                )
                or "nothing"
            )

        text = words(self.imported)
        if self.skipped:
            text += f"; skipped (already stored) {words(self.skipped)}"
        if self.merged:
            text += f"; merged into {words(self.merged)}"
        for label, ids in (
            ("skipped sessions", self.skipped_sessions),
            ("merged sessions", self.merged_sessions),
        ):
            if ids:
                more = f" and {len(ids) - 10} more" if len(ids) > 10 else ""
                text += f"; {label}: {', '.join(ids[:10])}{more}"
        return text


def _singular(kind: str) -> str:
    """ "1 sessions" reads wrong: the kinds are plural names (sessions, facts, summaries,
    scratchpad)."""
    if kind.endswith("ies"):
        return kind[:-3] + "y"
    return kind[:-1] if kind.endswith("s") else kind


def counts(counter: Counter[str]) -> dict[str, int]:
    return {k: v for k, v in sorted(counter.items()) if v}


# -- events of a merged session


def event_identities(event: Event) -> list[tuple[Any, ...]]:
    """What makes an event the same as a stored one: its idempotency key, or when and who said
    what."""
    keys: list[tuple[Any, ...]] = [("at", event.created_at, event.role, event.content)]
    if event.idempotency_key:
        keys.append(("key", event.idempotency_key))
    return keys


def split_held(session_id: int, events: list[Event]) -> tuple[list[Event], dict[int, int]]:
    """The file's events the stored session does not hold yet, and file sequence → stored event id
    for those it does (the file itself may repeat an event: kept once)."""
    held: dict[tuple[Any, ...], int] = {}
    stored = Event.objects.filter(session_id=session_id).only(
        "id", "created_at", "role", "content", "idempotency_key"
    )
    for e in stored.iterator():
        for key in event_identities(e):
            held[key] = e.pk
    new: list[Event] = []
    seen: set[tuple[Any, ...]] = set()
    matched: dict[int, int] = {}
    for event in events:
        keys = event_identities(event)
        stored_id = next((held[k] for k in keys if k in held), None)
        if stored_id is not None:
            matched[event.sequence] = stored_id
        elif not seen.intersection(keys):
            seen.update(keys)
            new.append(event)
    return new, matched


# -- records


def stored_row(
    model: type[models.Model], tenant_id: int, kwargs: dict[str, Any]
) -> models.Model | None:
    """The tenant's stored row that this row of the file is (see the module's doc), if any."""
    hook = getattr(model, "transfer_identity", None)
    if callable(hook):
        lookup = hook(model(**kwargs))
    else:
        lookup = _constraint_identity(model, kwargs) or _whole_row(model, kwargs)
    return model._default_manager.filter(tenant_id=tenant_id, **lookup).order_by("pk").first()


def _constraint_identity(
    model: type[models.Model], kwargs: dict[str, Any]
) -> dict[str, Any] | None:
    for constraint in model._meta.constraints:
        if not isinstance(constraint, models.UniqueConstraint) or constraint.condition is not None:
            continue
        names = [
            model._meta.get_field(name).attname for name in constraint.fields if name != "tenant"
        ]
        if names and all(name in kwargs for name in names):
            return {name: kwargs[name] for name in names}
    for f in model._meta.concrete_fields:
        if f.one_to_one and f.attname in kwargs:
            return {f.attname: kwargs[f.attname]}
    return None


def _whole_row(model: type[models.Model], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Every carried value but the times the model stamps itself."""
    lookup: dict[str, Any] = {}
    for f in model._meta.concrete_fields:
        if f.attname not in kwargs or f.name == "tenant" or getattr(f, "auto_now", False):
            continue
        value = kwargs[f.attname]
        lookup[f"{f.attname}__isnull" if value is None else f.attname] = (
            True if value is None else value
        )
    return lookup
