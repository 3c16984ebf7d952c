"""Domain functions for sessions and the event log (SPEC S2)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiKey, Channel, Workspace
from memoryhub import conversations, recent
from memoryhub.errors import Conflict, Forbidden, Invalid, NotFound, TooLarge
from memoryhub.models import (
    SESSION_ID_REGEX,
    Event,
    Session,
    SessionStatus,
    SummaryNode,
)
from memoryhub.ownership import check_owner
from memoryhub.plumbing import background, rows
from memoryhub.signals import events_appended, session_forgotten, session_owner_changed

logger = logging.getLogger(__name__)

# The most events one append may carry (413 too_many_events past it), and the most characters of
# an event's content (400): a message, not a document (POST /documents/ takes those).
MAX_BULK_EVENTS = 1000
MAX_CONTENT_CHARS = 200_000
# The importance of an event the client gives none for, by its role.
DEFAULT_IMPORTANCE = {"user": 0.5, "assistant": 0.5, "tool": 0.3, "system": 0.1}


# --- placement: which workspace and channel a request may touch ------------------------------


def resolve_workspace(key: ApiKey, name: str | None, *, create: bool = True) -> Workspace | None:
    """The workspace a request names, confined to the key's tenant (and workspace, if limited)."""
    if key.workspace_id is not None:
        if name and name != key.workspace.name:
            raise Forbidden(
                "workspace_forbidden", f"This API key is limited to workspace {key.workspace.name!r}.",
            )
        return key.workspace
    if not name:
        return Workspace.get_default(key.tenant) if create else None
    if create:
        return Workspace.get_named(key.tenant, name)
    return Workspace.objects.filter(tenant_id=key.tenant_id, name=name).first()


def resolve_user(key: ApiKey, user_id: str | None) -> str | None:
    """The end user a request acts for: a user-limited key's own user (naming another is refused),
    otherwise the one given (None: no user named)."""
    if key.user_id:
        if user_id and user_id != key.user_id:
            raise Forbidden("user_forbidden", f"This API key is limited to user {key.user_id!r}.")
        return key.user_id
    return user_id


def get_session(key: ApiKey, session_id: str, *, for_update: bool = False, related: bool = True) -> Session:
    """The session the key may see. `related=False` leaves its workspace and channel unread (an
    append needs their ids only: the join and its two model instances were ~0.45 ms of it)."""
    qs = Session.objects.visible_to(key)
    if related:
        qs = qs.select_related("workspace", "channel")
    if for_update:
        qs = qs.select_for_update(of=("self",))
    session = qs.filter(external_id=session_id).first()
    if session is None:
        raise session_not_found(session_id)
    return session


def session_not_found(session_id: str) -> NotFound:
    """The one answer for a session the key may not see, whether it is missing or another user's
    (or another workspace's): a user-limited key must not learn that someone else's id exists."""
    return NotFound("session_not_found", f"Session {session_id!r} does not exist.")


def get_session_for_write(key: ApiKey, session_id: str, *, lock: bool = True) -> Session:
    """The session (locked, within a transaction) for a write that changes it or what hangs off it
    (scratchpad, summary, deletion). A user-limited key sees only its user's sessions (a session
    nobody owns is the tenant's: session_not_found, as another user's)."""
    return get_session(key, session_id, for_update=lock)


def check_append_owner(key: ApiKey, session: Session, user: str | None) -> None:
    """Events take the session's owner: appending as one user to a session of another (or of no
    one) would file that user's words under someone else's memory. (A user-limited key only finds
    its user's sessions: get_session.)"""
    check_owner(user, session.user_id, f"Session {session.external_id!r}")


# --- sessions ----------------------------------------------------------------------------------


@dataclass
class SessionInput:
    id: str | None = None
    user_id: str = ""
    persistence_key: str = ""
    agent: str = ""
    channel: str | None = None
    workspace: str | None = None
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    summary_budget: int | None = None


def _new_session_id() -> str:
    import uuid

    return f"sess-{uuid.uuid4().hex}"


@transaction.atomic
def create_session(*, key: ApiKey, data: SessionInput, get_or_create: bool = False) -> tuple[Session, bool]:
    """Create a session; an existing id is a conflict unless get_or_create is asked for, and then
    only for a session of the same user (see _existing)."""
    session_id = data.id or _new_session_id()
    user = resolve_user(key, data.user_id)
    # One read decides: checking "visible to the key" and "taken in the tenant" in two statements
    # let a concurrent lazy creation commit between them and turn a get-or-create into a 409.
    existing = Session.objects.filter(tenant_id=key.tenant_id, external_id=session_id).first()
    if existing is not None:
        return _existing(key, existing, user, get_or_create), False
    workspace = resolve_workspace(key, data.workspace)
    assert workspace is not None
    channel = Channel.get_named(workspace, data.channel)
    try:
        with transaction.atomic():
            session = Session.objects.create(
                tenant_id=key.tenant_id, workspace=workspace, channel=channel, external_id=session_id,
                user_id=user or "", persistence_key=data.persistence_key, agent=data.agent,
                title=data.title, metadata=data.metadata, summary_budget=data.summary_budget,
            )
    except IntegrityError:
        # A concurrent request created it between our check and insert.
        winner = Session.objects.filter(tenant_id=key.tenant_id, external_id=session_id).first()
        assert winner is not None
        return _existing(key, winner, user, get_or_create), False
    return session, True


def _existing(key: ApiKey, existing: Session, user: str | None, get_or_create: bool) -> Session:
    """What asking to create a session whose id is taken in the tenant answers."""
    session_id = existing.external_id
    visible = Session.objects.visible_to(key).filter(pk=existing.pk).exists()
    if not visible:
        if key.user_id:
            # Another user's (or workspace's) id: the same 404 a missing session gets, so that a
            # user-limited key cannot tell someone else's conversation from none.
            raise session_not_found(session_id)
        # Same tenant, other workspace: the id is taken, but say nothing about that workspace.
        raise Conflict("session_exists", f"Session {session_id!r} already exists.")
    if not get_or_create:
        raise Conflict("session_exists", f"Session {session_id!r} already exists.")
    if user is not None and user != existing.user_id:
        check_owner(user, existing.user_id, f"Session {session_id!r}")
    return existing


def get_or_create_session_lazily(*, key: ApiKey, session_id: str, user_id: str | None = None) -> Session:
    """Appending to an unknown session creates it (seed 000), in the key's default placement,
    owned by the appending user."""
    if not re.fullmatch(SESSION_ID_REGEX, session_id):
        raise Invalid(
            "invalid_session_id",
            "A session id has 1–200 characters: letters, digits and . _ : @ - (not starting with a symbol).",
        )
    session, _ = create_session(key=key, data=SessionInput(id=session_id, user_id=user_id or ""),
                                get_or_create=True)
    return session


# Status is not among them: it moves through memoryhub.conversations.
UPDATABLE_FIELDS = ("title", "metadata", "agent", "user_id", "persistence_key", "summary_budget")


def _held_rows_of_others(session: Session, user: str) -> str | None:
    """The kind of the first row the session holds (a row deleted with it: a conversation's fact,
    note, document, chunk…) that belongs to a user other than `user`; None when there is none.
    Every installed model with such a link and an owner is asked, so a new kind of memory is
    covered without being listed here."""
    from django.apps import apps
    from django.db.models import CASCADE

    for model in apps.get_models():
        names = {f.name for f in model._meta.concrete_fields}
        if "user_id" not in names:
            continue
        for f in model._meta.concrete_fields:
            if f.is_relation and f.related_model is Session and f.remote_field.on_delete is CASCADE:
                others = model._default_manager.filter(**{f.attname: session.pk}).exclude(user_id="")
                if others.exclude(user_id=user).exists():
                    return str(model._meta.verbose_name)
    return None


def _refuse_claim_over_others(session: Session, user: str) -> None:
    """Claiming a shared session gives it, and everything deleted with it, to `user`: refused
    while it holds another user's rows (forgetting `user` would delete them)."""
    kind = _held_rows_of_others(session, user)
    if kind is not None:
        raise Conflict("owner_mismatch", f"Session {session.external_id!r} holds another user's {kind}: it "
                       f"cannot be given to user {user!r}.", {"user_id": user})


@transaction.atomic
def update_session(*, key: ApiKey, session_id: str, changes: dict[str, Any]) -> Session:
    session = get_session_for_write(key, session_id)
    previous = session.status
    status = changes.get("status")
    if status is not None:
        conversations.check_move(session, status)
    if "user_id" in changes:
        changes = {**changes, "user_id": resolve_user(key, changes["user_id"]) or ""}
        if session.user_id and changes["user_id"] != session.user_id:
            # An unowned session may be claimed; one user's conversation is never handed to
            # another (nor made shared): that would give away what they said.
            raise Conflict("owner_mismatch", f"Session {session_id!r} belongs to another user: its owner "
                                             "cannot be changed.", {"user_id": changes["user_id"]})
        if changes["user_id"] and changes["user_id"] != session.user_id:
            _refuse_claim_over_others(session, changes["user_id"])
    owner_changed = "user_id" in changes and changes["user_id"] != session.user_id
    for name in UPDATABLE_FIELDS:
        if name in changes:
            setattr(session, name, changes[name])
    session.updated_at = timezone.now()
    fields = [*[n for n in UPDATABLE_FIELDS if n in changes], "updated_at"]
    if status is not None:
        fields += conversations.move(session, status, now=session.updated_at)
    session.save(update_fields=fields)
    conversations.after_move(session, previous)
    if owner_changed:
        # What the conversation derived (its summaries, its search chunks) belongs to its new user.
        SummaryNode.objects.filter(session=session).update(user_id=session.user_id)
        session_owner_changed.send(sender=Session, session=session)
    return session


@transaction.atomic
def forget_session(*, key: ApiKey, session_id: str) -> dict[str, int]:
    """Delete a session and everything derived from it, in one transaction."""
    session = get_session_for_write(key, session_id)
    if session.tenant.immutable_transcript:
        raise Conflict(
            "immutable_transcript",
            "This tenant keeps an immutable transcript: sessions can only be removed by forgetting their user.",
        )
    return delete_session(session)


@transaction.atomic
def delete_session(session: Session) -> dict[str, int]:
    """Delete one session row and all that cascades from it; counts per model."""
    session_forgotten.send(sender=Session, session=session)
    _, per_model = session.delete()
    return {label: count for label, count in per_model.items() if count}


# --- events ------------------------------------------------------------------------------------


@dataclass
class EventInput:
    role: str
    content: str = ""
    sequence: int | None = None
    tool_name: str = ""
    tool_args: Any = None
    tool_result: Any = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str = ""
    # The chat-API message as sent, when the fields above cannot give it back (memoryhub.chat).
    message: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    importance: float | None = None
    created_at: datetime | None = None
    idempotency_key: str | None = None
    # The fields the client sent (None: all of them). A resend is compared on these only, so a
    # retry that leaves out a default (metadata {}) is still the same event.
    given: frozenset[str] | None = None


@dataclass
class AppendResult:
    session: Session
    events: list[Event]
    created: int


def _check_batch(items: list[EventInput]) -> None:
    keys = [i.idempotency_key for i in items if i.idempotency_key]
    if len(keys) != len(set(keys)):
        raise Invalid("duplicate_idempotency_key", "Two events in one request share an idempotency_key.")
    if len(items) > MAX_BULK_EVENTS:
        raise TooLarge(
            "too_many_events",
            f"At most {MAX_BULK_EVENTS} events per request.",
        )


def append_events(*, key: ApiKey, session_id: str, items: list[EventInput],
                  user_id: str | None = None) -> AppendResult:
    """Append events atomically; sequences are allocated under a lock on the session row.

    An event whose idempotency_key is already stored is not stored again: the stored one is
    returned, so a retried request is harmless. With a user (`user_id`, or the key's) the session
    must be that user's (a new one becomes theirs): see check_append_owner.
    """
    _check_batch(items)
    user = resolve_user(key, user_id)
    # The lazy creation shares the append's transaction: a refused append leaves no empty session.
    with transaction.atomic():
        session = _lock_session(key, session_id)
        if session is None:
            get_or_create_session_lazily(key=key, session_id=session_id, user_id=user)
            session = get_session(key, session_id, for_update=True, related=False)
        # The locked row carries its owner: the check costs no query.
        check_append_owner(key, session, user)
        result = _append_locked(session, items)
    return result


_SENTINEL = "mh-session-id-placeholder"


@lru_cache(maxsize=1024)
def _lock_statement(tenant_id: int, workspace_id: int | None, user_id: str) -> tuple[str, tuple[Any, ...], int]:
    """The append's locking read of a session the key may see (get_session's, for_update, without
    its workspace and channel), compiled once per key scope: building it through the ORM was half
    a millisecond of every append. The session id's place among the parameters is returned."""
    scope = ApiKey(tenant_id=tenant_id, workspace_id=workspace_id, user_id=user_id)
    qs = Session.objects.visible_to(scope).select_for_update(of=("self",)).filter(external_id=_SENTINEL)
    sql, params = qs.order_by()[:1].query.sql_with_params()
    return sql, tuple(params), list(params).index(_SENTINEL)


_SESSION_COLUMNS = tuple(f.attname for f in Session._meta.concrete_fields)
# What the ORM applies to a column it reads (JSON is read as text and parsed by its field).
_SESSION_CONVERTERS = tuple((i, f) for i, f in enumerate(Session._meta.concrete_fields) if hasattr(f, "from_db_value"))


def _lock_session(key: ApiKey, session_id: str) -> Session | None:
    """get_session(key, session_id, for_update=True, related=False), or None when not found."""
    sql, params, at = _lock_statement(key.tenant_id, key.workspace_id, key.user_id or "")
    values = list(params)
    values[at] = session_id
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for index, column in _SESSION_CONVERTERS:
        values[index] = column.from_db_value(values[index], None, connection)
    return Session.from_db(connection.alias, _SESSION_COLUMNS, values)


def _append_locked(session: Session, items: list[EventInput]) -> AppendResult:
    if session.status == SessionStatus.ARCHIVED:
        raise Conflict("session_archived", f"Session {session.external_id!r} is archived and read-only.")
    keys = [i.idempotency_key for i in items if i.idempotency_key]
    replayed = (
        {e.idempotency_key: e for e in Event.objects.filter(session=session, idempotency_key__in=keys)}
        if keys else {}
    )
    now = timezone.now()
    last = session.last_sequence
    defaults = DEFAULT_IMPORTANCE
    ordered: list[Event] = []
    new: list[Event] = []
    for index, item in enumerate(items):
        if item.idempotency_key and item.idempotency_key in replayed:
            stored = replayed[item.idempotency_key]
            _check_replay(stored, item, index)
            ordered.append(stored)
            continue
        sequence = item.sequence if item.sequence is not None else last + 1
        if sequence <= last:
            raise Conflict(
                "sequence_conflict",
                f"Sequence {sequence} is not greater than the session's last sequence {last}.",
                {"index": index, "sequence": sequence, "last_sequence": last},
            )
        event = Event(
            tenant_id=session.tenant_id, session=session, sequence=sequence, role=item.role,
            content=item.content, tool_name=item.tool_name, tool_args=item.tool_args,
            tool_result=item.tool_result, tool_calls=item.tool_calls, tool_call_id=item.tool_call_id,
            message=item.message, metadata=item.metadata,
            importance=item.importance if item.importance is not None else defaults.get(item.role, 0.5),
            idempotency_key=item.idempotency_key, created_at=item.created_at or now,
        )
        ordered.append(event)
        new.append(event)
        last = sequence
    if new:
        previous_last = session.last_sequence
        session.last_sequence = last
        session.event_count += len(new)
        session.updated_at = now
        fields = ["last_sequence", "event_count", "updated_at"]
        if session.status == SessionStatus.IDLE:  # talking again: the conversation is active
            fields += conversations.move(session, SessionStatus.ACTIVE)
        _write(session, fields, new)
        events_appended.send(sender=Session, session=session, events=new)
        payloads = [e.as_dict() for e in new]
        marked = session.consolidated_to
        transaction.on_commit(lambda: recent.extend(session.pk, previous_last, last, marked, payloads))
    return AppendResult(session=session, events=ordered, created=len(new))


def _write(session: Session, fields: list[str], new: list[Event]) -> None:
    """The new events and the session's counters in one statement (what bulk_create and
    save(update_fields) would write, in one round trip and without building either statement
    through the ORM: memoryhub.plumbing.rows), with the notice that wakes the lanes."""
    if len(new) > rows.SMALL_BATCH:  # a bulk append: the ORM's statements are faster there
        Event.objects.bulk_create(new)
        session.save(update_fields=fields)
        return
    events = rows.rows(Event, new)
    assigned, assigned_params = rows.assignments(session, fields)
    # The lanes' wake-up (memoryhub.receivers' notify_work) travels with it.
    notice, notice_params = background.notify_work_within() or ("NULL", [])
    with connection.cursor() as cursor:
        cursor.execute(
            f"""WITH counters AS (UPDATE {Session._meta.db_table} SET {assigned} WHERE id = %s)
                INSERT INTO {events.table} ({events.columns}) VALUES {events.values}
                RETURNING id, sequence, {notice}""",
            [*assigned_params, session.pk, *events.params, *notice_params],
        )
        ids = {sequence: pk for pk, sequence, _ in cursor.fetchall()}
    for event in new:
        rows.saved(event, ids[event.sequence])


def _check_replay(stored: Event, item: EventInput, index: int) -> None:
    """A retry must resend what it sent: the same key with other content is a client bug (a key
    reused for a new event) that would otherwise silently drop the new event."""
    differs = [
        name for name, sent, kept in (
            ("role", item.role, stored.role), ("content", item.content, stored.content),
            ("tool_name", item.tool_name, stored.tool_name), ("tool_args", item.tool_args, stored.tool_args),
            ("tool_result", item.tool_result, stored.tool_result), ("metadata", item.metadata, stored.metadata),
            ("message", item.message, stored.message),
            ("sequence", item.sequence, stored.sequence), ("importance", item.importance, stored.importance),
            ("created_at", item.created_at, stored.created_at),
        )
        # Fields the retry left out are not compared.
        if (item.given is None or name in item.given)
        and not (sent is None and name in ("sequence", "importance", "created_at")) and sent != kept
    ]
    if differs:
        raise Conflict(
            "idempotency_mismatch",
            f"idempotency_key {item.idempotency_key!r} was used for an event with other content ({', '.join(differs)}).",
            {"index": index, "idempotency_key": item.idempotency_key, "event_id": stored.pk, "fields": differs},
        )


def recent_events(session: Session, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` events (payloads) in chronological order, cached when the window allows."""
    if limit <= recent.WINDOW:
        window = recent.get(session.pk, session.last_sequence, session.consolidated_to)
        if window is None:
            # Only up to the sequence the key names: an append committed since `session` was read
            # must not slip into this entry, or the write-through would add it a second time.
            newest = session.events.filter(sequence__lte=session.last_sequence).order_by("-sequence")[
                : recent.WINDOW
            ]
            window = [e.as_dict() for e in reversed(newest)]
            recent.put(session.pk, session.last_sequence, session.consolidated_to, window)
        return window[-limit:] if limit else []
    return [e.as_dict() for e in reversed(session.events.order_by("-sequence")[:limit])]


def events_page(session: Session, *, after: int | None, before: int | None, limit: int,
                newest: bool = False) -> list[Event]:
    """Events oldest first: above `after`, below `before`, or (`newest`) the newest `limit`."""
    qs = session.events.all()
    if newest:
        return list(reversed(qs.order_by("-sequence")[:limit]))
    if after is not None:
        qs = qs.filter(sequence__gt=after)
    if before is not None:
        qs = qs.filter(sequence__lt=before)
        # Reading backwards from `before`: the newest `limit` below it, returned oldest first.
        if after is None:
            return list(reversed(qs.order_by("-sequence")[:limit]))
    return list(qs.order_by("sequence")[:limit])


def sessions_filter(key: ApiKey, filters: dict[str, Any]) -> Any:
    """Sessions for GET /sessions/. Archived ones are hidden (seed 001) unless asked for: by
    `status=archived`, by `include_archived`, or by looking one up by `ref_code`."""
    qs = Session.objects.visible_to(key).select_related("workspace", "channel")
    if filters.get("ref_code"):
        qs = qs.filter(ref_code=filters["ref_code"])
    elif not filters.get("status") and not filters.get("include_archived"):
        qs = qs.exclude(status=SessionStatus.ARCHIVED)
    if filters.get("workspace"):
        qs = qs.filter(workspace__name=filters["workspace"])
    if filters.get("channel"):
        qs = qs.filter(channel__name=filters["channel"])
    for name in ("agent", "status", "persistence_key", "user_id"):
        if filters.get(name):
            qs = qs.filter(**{name: filters[name]})
    if filters.get("q"):
        qs = qs.filter(Q(title__icontains=filters["q"]) | Q(external_id__icontains=filters["q"]))
    return qs.order_by("-updated_at", "-id")
