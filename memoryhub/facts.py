"""Facts (docs/memory-model.md#facts): long-term memory entries, upserted per owner on
(scope, category, key) or on an id the client chose (external_id).

A fact without a key or client id is always a new entry; otherwise writing the same identity again
updates the owner's stored fact (its access count and creation time are kept). Two owners never
share a fact: ann's and bob's `home_city` are two rows. A change of content, category or key
closes the current version and opens a new one (FactVersion): history is kept, also after delete.
Every save and delete is announced to retrieval (kind "fact", source id = the fact's id).
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import CharField, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Cast
from django.utils import timezone

from accounts.models import ApiKey
from memoryhub.errors import Conflict, Forbidden, NotFound
from memoryhub.models import Fact, FactVersion, Session
from memoryhub.notes import Placement, apply_meta, importance_by_type, place, split_tags
from memoryhub.ownership import check_owner
from memoryhub.plumbing.listfilters import Rule, narrowed
from memoryhub.sessions import get_session, resolve_user
from memoryhub.signals import memory_deleted, memory_saved

# Fields an upsert (or PATCH) may set; placement fields are fixed by the scope.
WRITABLE = (
    "content",
    "category",
    "key",
    "lifetime",
    "source",
    "importance",
    "tags",
    "metadata",
    "user_id",
    "external_id",
)


def with_chunk_access(qs: QuerySet[Fact]) -> QuerySet[Fact]:
    """Annotate how often the fact was used: the accesses retrieval counted on its current chunks
    (retrieval.ChunkAccess, migration 0013 of retrieval), summed, and the latest of them. This is
    the one source of a fact's figure: the API, the admin, the explorer and `manage.py stats`
    read it (`uses`, `last_used`). The fact row's own access_count and accessed_at columns are
    left from before search counted per chunk: nothing writes them."""
    from django.apps import apps

    try:
        chunk = apps.get_model("retrieval", "Chunk")
    except LookupError:  # retrieval not installed
        return qs
    hits = (
        chunk.objects.filter(
            tenant_id=OuterRef("tenant_id"),
            kind="fact",
            source_id=Cast(OuterRef("pk"), CharField()),
        )
        .order_by()
        .values("source_id")
    )
    return qs.annotate(
        chunk_access_count=Subquery(hits.annotate(n=Sum("access__access_count")).values("n")[:1]),
        chunk_accessed_at=Subquery(hits.annotate(t=Max("access__accessed_at")).values("t")[:1]),
    )


def uses(fact: Fact) -> int:
    """The fact's access count (on a fact from a queryset passed through with_chunk_access)."""
    return int(getattr(fact, "chunk_access_count", None) or 0)


def last_used(fact: Fact) -> datetime | None:
    return getattr(fact, "chunk_accessed_at", None)


def facts_visible_to(key: ApiKey) -> QuerySet[Fact]:
    qs = Fact.objects.visible_to(key).select_related(
        "session", "source_session", "workspace", "channel"
    )
    return with_chunk_access(qs)


def get_fact(key: ApiKey, fact_id: int, *, for_update: bool = False) -> Fact:
    qs = facts_visible_to(key)
    if for_update:
        qs = qs.select_for_update(of=("self",))
    fact = qs.filter(pk=fact_id).first()
    if fact is None:
        raise NotFound("fact_not_found", f"Fact {fact_id} does not exist.")
    return fact


def fact_id_by_external_id(
    key: ApiKey, external_id: str, *, user_id: str | None = None, workspace: str | None = None
) -> int:
    """The id of the one fact the key may see with this client id (narrowed by owner and
    workspace name when given): 404 when none, 409 `ambiguous_external_id` when several owners
    or workspaces use it (name `user_id` and `workspace` to choose)."""
    qs = Fact.objects.visible_to(key).filter(external_id=external_id)
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if workspace is not None:
        qs = (
            qs.filter(workspace__name=workspace) if workspace else qs.filter(workspace__isnull=True)
        )
    ids = list(qs.order_by("pk").values_list("pk", flat=True)[:2])
    if not ids:
        raise NotFound("fact_not_found", f"No fact has external_id {external_id!r}.")
    if len(ids) > 1:
        raise Conflict(
            "ambiguous_external_id",
            f"Several facts have external_id {external_id!r} (of other "
            "users or workspaces): name user_id and workspace to choose one.",
            {"external_id": external_id, "narrow_by": ["user_id", "workspace"]},
        )
    return ids[0]


def announce(fact: Fact) -> None:
    memory_saved.send(sender=Fact, kind="fact", instance=fact)


# --- history (docs/memory-model.md#fact-history) --------------------------------------------------

# A change of any of these is a new version of the fact; other fields (tags, importance, …) change
# the current version in place.
VERSIONED = ("content", "category", "key")


def open_version(
    fact: Fact, *, change: str, at: datetime | None = None, source: str = ""
) -> FactVersion:
    """Close the fact's current version (if any) and open one with its content as it is now;
    `source`: who made the change (default: the fact's source)."""
    at = at or timezone.now()
    close_version(fact, at=at, closed_by="merged" if change == "merged" else "updated")
    fact.valid_from = at
    return FactVersion.objects.create(
        tenant_id=fact.tenant_id,
        fact_id=fact.pk,
        workspace_id=fact.workspace_id,
        user_id=fact.user_id,
        tier=fact.tier,
        category=fact.category,
        key=fact.key,
        content=fact.content,
        source=source or fact.source,
        change=change,
        valid_from=at,
    )


def close_version(fact: Fact, *, at: datetime, closed_by: str) -> int:
    return FactVersion.objects.filter(
        tenant_id=fact.tenant_id, fact_id=fact.pk, valid_to__isnull=True
    ).update(valid_to=at, closed_by=closed_by)


def fact_history(key: ApiKey, fact_id: int) -> list[FactVersion]:
    """Every version of a fact the key may see, oldest first; a deleted fact's too (its versions
    carry its owner and workspace, so the key's limits apply to them as to the fact)."""
    versions = list(
        FactVersion.objects.visible_to(key).filter(fact_id=fact_id).order_by("valid_from", "id")
    )
    if not versions:
        raise NotFound("fact_not_found", f"Fact {fact_id} does not exist.")
    return versions


def _fact_text(q: str) -> Q:
    """A fact's text search: its content, key or category."""
    return Q(content__icontains=q) | Q(key__icontains=q) | Q(category__icontains=q)


VERSION_FILTERS: dict[str, Rule] = {
    "scope": "tier",
    "category": "category",
    "key": "key",
    "user_id": "user_id",
    "q": _fact_text,
}


def versions_as_of(key: ApiKey, as_of: datetime, filters: dict[str, Any]) -> QuerySet[FactVersion]:
    """The fact versions that were true at `as_of` (and recorded by then), newest first."""
    qs = (
        FactVersion.objects.visible_to(key)
        .filter(valid_from__lte=as_of)
        .filter(Q(valid_to__isnull=True) | Q(valid_to__gt=as_of))
    )
    return narrowed(qs, filters, VERSION_FILTERS).order_by("-valid_from", "-id")


def as_they_stood(key: ApiKey, versions: list[FactVersion]) -> list[Fact]:
    """Each version as its fact stood then: the stored fact (when it still exists) with the
    version's content, category, key and validity; a deleted fact rebuilt from its version."""
    stored = {f.pk: f for f in facts_visible_to(key).filter(pk__in=[v.fact_id for v in versions])}
    out = []
    for version in versions:
        fact = stored.get(version.fact_id)
        if fact is None:
            fact = Fact(
                pk=version.fact_id,
                tenant_id=version.tenant_id,
                workspace_id=version.workspace_id,
                user_id=version.user_id,
                tier=version.tier,
                created_at=version.valid_from,
                updated_at=version.valid_from,
            )
        else:
            fact = copy.copy(fact)
        fact.content, fact.category, fact.key = version.content, version.category, version.key
        fact.source, fact.valid_from = version.source, version.valid_from
        fact.version_valid_to = version.valid_to  # type: ignore[attr-defined]
        out.append(fact)
    return out


# --- writes --------------------------------------------------------------------------------------


def _placed(fact: Fact, placement: Placement, source_session: Session | None) -> None:
    fact.tier = placement.tier
    fact.workspace = placement.workspace
    fact.channel = placement.channel
    # Only a conversation-tier fact belongs to (and is forgotten with) its session; otherwise the
    # session it came from is provenance.
    fact.session = placement.session if placement.tier == "conversation" else None
    fact.source_session = source_session or (
        placement.session if placement.tier != "conversation" else None
    )


def _existing(fact: Fact, scope_key: str, also: str | None = None) -> Fact | None:
    """The owner's stored fact this write updates: by the client's id when it gives one, else by
    (scope, category, key). Never another owner's row: the owner is part of both identities. A
    client id names a fact of one owner in one workspace (the one the write is placed in, which
    place() has checked against the key), so an upsert never reaches a row outside the key's
    limits: the same client id in another workspace is another fact. `also`: a second scope key
    whose fact this write updates when none is found at `scope_key` (see upsert_fact)."""
    owned = Fact.objects.select_for_update().filter(tenant_id=fact.tenant_id, user_id=fact.user_id)
    if fact.external_id:
        return owned.filter(workspace_id=fact.workspace_id, external_id=fact.external_id).first()
    if fact.key:
        same = owned.filter(category=fact.category, key=fact.key)
        found = same.filter(scope_key=scope_key).first()
        if found is None and also is not None:
            found = same.filter(scope_key=also).first()
        return found
    return None


def upsert(
    *,
    tenant_id: int,
    placement: Placement,
    data: dict[str, Any],
    given: set[str],
    source_session: Session | None = None,
    also: str | None = None,
) -> tuple[Fact, bool]:
    """Create the fact or, when its owner already has it (same client id, or same scope, category
    and key), update the given fields; a changed content opens a new version
    (docs/memory-model.md#fact-history)."""
    fact = Fact(tenant_id=tenant_id)
    _placed(fact, placement, source_session)
    for name in WRITABLE:
        if name in data and data[name] is not None:
            setattr(fact, name, data[name])
    if data.get("importance") is None:
        fact.importance = importance_by_type([fact.category])
    if not fact.user_id and placement.session is not None:
        fact.user_id = placement.session.user_id
    if placement.user_id:  # a user-limited key writes as its user
        fact.user_id = placement.user_id
    if (
        placement.session is not None
        and placement.session.user_id
        and fact.user_id != placement.session.user_id
    ):
        raise Conflict("owner_mismatch", "The fact's user_id differs from its session's owner.")
    scope_key = fact.compute_scope_key()
    with transaction.atomic():
        for _ in range(2):
            existing = _existing(fact, scope_key, also)
            if existing is not None:
                return _update_existing(existing, data, given, source_session, placement), False
            try:
                with transaction.atomic():
                    fact.valid_from = timezone.now()
                    fact.save()
                    open_version(fact, change="created", at=fact.valid_from)
            except IntegrityError:
                continue  # a concurrent writer created the same key: update it instead
            announce(fact)
            return fact, True
    raise Conflict(
        "fact_exists", "A fact with this scope, category and key is being written concurrently."
    )


def _update_existing(
    existing: Fact,
    data: dict[str, Any],
    given: set[str],
    source_session: Session | None,
    placement: Placement,
) -> Fact:
    before = {name: getattr(existing, name) for name in VERSIONED}
    for name in WRITABLE:
        if name in given and name in data and data[name] is not None:
            setattr(existing, name, data[name])
    if existing.external_id and placement.tier != existing.tier:
        # Upserting by the client's id may change the fact's scope within its workspace (the
        # lookup found it there); it never moves it to another workspace or owner.
        assert placement.workspace_id == existing.workspace_id
        _placed(existing, placement, source_session)
    if source_session is not None:
        existing.source_session = source_session
    if existing.key and (existing.key != before["key"] or existing.category != before["category"]):
        _check_key_free(existing)
    existing.updated_at = timezone.now()
    if any(getattr(existing, name) != value for name, value in before.items()):
        open_version(existing, change="updated", at=existing.updated_at)
    existing.save()
    announce(existing)
    return existing


def _check_key_free(fact: Fact) -> None:
    clash = (
        Fact.objects.filter(
            tenant_id=fact.tenant_id,
            user_id=fact.user_id,
            scope_key=fact.compute_scope_key(),
            category=fact.category,
            key=fact.key,
        )
        .exclude(pk=fact.pk)
        .exists()
    )
    if clash:
        raise Conflict(
            "fact_exists",
            "This owner has another fact of this scope with the same category and key.",
        )


def upsert_fact(key: ApiKey, data: dict[str, Any], given: set[str]) -> tuple[Fact, bool]:
    placement = place(
        key,
        tier=data.get("scope"),
        session=data.get("session"),
        workspace=data.get("workspace"),
        channel=data.get("channel"),
        user_id=data.get("user_id"),
    )
    source_session = (
        get_session(key, data["source_session"]) if data.get("source_session") else None
    )
    if placement.tier == "conversation" and "lifetime" not in given:
        # A conversation's memory lives as long as the conversation
        # (docs/event-log.md#conversation-lifecycle): archiving clears it unless consolidation
        # promoted it to long-term meanwhile.
        data = {**data, "lifetime": "conversation"}
    return upsert(
        tenant_id=key.tenant_id,
        placement=placement,
        data=data,
        given=given,
        source_session=source_session,
        also=_former_default(placement, data),
    )


def _former_default(placement: Placement, data: dict[str, Any]) -> str | None:
    """The scope key a fact written in a session without a scope had before such facts became
    account-wide (they were workspace-wide): the same write updates that fact instead of making a
    second one beside it."""
    if data.get("scope") is not None or placement.session is None or placement.tier != "account":
        return None
    return Fact(tier="workspace", workspace_id=placement.session.workspace_id).compute_scope_key()


def _writable(key: ApiKey, fact: Fact) -> None:
    """A user-limited key reads shared facts but may not change them
    (docs/memory-model.md#sharing)."""
    if key.user_id and not fact.user_id:
        raise Forbidden(
            "shared_read_only",
            "Shared facts (no owner) are read-only to a key limited to one user.",
        )


@transaction.atomic
def update_fact(key: ApiKey, fact_id: int, changes: dict[str, Any]) -> Fact:
    fact = get_fact(key, fact_id, for_update=True)
    _writable(key, fact)
    before = {name: getattr(fact, name) for name in VERSIONED}
    owner = fact.user_id
    if "user_id" in changes:
        changes = {**changes, "user_id": resolve_user(key, changes["user_id"]) or ""}
        if fact.user_id and changes["user_id"] != fact.user_id:
            # An owned fact never changes hands, nor becomes shared (as a session); a shared one
            # may be claimed by a tenant key.
            check_owner(changes["user_id"] or None, fact.user_id, f"Fact {fact.pk}")
            raise Conflict(
                "owner_mismatch", f"Fact {fact.pk} belongs to a user: it cannot be made shared."
            )
    for name in WRITABLE:
        if name in changes:
            setattr(fact, name, changes[name])
    if "external_id" in changes:
        fact.external_id = changes["external_id"]
    if fact.key and ("key" in changes or "category" in changes or fact.user_id != owner):
        _check_key_free(fact)
    if (
        fact.external_id
        and Fact.objects.filter(
            tenant_id=fact.tenant_id,
            user_id=fact.user_id,
            workspace_id=fact.workspace_id,
            external_id=fact.external_id,
        )
        .exclude(pk=fact.pk)
        .exists()
    ):
        raise Conflict(
            "fact_exists", "This owner has another fact with this external_id in this workspace."
        )
    fact.updated_at = timezone.now()
    if any(getattr(fact, name) != value for name, value in before.items()):
        open_version(fact, change="updated", at=fact.updated_at)
    if fact.user_id != owner:  # its history follows it to its new owner
        FactVersion.objects.filter(tenant_id=fact.tenant_id, fact_id=fact.pk).update(
            user_id=fact.user_id
        )
    fact.save()
    announce(fact)
    return fact


@transaction.atomic
def delete_fact(key: ApiKey, fact_id: int) -> None:
    fact = get_fact(key, fact_id, for_update=True)
    _writable(key, fact)
    retire_fact(fact)


def retire_fact(fact: Fact) -> None:
    """Delete the fact, keeping its history (docs/memory-model.md#fact-history): the last version
    is closed as deleted, and its chunks are kept as a past version."""
    at = timezone.now()
    close_version(fact, at=at, closed_by="deleted")
    memory_deleted.send(
        sender=Fact, kind="fact", tenant_id=fact.tenant_id, source_id=str(fact.pk), closed_at=at
    )
    fact.delete()


FACT_FILTERS: dict[str, Rule] = {
    "scope": "tier",
    **{name: name for name in ("category", "key", "lifetime", "source", "user_id", "external_id")},
    "tags": lambda tags: Q(tags__contains=split_tags(tags)),
    "session": lambda session: (
        Q(session__external_id=session) | Q(source_session__external_id=session)
    ),
    "workspace": "workspace__name",
    "channel": "channel__name",
    "q": _fact_text,
}


def facts_filter(key: ApiKey, filters: dict[str, Any], meta: dict[str, Any]) -> QuerySet[Fact]:
    qs = narrowed(facts_visible_to(key), filters, FACT_FILTERS)
    return apply_meta(qs, meta).order_by("-updated_at", "-id")
