"""Domain functions for sessions (docs/event-log.md#append): which workspace, end user and session a
request may touch, and creating, listing, changing and forgetting a conversation. Its events are
memoryhub.event_log."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import ApiKey, Channel, Workspace
from memoryhub import conversations
from memoryhub.errors import Conflict, Forbidden, Invalid, NotFound
from memoryhub.models import SESSION_ID_REGEX, Session, SessionStatus, SummaryNode
from memoryhub.ownership import check_owner
from memoryhub.signals import session_forgotten, session_owner_changed

logger = logging.getLogger(__name__)


# --- placement: which workspace and channel a request may touch ------------------------------


def resolve_workspace(key: ApiKey, name: str | None, *, create: bool = True) -> Workspace | None:
    """The workspace a request names, confined to the key's tenant (and workspace, if limited)."""
    if key.workspace_id is not None:
        if name and name != key.workspace.name:
            raise Forbidden(
                "workspace_forbidden",
                f"This API key is limited to workspace {key.workspace.name!r}.",
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


def get_session(
    key: ApiKey, session_id: str, *, for_update: bool = False, related: bool = True
) -> Session:
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


def get_session_as(key: ApiKey, session_id: str, user_id: str | None) -> Session:
    """The session, read on behalf of `user_id` (or the key's user): with a user, it must be
    theirs, as for an append (409 owner_mismatch for another user's or nobody's conversation), so
    a client acting for one user never reads another's with a tenant-wide key."""
    user = resolve_user(key, user_id)
    session = get_session(key, session_id)
    check_owner(user, session.user_id, f"Session {session_id!r}", acting="read")
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
def create_session(
    *, key: ApiKey, data: SessionInput, get_or_create: bool = False
) -> tuple[Session, bool]:
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
                tenant_id=key.tenant_id,
                workspace=workspace,
                channel=channel,
                external_id=session_id,
                user_id=user or "",
                persistence_key=data.persistence_key,
                agent=data.agent,
                title=data.title,
                metadata=data.metadata,
                summary_budget=data.summary_budget,
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
        # Another user's or another workspace's id: the same 404 a read of that id answers, so that
        # a limited key learns nothing of a session it may not see. (Ids stay unique per tenant:
        # docs/memory-model.md#ids.)
        raise session_not_found(session_id)
    if not get_or_create:
        raise Conflict("session_exists", f"Session {session_id!r} already exists.")
    if user is not None and user != existing.user_id:
        check_owner(user, existing.user_id, f"Session {session_id!r}")
    return existing


def get_or_create_session_lazily(
    *, key: ApiKey, session_id: str, user_id: str | None = None
) -> Session:
    """Appending to an unknown session creates it, in the key's default placement,
    owned by the appending user."""
    if not re.fullmatch(SESSION_ID_REGEX, session_id):
        raise Invalid(
            "invalid_session_id",
            "A session id has 1–200 characters: letters, digits and . _ : @ - (not starting with a"
            " symbol).",
        )
    session, _ = create_session(
        key=key, data=SessionInput(id=session_id, user_id=user_id or ""), get_or_create=True
    )
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
                others = model._default_manager.filter(**{f.attname: session.pk}).exclude(
                    user_id=""
                )
                if others.exclude(user_id=user).exists():
                    return str(model._meta.verbose_name)
    return None


def _refuse_claim_over_others(session: Session, user: str) -> None:
    """Claiming a shared session gives it, and everything deleted with it, to `user`: refused
    while it holds another user's rows (forgetting `user` would delete them)."""
    kind = _held_rows_of_others(session, user)
    if kind is not None:
        raise Conflict(
            "owner_mismatch",
            f"Session {session.external_id!r} holds another user's {kind}: it "
            f"cannot be given to user {user!r}.",
            {"user_id": user},
        )


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
            raise Conflict(
                "owner_mismatch",
                f"Session {session_id!r} belongs to another user: its owner cannot be changed.",
                {"user_id": changes["user_id"]},
            )
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
    check_transcript_removable(session, "sessions")
    return delete_session(session)


def check_transcript_removable(session: Session, what: str) -> None:
    """A tenant with an immutable transcript loses a conversation's events only when their user is
    forgotten (the database refuses any other deletion of them)."""
    if session.tenant.immutable_transcript:
        raise Conflict(
            "immutable_transcript",
            f"This tenant keeps an immutable transcript: {what} can only be removed by forgetting"
            " their user.",
        )


@transaction.atomic
def delete_session(session: Session) -> dict[str, int]:
    """Delete one session row and all that cascades from it; counts per model."""
    session_forgotten.send(sender=Session, session=session)
    _, per_model = session.delete()
    return {label: count for label, count in per_model.items() if count}


def sessions_filter(key: ApiKey, filters: dict[str, Any]) -> Any:
    """Sessions for GET /sessions/. Archived ones are hidden
    (docs/event-log.md#conversation-lifecycle) unless asked for: by `status=archived`, by
    `include_archived`, or by looking one up by `ref_code`."""
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
