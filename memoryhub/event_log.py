"""The event log of a session (docs/event-log.md#append): appending events atomically (sequences,
idempotent retries, a session created on first append), reading them back (the newest, or a page),
and deleting events (the newest ones over the API, any set for the marks of older clients) with
what was derived from them."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from accounts.models import ApiKey
from memoryhub import conversations, recent
from memoryhub.errors import Conflict, Invalid, TooLarge
from memoryhub.models import Event, Fact, RollingSummary, Session, SessionStatus, SummaryNode
from memoryhub.plumbing import background, rows
from memoryhub.sessions import (
    check_append_owner,
    check_transcript_removable,
    get_or_create_session_lazily,
    get_session,
    get_session_for_write,
    resolve_user,
)
from memoryhub.signals import events_appended, events_deleted

# The most events one append may carry (413 too_many_events past it), and the most characters of
# an event's content (400): a message, not a document (POST /documents/ takes those).
MAX_BULK_EVENTS = 1000
MAX_CONTENT_CHARS = 200_000
# The importance of an event the client gives none for, by its role.
DEFAULT_IMPORTANCE = {"user": 0.5, "assistant": 0.5, "tool": 0.3, "system": 0.1}


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
        raise Invalid(
            "duplicate_idempotency_key", "Two events in one request share an idempotency_key."
        )
    if len(items) > MAX_BULK_EVENTS:
        raise TooLarge(
            "too_many_events",
            f"At most {MAX_BULK_EVENTS} events per request.",
        )


def append_events(
    *, key: ApiKey, session_id: str, items: list[EventInput], user_id: str | None = None
) -> AppendResult:
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
def _lock_statement(
    tenant_id: int, workspace_id: int | None, user_id: str
) -> tuple[str, tuple[Any, ...], int]:
    """The append's locking read of a session the key may see (get_session's, for_update, without
    its workspace and channel), compiled once per key scope: building it through the ORM was half
    a millisecond of every append. The session id's place among the parameters is returned."""
    scope = ApiKey(tenant_id=tenant_id, workspace_id=workspace_id, user_id=user_id)
    qs = (
        Session.objects.visible_to(scope)
        .select_for_update(of=("self",))
        .filter(external_id=_SENTINEL)
    )
    sql, params = qs.order_by()[:1].query.sql_with_params()
    return sql, tuple(params), list(params).index(_SENTINEL)


_SESSION_COLUMNS = tuple(f.attname for f in Session._meta.concrete_fields)
# What the ORM applies to a column it reads (JSON is read as text and parsed by its field).
_SESSION_CONVERTERS = tuple(
    (i, f) for i, f in enumerate(Session._meta.concrete_fields) if hasattr(f, "from_db_value")
)


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
        raise Conflict(
            "session_archived", f"Session {session.external_id!r} is archived and read-only."
        )
    keys = [i.idempotency_key for i in items if i.idempotency_key]
    replayed = (
        {
            e.idempotency_key: e
            for e in Event.objects.filter(session=session, idempotency_key__in=keys)
        }
        if keys
        else {}
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
            tenant_id=session.tenant_id,
            session=session,
            sequence=sequence,
            role=item.role,
            content=item.content,
            tool_name=item.tool_name,
            tool_args=item.tool_args,
            tool_result=item.tool_result,
            tool_calls=item.tool_calls,
            tool_call_id=item.tool_call_id,
            message=item.message,
            metadata=item.metadata,
            importance=(
                item.importance if item.importance is not None else defaults.get(item.role, 0.5)
            ),
            idempotency_key=item.idempotency_key,
            created_at=item.created_at or now,
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
        marked, previous = window_version(session), window_version(session, len(new))
        transaction.on_commit(
            lambda: recent.extend(
                session.pk, previous_last, last, marked, payloads, previous_marked=previous
            )
        )
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
        name
        for name, sent, kept in (
            ("role", item.role, stored.role),
            ("content", item.content, stored.content),
            ("tool_name", item.tool_name, stored.tool_name),
            ("tool_args", item.tool_args, stored.tool_args),
            ("tool_result", item.tool_result, stored.tool_result),
            ("metadata", item.metadata, stored.metadata),
            ("message", item.message, stored.message),
            ("sequence", item.sequence, stored.sequence),
            ("importance", item.importance, stored.importance),
            ("created_at", item.created_at, stored.created_at),
        )
        # Fields the retry left out are not compared.
        if (item.given is None or name in item.given)
        and not (sent is None and name in ("sequence", "importance", "created_at"))
        and sent != kept
    ]
    if differs:
        raise Conflict(
            "idempotency_mismatch",
            f"idempotency_key {item.idempotency_key!r} was used for an event with other content"
            f" ({', '.join(differs)}).",
            {
                "index": index,
                "idempotency_key": item.idempotency_key,
                "event_id": stored.pk,
                "fields": differs,
            },
        )


def recent_events(session: Session, limit: int) -> list[dict[str, Any]]:
    """The newest `limit` events (payloads) in chronological order, cached when the window
    allows."""
    if limit <= recent.WINDOW:
        window = recent.get(session.pk, session.last_sequence, window_version(session))
        if window is None:
            # Only up to the sequence the key names: an append committed since `session` was read
            # must not slip into this entry, or the write-through would add it a second time.
            newest = session.events.filter(sequence__lte=session.last_sequence).order_by(
                "-sequence"
            )[: recent.WINDOW]
            window = [e.as_dict() for e in reversed(newest)]
            recent.put(session.pk, session.last_sequence, window_version(session), window)
        return window[-limit:] if limit else []
    return [e.as_dict() for e in reversed(session.events.order_by("-sequence")[:limit])]


def events_page(
    session: Session, *, after: int | None, before: int | None, limit: int, newest: bool = False
) -> list[Event]:
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


def window_version(session: Session, appended: int = 0) -> str:
    """What, besides the last sequence, versions the session's recent window: its consolidation
    watermark and its event count (`appended` fewer: the window before an append), so that
    deleting the newest events moves the key although the last sequence stays."""
    return f"{session.consolidated_to}.{session.event_count - appended}"


@dataclass
class DeleteResult:
    session: Session
    events: list[dict[str, Any]]  # the deleted events' payloads, oldest first
    deleted: dict[str, int]


def delete_newest_events(
    *,
    key: ApiKey,
    session_id: str,
    after: int | None = None,
    newest: int | None = None,
    user_id: str | None = None,
) -> DeleteResult:
    """Delete the session's events above sequence `after`, its `newest` ones at most (neither: all
    of them), with what was derived from them (delete_events): their search chunks, the summaries
    that cover any of them, the facts drawn only from them. Only the newest events go, so no
    remaining event's chunk was embedded with a deleted one as its conversation context. The
    session keeps its last sequence: the next append continues after it. A tenant with an
    immutable transcript keeps its events (409 immutable_transcript); with a user (`user_id`, or
    the key's) the session must be theirs, as for an append."""
    from memoryhub.session_work import wait_for_session

    user = resolve_user(key, user_id)
    with transaction.atomic():
        wait_for_session(get_session(key, session_id, related=False).pk)
        session = get_session_for_write(key, session_id)
        check_append_owner(key, session, user)
        check_transcript_removable(session, "events")
        if session.status == SessionStatus.ARCHIVED:
            raise Conflict(
                "session_archived", f"Session {session.external_id!r} is archived and read-only."
            )
        after = after or 0
        if newest is not None:
            kept = session.events.order_by("-sequence").values_list("sequence", flat=True)[
                newest : newest + 1
            ]
            after = max(after, kept[0] if kept else 0)
        doomed = list(session.events.filter(sequence__gt=after).order_by("sequence"))
        return DeleteResult(
            session=session,
            events=[e.as_dict() for e in doomed],
            deleted=delete_events(session, {e.sequence for e in doomed}),
        )


def delete_events(session: Session, sequences: set[int]) -> dict[str, int]:
    """Delete these events of the session (locked by the caller, its rules checked) with what was
    derived from them: the summaries (tree nodes, the rolling summary) that cover any of them, the
    facts an extractor drew only from them (retired: retire_facts_drawn_from),
    and, through `events_deleted`, their search chunks. Counts per model label."""
    from memoryhub.summaries import delete_node

    if not sequences:
        return {}
    low, ordered = min(sequences), sorted(sequences)
    deleted: dict[str, int] = {}
    nodes = [
        node
        for node in SummaryNode.objects.filter(session=session, sequence_end__gte=low)
        if _covers(ordered, node.sequence_start, node.sequence_end)
    ]
    for node in nodes:
        delete_node(node)
    if nodes:
        deleted[SummaryNode._meta.label] = len(nodes)
    rolled, _ = RollingSummary.objects.filter(session=session, upper_sequence__gte=low).delete()
    if rolled:
        deleted[RollingSummary._meta.label] = rolled
    _, per_model = Event.objects.filter(session=session, sequence__in=ordered).delete()
    deleted.update({label: n for label, n in per_model.items() if n})
    retired = retire_facts_drawn_from(session, low)
    if retired:
        deleted["memoryhub.Fact"] = retired
    for _, counts in events_deleted.send(sender=Session, session=session, after=low - 1):
        deleted.update({label: n for label, n in (counts or {}).items() if n})
    session.event_count -= per_model.get(Event._meta.label, 0)
    session.updated_at = timezone.now()
    session.save(update_fields=["event_count", "updated_at"])
    return deleted


def _covers(ordered: list[int], start: int, end: int) -> bool:
    """Whether a sequence of `ordered` lies in [start, end]."""
    at = bisect_left(ordered, start)
    return at < len(ordered) and ordered[at] <= end


def retire_facts_drawn_from(session: Session, low: int) -> int:
    """Delete (memoryhub.facts.retire_fact) the facts an extractor drew from this session's
    messages at or above sequence `low` of which none remains: what a deletion of messages takes
    with them. An extracted fact records the span of messages it was drawn from (metadata
    "sequences": first, last); a fact with a message of its span still there stays. Returns how
    many went."""
    from memoryhub.facts import retire_fact

    drawn = [
        (fact, *_span(fact))
        for fact in Fact.objects.filter(
            tenant_id=session.tenant_id,
            source_session=session,
            source="extraction",
            metadata__sequences__1__gte=low,
        ).select_for_update()
    ]
    spans = [(fact, first, last) for fact, first, last in drawn if first is not None]
    if not spans:
        return 0
    remaining = list(
        session.events.filter(sequence__gte=min(first for _, first, _ in spans))
        .order_by("sequence")
        .values_list("sequence", flat=True)
    )
    retired = 0
    for fact, first, last in spans:
        at = bisect_left(remaining, first)
        if not (at < len(remaining) and remaining[at] <= last):
            retire_fact(fact)
            retired += 1
    return retired


def _span(fact: Fact) -> tuple[int | None, int]:
    """(first, last) sequence of the messages the fact was drawn from; (None, 0) when the metadata
    does not say (a client may write a fact's metadata)."""
    span = (fact.metadata or {}).get("sequences")
    if not (isinstance(span, list) and len(span) == 2 and all(type(s) is int for s in span)):
        return None, 0
    return span[0], span[1]
