"""Notes (docs/memory-model.md#notes): stored, replaced and deleted by note id; searchable as kind
"note".

Every save announces the note with memory_saved (retrieval replaces all chunks under the same
note id) and every delete with memory_deleted, inside the writing transaction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import ApiKey, Channel, Workspace
from memoryhub.errors import Conflict, Forbidden, Invalid, NotFound
from memoryhub.models import Note, Session, new_note_id
from memoryhub.ownership import check_owner, refuse_shared
from memoryhub.plumbing.listfilters import Rule, given, narrowed
from memoryhub.sessions import get_session, resolve_user, resolve_workspace
from memoryhub.signals import memory_deleted, memory_saved

# Tags of a note or fact: the first MAX_TAGS are kept, each cut to MAX_TAG_CHARS (capped, not
# refused: an agent's tagging never loses the memory). Content of a note, a fact or a rolling
# summary: at most MAX_MEMORY_CHARS characters (400 past it).
MAX_TAGS = 16
MAX_TAG_CHARS = 64
MAX_MEMORY_CHARS = 50_000
# Importance of a note or fact the client gives none for, by its type (a fact's category, a note's
# tags; docs/memory-model.md#importance), and of one of no known type.
IMPORTANCE_BY_TYPE = {"correction": 0.9, "preference": 0.8, "fact": 0.6, "task": 0.5}
DEFAULT_MEMORY_IMPORTANCE = 0.5

# --- placement shared by notes and facts -------------------------------------------------------


@dataclass
class Placement:
    tier: str
    workspace: Workspace | None
    channel: Channel | None
    session: Session | None
    user_id: str = ""  # set for a user-limited key: the memory belongs to that user


def place(
    key: ApiKey,
    *,
    tier: str | None,
    session: str | None,
    workspace: str | None,
    channel: str | None,
    user_id: str | None = None,
) -> Placement:
    """Where a note or fact lives. A session implies its workspace and channel; the tier says how
    widely it applies (default_tier when none is asked for). Raises before anything is created when
    the request does not fit the key."""
    forced_user = resolve_user(key, user_id) if key.user_id else ""
    sess = get_session(key, session) if session else None
    # a user's memory may sit in a shared session, not in another's
    if sess is not None and sess.user_id:
        check_owner(forced_user or user_id or "", sess.user_id, f"Session {sess.external_id!r}")
    if tier is None:
        tier = default_tier(key, session=sess is not None, channel=bool(channel))
    if tier == "conversation" and sess is None:
        raise Invalid("session_required", "A conversation-scoped memory needs a 'session'.")
    if sess is not None:
        if workspace and workspace != sess.workspace.name:
            raise Invalid("scope_mismatch", "'workspace' differs from the session's workspace.")
        if channel and channel != sess.channel.name:
            raise Invalid("scope_mismatch", "'channel' differs from the session's channel.")
    if tier == "account":
        if key.workspace_id is not None:
            raise Forbidden(
                "workspace_forbidden",
                "A key limited to one workspace cannot write account-wide memories.",
            )
        if (workspace or channel) and sess is None:  # a session's own were checked against it above
            raise Invalid("scope_mismatch", "An account-wide memory has no workspace or channel.")
        return Placement("account", None, None, sess, forced_user or "")
    if sess is not None:
        ws, ch = sess.workspace, sess.channel
    else:
        ws = resolve_workspace(key, workspace)
        assert ws is not None
        ch = Channel.get_named(ws, channel) if (channel or tier == "channel") else None
    return Placement(tier, ws, ch, sess, forced_user or "")


def default_tier(key: ApiKey, *, session: bool, channel: bool) -> str:
    """The tier of a memory made without one. Made in a session: long-term, the owner's across all
    their conversations (account; workspace for a key limited to one workspace, which cannot write
    account-wide), never cleared when the conversation ends: a conversation-tier memory is only one
    the caller asks for. Made in a channel: that channel; else the workspace."""
    if session:
        return "workspace" if key.workspace_id is not None else "account"
    return "channel" if channel else "workspace"


def meta_filters(params: Any) -> dict[str, Any]:
    """`meta.<k>=<v>` query parameters as a JSON containment filter on metadata."""
    wanted: dict[str, Any] = {}
    for name, value in params.items():
        if name.startswith("meta.") and len(name) > 5:
            wanted[name[5:]] = value
    return wanted


def apply_meta(qs: QuerySet[Any], wanted: dict[str, Any]) -> QuerySet[Any]:
    for k, v in wanted.items():
        # A value that reads as a JSON number or boolean matches that too (meta.n=3 finds {"n": 3}).
        options: list[Any] = [v]
        if v in ("true", "false"):
            options.append(v == "true")
        else:
            try:
                options.append(int(v))
            except ValueError:
                try:
                    number = float(v)
                except ValueError:
                    number = math.nan
                if math.isfinite(number):  # nan, inf and 1e400 are not JSON numbers: text only
                    options.append(number)
        condition = Q()
        for option in options:
            condition |= Q(metadata__contains={k: option})
        qs = qs.filter(condition)
    return qs


def split_tags(raw: str | None) -> list[str]:
    return [t.strip().lower() for t in (raw or "").split(",") if t.strip()]


def importance_by_type(types: list[str]) -> float:
    """The base importance of a memory of these types when the client gives none
    (docs/memory-model.md#importance: correction 0.9, preference 0.8, fact 0.6, task 0.5;
    IMPORTANCE_BY_TYPE); the highest type named wins, and a memory of no known type gets
    DEFAULT_MEMORY_IMPORTANCE."""
    table = IMPORTANCE_BY_TYPE
    known = [table[t.strip().lower()] for t in types if t and t.strip().lower() in table]
    return max(known) if known else DEFAULT_MEMORY_IMPORTANCE


# --- notes -------------------------------------------------------------------------------------


def notes_visible_to(key: ApiKey) -> QuerySet[Note]:
    return Note.objects.visible_to(key).select_related("session", "workspace", "channel")


def note_not_found(note_id: str) -> NotFound:
    """Missing, or another user's: a user-limited key gets the same answer for both."""
    return NotFound("note_not_found", f"Note {note_id!r} does not exist.")


def get_note(key: ApiKey, note_id: str, *, for_update: bool = False) -> Note:
    qs = notes_visible_to(key)
    if for_update:
        qs = qs.select_for_update(of=("self",))
    note = qs.filter(note_id=note_id).first()
    if note is None:
        raise note_not_found(note_id)
    return note


def _announce(note: Note) -> None:
    memory_saved.send(sender=Note, kind="note", instance=note)


def _id_taken(key: ApiKey, note_id: str) -> Exception:
    """Note ids are unique in the tenant. The key sees the note holding this one: 409; it does
    not (another workspace's, another user's): the 404 a read of that id answers, so that a
    limited key learns nothing of a note it may not see."""
    if not notes_visible_to(key).filter(note_id=note_id).exists():
        return note_not_found(note_id)
    return Conflict(
        "note_exists", f"Note {note_id!r} already exists: PUT /notes/{note_id}/ replaces it."
    )


def _owner(key: ApiKey, data: dict[str, Any], placement: Placement, existing: Note | None) -> str:
    """Whom the note belongs to: the user named (or the key's), else its session's; an existing
    note keeps its owner, and a write for another user is refused (ownership:
    memoryhub.ownership)."""
    user = placement.user_id or data.get("user_id") or ""
    # place() checked they agree
    owner = user or (placement.session.user_id if placement.session else "")
    if existing is None:
        return owner
    refuse_shared(key, existing.user_id, f"Note {existing.note_id!r}")
    check_owner(owner, existing.user_id, f"Note {existing.note_id!r}")
    return existing.user_id


def _fill(note: Note, data: dict[str, Any], placement: Placement, owner: str) -> None:
    note.content = data["content"]
    note.source = data.get("source", "")
    note.tags = data.get("tags", [])
    note.metadata = data.get("metadata", {})
    note.user_id = owner
    given = data.get("importance")
    note.importance = given if given is not None else importance_by_type(note.tags)
    note.tier = placement.tier
    note.workspace = placement.workspace
    note.channel = placement.channel
    note.session = placement.session


@transaction.atomic
def create_note(key: ApiKey, data: dict[str, Any]) -> Note:
    placement = place(
        key,
        tier=data.get("scope"),
        session=data.get("session"),
        workspace=data.get("workspace"),
        channel=data.get("channel"),
        user_id=data.get("user_id"),
    )
    note_id = data.get("note_id") or new_note_id()
    if Note.objects.filter(tenant_id=key.tenant_id, note_id=note_id).exists():
        raise _id_taken(key, note_id)
    note = Note(tenant_id=key.tenant_id, note_id=note_id)
    _fill(note, data, placement, _owner(key, data, placement, None))
    try:
        with transaction.atomic():
            note.save()
    except IntegrityError:
        raise _id_taken(key, note_id) from None
    _announce(note)
    return note


@transaction.atomic
def put_note(key: ApiKey, note_id: str, data: dict[str, Any]) -> tuple[Note, bool]:
    """Replace the note (or create it under this id). Returns (note, created)."""
    existing = notes_visible_to(key).select_for_update(of=("self",)).filter(note_id=note_id).first()
    if existing is None and Note.objects.filter(tenant_id=key.tenant_id, note_id=note_id).exists():
        raise _id_taken(key, note_id)
    placement = place(
        key,
        tier=data.get("scope"),
        session=data.get("session"),
        workspace=data.get("workspace"),
        channel=data.get("channel"),
        user_id=data.get("user_id"),
    )
    owner = _owner(key, data, placement, existing)
    if existing is not None and existing.workspace_id != (
        placement.workspace.pk if placement.workspace else None
    ):
        # A row never changes workspace (nor owner): what another workspace's key saw would vanish.
        raise Conflict(
            "workspace_mismatch",
            f"Note {note_id!r} belongs to another workspace (or to none): a "
            "replacement keeps it where it is; name its workspace, or delete it and create it"
            " anew.",
        )
    note = existing or Note(tenant_id=key.tenant_id, note_id=note_id)
    _fill(note, data, placement, owner)
    note.updated_at = timezone.now()
    note.save()
    _announce(note)
    return note, existing is None


@transaction.atomic
def patch_note(key: ApiKey, note_id: str, changes: dict[str, Any]) -> Note:
    """Change only the given fields; placement, owner and the rest stay (PUT replaces the whole
    note)."""
    note = get_note(key, note_id, for_update=True)
    refuse_shared(key, note.user_id, f"Note {note_id!r}")
    for name in ("content", "source", "tags", "metadata", "importance"):
        if name in changes:
            setattr(note, name, changes[name])
    note.updated_at = timezone.now()
    note.save()
    _announce(note)
    return note


@transaction.atomic
def delete_note(key: ApiKey, note_id: str) -> None:
    note = get_note(key, note_id, for_update=True)
    refuse_shared(key, note.user_id, f"Note {note_id!r}")
    memory_deleted.send(sender=Note, kind="note", tenant_id=note.tenant_id, source_id=note.note_id)
    note.delete()


NOTE_FILTERS: dict[str, Rule] = {
    "tags": lambda tags: Q(tags__contains=split_tags(tags)),
    "source": "source",
    "session": "session__external_id",
    "workspace": "workspace__name",
    "channel": "channel__name",
    "user_id": "user_id",
    "scope": "tier",
    "q": "content__icontains",
}


def notes_filter(key: ApiKey, filters: dict[str, Any], meta: dict[str, Any]) -> QuerySet[Note]:
    qs = narrowed(notes_visible_to(key), filters, NOTE_FILTERS)
    if given(filters.get("for_user")):  # what one user may read: hers and the shared notes
        qs = qs.owned_by(filters["for_user"])
    return apply_meta(qs, meta).order_by("-updated_at", "-id")
