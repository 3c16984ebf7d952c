"""What an end user (or nobody: "shared") owns in a tenant, for the explorer: the end users with
their counts, and per user their facts, notes, documents, sessions and summaries with the filters
the explorer offers (kind, tier, tags, dates, source)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, time
from typing import Any

from django.db.models import Count, Model, QuerySet, Sum
from django.urls import reverse
from django.utils import timezone

from accounts.models import Tenant
from memoryhub.facts import uses as fact_uses
from memoryhub.facts import with_chunk_access
from memoryhub.models import Fact, Note, Session, SummaryNode
from retrieval.admin_helpers import transcript_url
from retrieval.models import Chunk, Document

LIST_LIMIT = 50
USER_LIMIT = 500
OWNED_MODELS: dict[str, type[Model]] = {
    "sessions": Session,
    "facts": Fact,
    "notes": Note,
    "documents": Document,
    "summaries": SummaryNode,
}


def end_users(tenant: Tenant, contains: str = "") -> list[dict[str, Any]]:
    """The tenant's end users (every user id that owns something), with what each owns; "" is
    "shared" (memories that belong to no one). One grouped query per kind of memory."""
    users: dict[str, dict[str, Any]] = {}
    for name, model in OWNED_MODELS.items():
        qs = model.objects.filter(tenant=tenant)
        if contains:
            qs = qs.filter(user_id__icontains=contains)
        for user_id, n in (
            qs.order_by().values("user_id").annotate(n=Count("pk")).values_list("user_id", "n")
        ):
            users.setdefault(user_id, {"user_id": user_id})[name] = n
    rows = sorted(users.values(), key=lambda r: (r["user_id"] != "", r["user_id"]))
    return rows[:USER_LIMIT]


@dataclass
class Row:
    """One owned memory as the explorer lists it."""

    kind: str
    text: str
    when: datetime
    admin_url: str
    tier: str = ""
    tags: list[str] = field(default_factory=list)
    source: str = ""
    pinned: bool = False
    importance: float | None = None
    chunk_ids: list[int] = field(default_factory=list)
    extra: str = ""
    read_url: str = ""
    uses: int | None = None  # how often search returned it (its chunks' ChunkAccess rows, summed)
    owner: str = ""


def _dates(qs: QuerySet[Any], field_name: str, filters: dict[str, Any]) -> QuerySet[Any]:
    if filters.get("since"):
        qs = qs.filter(
            **{
                f"{field_name}__gte": timezone.make_aware(
                    datetime.combine(filters["since"], time.min)
                )
            }
        )
    if filters.get("until"):
        qs = qs.filter(
            **{
                f"{field_name}__lt": timezone.make_aware(
                    datetime.combine(filters["until"], time.max)
                )
            }
        )
    return qs


def _memory_filters(
    qs: QuerySet[Any], filters: dict[str, Any], *, tags: bool = True, source: bool = True
) -> QuerySet[Any]:
    if filters.get("tiers"):
        qs = qs.filter(tier__in=filters["tiers"])
    if tags and filters.get("tags"):
        qs = qs.filter(tags__contains=list(filters["tags"]))
    if source and filters.get("source"):
        qs = qs.filter(source=filters["source"])
    return _dates(qs, "updated_at" if hasattr(qs.model, "updated_at") else "created_at", filters)


def _chunk_ids(tenant: Tenant, kind: str, source_ids: list[str]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for pk, source_id in Chunk.objects.filter(
        tenant=tenant, kind=kind, source_id__in=source_ids
    ).values_list("pk", "source_id"):
        found.setdefault(source_id, []).append(pk)
    return found


def _uses(tenant: Tenant, kind: str, source_ids: list[str]) -> dict[str, int]:
    """Per memory: its current chunks' accesses summed (what memoryhub.facts.with_chunk_access
    reads for a fact)."""
    return dict(
        Chunk.objects.filter(tenant=tenant, kind=kind, source_id__in=source_ids)
        .order_by()
        .values("source_id")
        .annotate(n=Sum("access__access_count"))
        .values_list("source_id", "n")
    )


def _facts(tenant: Tenant, user: str, filters: dict[str, Any]) -> list[Row]:
    qs = with_chunk_access(Fact.objects.filter(tenant=tenant, user_id=user))
    facts = list(_memory_filters(qs, filters)[:LIST_LIMIT])
    chunks = _chunk_ids(tenant, "fact", [str(f.pk) for f in facts])
    return [
        Row(
            "fact",
            f.content,
            f.updated_at,
            reverse("admin:memoryhub_fact_change", args=[f.pk]),
            f.tier,
            list(f.tags),
            f.source,
            f.pinned,
            f.importance,
            chunks.get(str(f.pk), []),
            extra=f"{f.category}/{f.key}" if f.key else f.category,
            uses=fact_uses(f),
            owner=f.user_id,
        )
        for f in facts
    ]


def _notes(tenant: Tenant, user: str, filters: dict[str, Any]) -> list[Row]:
    notes = list(
        _memory_filters(Note.objects.filter(tenant=tenant, user_id=user), filters)[:LIST_LIMIT]
    )
    chunks = _chunk_ids(tenant, "note", [n.note_id for n in notes])
    uses = _uses(tenant, "note", [n.note_id for n in notes])
    return [
        Row(
            "note",
            n.content,
            n.updated_at,
            reverse("admin:memoryhub_note_change", args=[n.pk]),
            n.tier,
            list(n.tags),
            n.source,
            n.pinned,
            n.importance,
            chunks.get(n.note_id, []),
            uses=int(uses.get(n.note_id) or 0),
            owner=n.user_id,
        )
        for n in notes
    ]


def _summaries(tenant: Tenant, user: str, filters: dict[str, Any]) -> list[Row]:
    qs = _dates(
        SummaryNode.objects.filter(tenant=tenant, user_id=user).select_related("session"),
        "created_at",
        filters,
    ).order_by("-created_at")
    nodes = list(qs[:LIST_LIMIT])
    chunks = _chunk_ids(tenant, "summary", [str(n.pk) for n in nodes])
    return [
        Row(
            "summary",
            n.text,
            n.created_at,
            reverse("admin:memoryhub_summarynode_change", args=[n.pk]),
            "conversation",
            chunk_ids=chunks.get(str(n.pk), []),
            extra=(
                f"{n.level} of {n.session.external_id}, messages"
                f" #{n.sequence_start}–#{n.sequence_end}"
            ),
            read_url=transcript_url(n.session_id),
        )
        for n in nodes
    ]


def _documents(tenant: Tenant, user: str, filters: dict[str, Any]) -> list[Row]:
    docs = list(
        _dates(
            Document.objects.filter(tenant=tenant, user_id=user), "updated_at", filters
        ).order_by("-updated_at")[:LIST_LIMIT]
    )
    chunks = _chunk_ids(tenant, "document", [d.source_id for d in docs])
    return [
        Row(
            "document",
            d.source_uri,
            d.updated_at,
            reverse("admin:retrieval_document_change", args=[d.pk]),
            chunk_ids=chunks.get(d.source_id, []),
            extra=f"{d.chunk_count} chunks",
        )
        for d in docs
    ]


def _sessions(tenant: Tenant, user: str, filters: dict[str, Any]) -> list[Row]:
    qs = _dates(
        Session.objects.filter(tenant=tenant, user_id=user).select_related("workspace", "channel"),
        "updated_at",
        filters,
    )
    return [
        Row(
            "session",
            s.title or s.external_id,
            s.updated_at,
            reverse("admin:memoryhub_session_change", args=[s.pk]),
            extra=(
                f"{s.external_id} · {s.event_count} messages · {s.workspace.name}/{s.channel.name}"
                f" · {s.status}"
            ),
            read_url=transcript_url(s.pk),
        )
        for s in qs.order_by("-updated_at")[:LIST_LIMIT]
    ]


LISTS = {
    "fact": _facts,
    "note": _notes,
    "document": _documents,
    "summary": _summaries,
    "event": _sessions,
}
TITLES = {
    "fact": "Facts",
    "note": "Notes",
    "document": "Documents",
    "summary": "Summaries",
    "event": "Sessions (conversations)",
}


def owned_items(tenant: Tenant, user: str, filters: dict[str, Any]) -> list[tuple[str, list[Row]]]:
    """Per kind asked for (all when none): (title, rows), at most LIST_LIMIT rows each."""
    kinds = list(filters.get("kinds") or []) or list(LISTS)
    return [(TITLES[k], LISTS[k](tenant, user, filters)) for k in LISTS if k in kinds]
