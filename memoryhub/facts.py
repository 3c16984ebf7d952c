"""Facts (S5; seeds 001, 003, 004): long-term memory entries, upserted on (scope, category, key).

A fact without a key is always a new entry; with a key, writing the same (scope, category, key)
again updates the stored fact (its access count and creation time are kept). Every save and
delete is announced to retrieval (kind "fact", source id = the fact's id).
"""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import CharField, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Cast
from django.utils import timezone

from accounts.models import ApiKey
from memoryhub.errors import Conflict, NotFound
from memoryhub.models import Fact, Session
from memoryhub.notes import Placement, apply_meta, importance_by_type, place, split_tags
from memoryhub.sessions import get_session, resolve_user
from memoryhub.signals import memory_deleted, memory_saved

# Fields an upsert (or PATCH) may set; placement fields are fixed by the scope.
WRITABLE = ("content", "category", "key", "lifetime", "source", "importance", "tags", "metadata", "user_id")


def with_chunk_access(qs: QuerySet[Fact]) -> QuerySet[Fact]:
    """Annotate the accesses retrieval counted on the fact's chunks (the "memory" search profile
    counts hits per chunk): the API reports them together with the fact's own counters."""
    from django.apps import apps

    try:
        chunk = apps.get_model("retrieval", "Chunk")
    except LookupError:  # retrieval not installed
        return qs
    hits = (chunk.objects.filter(tenant_id=OuterRef("tenant_id"), kind="fact", source_id=Cast(OuterRef("pk"), CharField()))
            .order_by().values("source_id"))
    return qs.annotate(
        chunk_access_count=Subquery(hits.annotate(n=Sum("access__access_count")).values("n")[:1]),
        chunk_accessed_at=Subquery(hits.annotate(t=Max("access__accessed_at")).values("t")[:1]),
    )


def facts_visible_to(key: ApiKey) -> QuerySet[Fact]:
    qs = Fact.objects.visible_to(key).select_related("session", "source_session", "workspace", "channel")
    return with_chunk_access(qs)


def get_fact(key: ApiKey, fact_id: int, *, for_update: bool = False) -> Fact:
    qs = facts_visible_to(key)
    if for_update:
        qs = qs.select_for_update(of=("self",))
    fact = qs.filter(pk=fact_id).first()
    if fact is None:
        raise NotFound("fact_not_found", f"Fact {fact_id} does not exist.")
    return fact


def announce(fact: Fact) -> None:
    memory_saved.send(sender=Fact, kind="fact", instance=fact)


def _placed(fact: Fact, placement: Placement, source_session: Session | None) -> None:
    fact.tier = placement.tier
    fact.workspace = placement.workspace
    fact.channel = placement.channel
    # Only a conversation-tier fact belongs to (and is forgotten with) its session; otherwise the
    # session it came from is provenance.
    fact.session = placement.session if placement.tier == "conversation" else None
    fact.source_session = source_session or (placement.session if placement.tier != "conversation" else None)


def upsert(*, tenant_id: int, placement: Placement, data: dict[str, Any], given: set[str],
           source_session: Session | None = None) -> tuple[Fact, bool]:
    """Create the fact or, when its key exists in the scope, update the given fields."""
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
    scope_key = fact.compute_scope_key()
    with transaction.atomic():
        for _ in range(2):
            existing = None
            if fact.key:
                existing = (Fact.objects.select_for_update()
                            .filter(tenant_id=tenant_id, scope_key=scope_key, category=fact.category, key=fact.key)
                            .first())
            if existing is not None:
                for name in WRITABLE:
                    if name in given and name in data and data[name] is not None:
                        setattr(existing, name, data[name])
                if source_session is not None:
                    existing.source_session = source_session
                existing.updated_at = timezone.now()
                existing.save()
                announce(existing)
                return existing, False
            try:
                with transaction.atomic():
                    fact.save()
            except IntegrityError:
                continue  # a concurrent writer created the same key: update it instead
            announce(fact)
            return fact, True
    raise Conflict("fact_exists", "A fact with this scope, category and key is being written concurrently.")


def upsert_fact(key: ApiKey, data: dict[str, Any], given: set[str]) -> tuple[Fact, bool]:
    placement = place(key, tier=data.get("scope"), session=data.get("session"),
                      workspace=data.get("workspace"), channel=data.get("channel"),
                      user_id=data.get("user_id"))
    source_session = get_session(key, data["source_session"]) if data.get("source_session") else None
    if placement.tier == "conversation" and "lifetime" not in given:
        # A conversation's memory lives as long as the conversation (seed 001): archiving clears it
        # unless consolidation promoted it to long-term meanwhile.
        data = {**data, "lifetime": "conversation"}
    return upsert(tenant_id=key.tenant_id, placement=placement, data=data, given=given,
                  source_session=source_session)


@transaction.atomic
def update_fact(key: ApiKey, fact_id: int, changes: dict[str, Any]) -> Fact:
    fact = get_fact(key, fact_id, for_update=True)
    if "user_id" in changes:
        changes = {**changes, "user_id": resolve_user(key, changes["user_id"]) or ""}
    for name in WRITABLE:
        if name in changes:
            setattr(fact, name, changes[name])
    if fact.key and ("key" in changes or "category" in changes):
        clash = (Fact.objects.filter(tenant_id=fact.tenant_id, scope_key=fact.compute_scope_key(),
                                     category=fact.category, key=fact.key).exclude(pk=fact.pk).exists())
        if clash:
            raise Conflict("fact_exists", "Another fact of this scope has the same category and key.")
    fact.updated_at = timezone.now()
    fact.save()
    announce(fact)
    return fact


@transaction.atomic
def delete_fact(key: ApiKey, fact_id: int) -> None:
    fact = get_fact(key, fact_id, for_update=True)
    memory_deleted.send(sender=Fact, kind="fact", tenant_id=fact.tenant_id, source_id=str(fact.pk))
    fact.delete()


def facts_filter(key: ApiKey, filters: dict[str, Any], meta: dict[str, Any]) -> QuerySet[Fact]:
    qs = facts_visible_to(key)
    if filters.get("scope"):
        qs = qs.filter(tier=filters["scope"])
    for name in ("category", "key", "lifetime", "source", "user_id"):
        if filters.get(name):
            qs = qs.filter(**{name: filters[name]})
    if filters.get("tags"):
        qs = qs.filter(tags__contains=split_tags(filters["tags"]))
    if filters.get("session"):
        qs = qs.filter(Q(session__external_id=filters["session"]) | Q(source_session__external_id=filters["session"]))
    if filters.get("workspace"):
        qs = qs.filter(workspace__name=filters["workspace"])
    if filters.get("channel"):
        qs = qs.filter(channel__name=filters["channel"])
    if filters.get("q"):
        q = filters["q"]
        qs = qs.filter(Q(content__icontains=q) | Q(key__icontains=q) | Q(category__icontains=q))
    return apply_meta(qs, meta).order_by("-updated_at", "-id")
