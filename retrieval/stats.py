"""Memory statistics of one tenant (S4 stats, seed 002 memory_stats)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models import Count, F, IntegerField, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce

from accounts.models import ApiKey, Tenant
from memoryhub.models import Event, RollingSummary, Session
from memoryhub.tasks import queue_counts
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


def _model(app_label: str, model_name: str) -> Any:
    """Another app's model, or None while that app does not have it (apps land independently)."""
    try:
        return apps.get_model(app_label, model_name)
    except LookupError:
        return None


def _scoped(model: Any, tenant_id: int, workspace_id: int | None) -> Any:
    qs = model.objects.filter(tenant_id=tenant_id)
    if workspace_id is not None and any(f.name == "workspace" for f in model._meta.get_fields()):
        qs = qs.filter(workspace_id=workspace_id)
    return qs


def _summary_stats(tenant_id: int, workspace_id: int | None) -> dict[str, Any]:
    model = _model("memoryhub", "SummaryNode")
    if model is None:
        return {}
    row = _scoped(model, tenant_id, workspace_id).aggregate(n=Count("id"), depth=Max("depth"))
    # Levels of the deepest tree: 1 with leaves only, 3 with leaves, branches and a root.
    return {"summaries": row["n"], "summary_tree_depth": 0 if row["depth"] is None else row["depth"] + 1}


def _schedule_stats(tenant_id: int, workspace_id: int | None) -> dict[str, Any]:
    model = _model("scheduling", "Schedule")
    if model is None:
        return {}
    qs = _scoped(model, tenant_id, workspace_id)
    health: dict[str, Any] = {"total": qs.count()}
    fields = {f.name for f in model._meta.get_fields()}
    if "status" in fields:
        health["by_status"] = dict(qs.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    if "consecutive_failures" in fields:
        health["failing"] = qs.filter(consecutive_failures__gt=0).count()
    return {"schedules": health}


def tenant_stats(key: ApiKey) -> dict[str, Any]:
    """The stats an API key may see: its tenant's, or its workspace's when the key is limited."""
    return memory_stats(key.tenant, workspace_id=key.workspace_id)


def memory_stats(tenant: Tenant, *, workspace_id: int | None = None, cluster_queue: bool = False) -> dict[str, Any]:
    """With `cluster_queue` (operators only) the task cluster's own figures too: they cover every
    tenant, so an API key never sees them."""
    stats: dict[str, Any] = {"tenant": tenant.name, **_session_stats(tenant.pk, workspace_id),
                             "chunks": _chunk_stats(tenant.pk, workspace_id)}
    stats["documents"] = _scoped(Document, tenant.pk, workspace_id).count()
    for label, name in {"notes": "Note", "facts": "Fact"}.items():
        model = _model("memoryhub", name)
        if model is not None:
            stats[label] = _scoped(model, tenant.pk, workspace_id).count()
    stats.update(_summary_stats(tenant.pk, workspace_id))
    stats.update(_schedule_stats(tenant.pk, workspace_id))
    stats["queue"] = {"pending_embeddings": stats["chunks"]["pending_embedding"]}
    if cluster_queue:
        queue = queue_counts()
        stats["queue"].update(queued_tasks=queue["queued"], failed_tasks=queue["failed_total"])
    return stats


def events_for_browse(key: ApiKey) -> Any:
    return Event.objects.visible_to(key).select_related("session", "session__channel")
