"""Memory statistics of one tenant (S4 stats, seed 002 memory_stats)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from accounts.models import ApiKey, Tenant
from memoryhub.models import Event, RollingSummary, Session
from retrieval.embedders import get_embedder
from retrieval.models import Chunk, Document


def _chunk_stats(tenant_id: int, workspace_id: int | None) -> dict[str, Any]:
    qs = Chunk.objects.for_tenant(tenant_id)
    if workspace_id is not None:
        qs = qs.filter(workspace_id=workspace_id)
    model = get_embedder().name
    row = qs.aggregate(
        total=Count("id"),
        embedded=Count("id", filter=Q(embedding__isnull=False, embedding_model=model)),
        errors=Count("id", filter=Q(embedding__isnull=True) & ~Q(embedding_error="")),
    )
    by_kind = dict(qs.values_list("kind").annotate(n=Count("id")).values_list("kind", "n"))
    total = row["total"]
    return {
        "total": total, "embedded": row["embedded"], "pending_embedding": total - row["embedded"],
        "embedding_errors": row["errors"], "by_kind": by_kind,
        "embedding_coverage": round(row["embedded"] / total, 4) if total else 1.0, "embedding_model": model,
    }


def _session_stats(tenant_id: int, workspace_id: int | None) -> dict[str, Any]:
    sessions = Session.objects.for_tenant(tenant_id)
    if workspace_id is not None:
        sessions = sessions.filter(workspace_id=workspace_id)
    upper = RollingSummary.objects.filter(session=OuterRef("pk")).values("upper_sequence")[:1]
    row = sessions.annotate(
        covered=Coalesce(Subquery(upper, output_field=IntegerField()), 0)
    ).aggregate(
        sessions=Count("id"), events=Coalesce(Sum("event_count"), 0),
        by_active=Count("id", filter=Q(status="active")),
        unsummarised=Coalesce(Sum(F("last_sequence") - F("covered")), 0),
    )
    return {"sessions": row["sessions"], "active_sessions": row["by_active"], "events": row["events"],
            "unsummarised_messages": max(row["unsummarised"], 0)}


def _model_count(app_label: str, model_name: str, tenant_id: int) -> int | None:
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        return None
    return model.objects.filter(tenant_id=tenant_id).count()


def _queue_stats() -> dict[str, Any]:
    try:
        queued = apps.get_model("django_q", "OrmQ").objects.count()
        failed = apps.get_model("django_q", "Failure").objects.count()
    except LookupError:  # pragma: no cover - django_q always installed
        return {}
    return {"queued_tasks": queued, "failed_tasks": failed}


def tenant_stats(key: ApiKey) -> dict[str, Any]:
    """The stats an API key may see: its tenant's, or its workspace's when the key is limited."""
    return memory_stats(key.tenant, workspace_id=key.workspace_id)


def memory_stats(tenant: Tenant, *, workspace_id: int | None = None) -> dict[str, Any]:
    stats: dict[str, Any] = {"tenant": tenant.name, **_session_stats(tenant.pk, workspace_id),
                             "chunks": _chunk_stats(tenant.pk, workspace_id)}
    documents = Document.objects.filter(tenant_id=tenant.pk)
    stats["documents"] = (documents.filter(workspace_id=workspace_id) if workspace_id is not None else documents).count()
    for label, (app, model) in {"notes": ("memoryhub", "Note"), "facts": ("memoryhub", "Fact"),
                                "summaries": ("memoryhub", "Summary"), "schedules": ("scheduling", "Schedule")}.items():
        count = _model_count(app, model, tenant.pk)
        if count is not None:
            stats[label] = count
    stats["queue"] = {"pending_embeddings": stats["chunks"]["pending_embedding"], **_queue_stats()}
    return stats


def events_for_browse(key: ApiKey) -> Any:
    qs = Event.objects.for_tenant(key.tenant_id).select_related("session", "session__channel")
    if key.workspace_id is not None:
        qs = qs.filter(session__workspace_id=key.workspace_id)
    return qs
