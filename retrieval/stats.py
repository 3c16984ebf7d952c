"""Memory statistics of one tenant (sessions, events, chunks by kind)."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import connection
from django.db.models import Count, F, IntegerField, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Coalesce, Greatest

import retrieval.models
from accounts.models import ApiKey, Tenant
from accounts.querysets import owned_by
from memoryhub.models import Event, RollingSummary, Session, SummaryNode
from memoryhub.tasks import queue_counts
from retrieval.embedders import get_embedder
from retrieval.embedding import backlog, embedding_rate
from retrieval.models import Chunk, ChunkAccess, Document, embedding_waiting_q
from retrieval.search.sql import CONVERSATION_KINDS
from retrieval.sentence_vectors import waiting_for_sentences


def _chunks(tenant_id: int, workspace_id: int | None, user_id: str) -> Any:
    qs = Chunk.objects.for_tenant(tenant_id)
    if workspace_id is not None:
        qs = qs.filter(workspace_id=workspace_id)
    if user_id:
        # The user's chunks and shared knowledge's; a conversation nobody owns is not theirs
        # (search's sql.owner_clause spells the same rule).
        qs = qs.filter(Q(user_id=user_id) | (Q(user_id="") & ~Q(kind__in=CONVERSATION_KINDS)))
    return qs


def _chunk_stats(tenant_id: int, workspace_id: int | None, user_id: str) -> dict[str, Any]:
    qs = _chunks(tenant_id, workspace_id, user_id)
    model = get_embedder().name
    row = qs.aggregate(
        total=Count("id"),
        embedded=Count("id", filter=Q(embedding__isnull=False, embedding_model=model)),
        errors=Count("id", filter=Q(embedding__isnull=True) & ~Q(embedding_error="")),
        # What the embed lane will do: its own definition (ChunkQuerySet.embedding_waiting).
        waiting=Count("id", filter=embedding_waiting_q()),
    )
    by_kind = dict(qs.values_list("kind").annotate(n=Count("id")).values_list("kind", "n"))
    total = row["total"]
    return {
        "total": total,
        "embedded": row["embedded"],
        "pending_embedding": row["waiting"],
        "embedding_errors": row["errors"],
        "by_kind": by_kind,
        "embedding_coverage": round(row["embedded"] / total, 4) if total else 1.0,
        "embedding_model": model,
    }


def _session_stats(tenant_id: int, workspace_id: int | None, user_id: str) -> dict[str, Any]:
    """Sessions and events; messages not yet in a summary: of the tree (no leaf covers them: what
    compaction still has to do) and of the rolling summary."""
    sessions = Session.objects.for_tenant(tenant_id)
    if workspace_id is not None:
        sessions = sessions.filter(workspace_id=workspace_id)
    if user_id:
        sessions = sessions.owned_by(user_id)
    upper = RollingSummary.objects.filter(session=OuterRef("pk")).values("upper_sequence")[:1]
    leaves = (
        SummaryNode.objects.filter(session=OuterRef("pk"), level="leaf")
        .order_by("-sequence_end")
        .values("sequence_end")[:1]
    )
    row = sessions.annotate(
        covered=Coalesce(Subquery(upper, output_field=IntegerField()), 0),
        in_tree=Coalesce(Subquery(leaves, output_field=IntegerField()), 0),
    ).aggregate(
        sessions=Count("id"),
        events=Coalesce(Sum("event_count"), 0),
        by_active=Count("id", filter=Q(status="active")),
        rolling=Coalesce(Sum(Greatest(F("last_sequence") - F("covered"), 0)), 0),
        outside_tree=Coalesce(Sum(Greatest(F("last_sequence") - F("in_tree"), 0)), 0),
        backlog=Count("id", filter=Q(last_sequence__gt=F("in_tree"))),
    )
    return {
        "sessions": row["sessions"],
        "active_sessions": row["by_active"],
        "events": row["events"],
        "unsummarised_messages": row["outside_tree"],
        "rolling_unsummarised_messages": row["rolling"],
        "compaction": {"sessions_behind": row["backlog"], "messages_behind": row["outside_tree"]},
    }


def _model(app_label: str, model_name: str) -> Any:
    """Another app's model, or None while that app does not have it (apps land independently)."""
    try:
        return apps.get_model(app_label, model_name)
    except LookupError:
        return None


def _scoped(model: Any, tenant_id: int, workspace_id: int | None, user_id: str = "") -> Any:
    qs = model.objects.filter(tenant_id=tenant_id)
    if workspace_id is not None and any(f.name == "workspace" for f in model._meta.get_fields()):
        qs = qs.filter(workspace_id=workspace_id)
    if user_id:
        qs = qs.filter(owned_by("user_id", user_id))
    return qs


def _summary_stats(tenant_id: int, workspace_id: int | None, user_id: str) -> dict[str, Any]:
    nodes = SummaryNode.objects.filter(tenant_id=tenant_id)
    if workspace_id is not None:
        nodes = nodes.filter(session__workspace_id=workspace_id)
    if user_id:
        nodes = nodes.owned_by(user_id)
    row = nodes.aggregate(n=Count("id"), depth=Max("depth"), last=Max("created_at"))
    # Levels of the deepest tree: 1 with leaves only, 3 with leaves, branches and a root.
    depth = 0 if row["depth"] is None else row["depth"] + 1
    return {"summaries": row["n"], "summary_tree_depth": depth, "last_compaction_at": row["last"]}


def _schedule_stats(tenant_id: int, workspace_id: int | None, user_id: str) -> dict[str, Any]:
    model = _model("scheduling", "Schedule")
    if model is None:
        return {}
    qs = _scoped(model, tenant_id, workspace_id, user_id)
    if hasattr(qs, "acting_within"):  # the schedules the key lists: those acting within its limits
        qs = qs.acting_within(workspace_id=workspace_id, user_id=user_id)
    health: dict[str, Any] = {"total": qs.count()}
    fields = {f.name for f in model._meta.get_fields()}
    if "status" in fields:
        health["by_status"] = dict(
            qs.values_list("status").annotate(n=Count("id")).values_list("status", "n")
        )
    if "consecutive_failures" in fields:
        health["failing"] = qs.filter(consecutive_failures__gt=0).count()
    return {"schedules": health}


def tenant_stats(key: ApiKey) -> dict[str, Any]:
    """The stats an API key may see: its tenant's, or its workspace's when the key is limited, of
    its user's rows and shared knowledge when it is limited to a user (not conversations nobody
    owns)."""
    return memory_stats(key.tenant, workspace_id=key.workspace_id, user_id=key.user_id or "")


def memory_stats(
    tenant: Tenant,
    *,
    workspace_id: int | None = None,
    user_id: str = "",
    cluster_queue: bool = False,
) -> dict[str, Any]:
    """With `cluster_queue` (operators only) the task cluster's own figures too: they cover every
    tenant, so an API key never sees them."""
    stats: dict[str, Any] = {
        "tenant": tenant.name,
        **_session_stats(tenant.pk, workspace_id, user_id),
        "chunks": _chunk_stats(tenant.pk, workspace_id, user_id),
    }
    stats["documents"] = _scoped(Document, tenant.pk, workspace_id, user_id).count()
    for label, name in {"notes": "Note", "facts": "Fact"}.items():
        model = _model("memoryhub", name)
        if model is not None:
            stats[label] = _scoped(model, tenant.pk, workspace_id, user_id).count()
    summary = _summary_stats(tenant.pk, workspace_id, user_id)
    stats["compaction"].update(
        tree_depth=summary["summary_tree_depth"], last_run_at=summary.pop("last_compaction_at")
    )
    stats.update(summary)
    stats.update(_schedule_stats(tenant.pk, workspace_id, user_id))
    limited = workspace_id is not None or bool(user_id)
    backlog_figures = (
        _limited_backlog(tenant.pk, workspace_id, user_id)
        if limited
        else _embedding_backlog(tenant.pk)
    )
    stats["queue"] = {"pending_embeddings": stats["chunks"]["pending_embedding"], **backlog_figures}
    if cluster_queue:
        queue = queue_counts()
        stats["queue"].update(queued_tasks=queue["queued"], failed_tasks=queue["failed_total"])
    return stats


def _embedding_backlog(tenant_id: int) -> dict[str, Any]:
    """The tenant's place in the embed lane's queue: chunks waiting, set aside, when the last one
    will have its vector at the rate the lanes measure (null: no lane has measured one), and the
    chunks searchable by their own vector still waiting for their sentence vectors."""
    rows = backlog(tenant_id=tenant_id)
    mine = (
        rows[0]
        if rows
        else {"waiting": 0, "set_aside": 0, "eta_seconds": 0.0, "sentences_waiting": 0}
    )
    return {
        "embedding_waiting": mine["waiting"],
        "embedding_set_aside": mine["set_aside"],
        "embedding_eta_seconds": mine["eta_seconds"] if mine["waiting"] else 0.0,
        "embedding_rate_per_second": round(embedding_rate(), 2),
        "sentences_waiting": mine["sentences_waiting"],
    }


def _limited_backlog(tenant_id: int, workspace_id: int | None, user_id: str) -> dict[str, Any]:
    """A key limited to a workspace or a user sees the queue of what it may read, and no ETA: the
    lanes serve the tenant as a whole, so the ETA of its last chunk moves with every other user's
    appends (a side channel on their activity)."""
    limit = retrieval.models.EMBED_MAX_ATTEMPTS
    row = (
        _chunks(tenant_id, workspace_id, user_id)
        .filter(embedding__isnull=True)
        .aggregate(
            waiting=Count("id", filter=Q(embedding_attempts__lt=limit)),
            set_aside=Count("id", filter=Q(embedding_attempts__gte=limit)),
        )
    )
    # The lane's own definition of its sentence work, narrowed to what the key may read.
    readable = _chunks(tenant_id, workspace_id, user_id)
    return {
        "embedding_waiting": row["waiting"],
        "embedding_set_aside": row["set_aside"],
        "embedding_eta_seconds": None,
        "embedding_rate_per_second": round(embedding_rate(), 2),
        "sentences_waiting": (readable & waiting_for_sentences()).count(),
    }


def events_for_browse(key: ApiKey) -> Any:
    return Event.objects.visible_to(key).select_related("session", "session__channel")


MOST_USED = 10


def most_used(tenant: Tenant, limit: int = MOST_USED) -> list[dict[str, Any]]:
    """The memories search returned most often (operators' `manage.py stats`): per note, fact,
    summary or document its current chunks' accesses summed (ChunkAccess, the count the API, the
    admin and the explorer show), per message its chunk's."""
    sql = f"""
        SELECT c.kind, CASE WHEN c.kind = 'event' THEN '' ELSE c.source_id END, min(c.id), max(c.user_id),
               sum(a.access_count), max(a.accessed_at)
        FROM {ChunkAccess._meta.db_table} a JOIN {Chunk._meta.db_table} c ON c.id = a.chunk_id
        WHERE c.tenant_id = %s AND c.valid_to IS NULL AND a.access_count > 0
        GROUP BY c.kind, CASE WHEN c.kind = 'event' THEN c.id::text ELSE c.source_id END,
                 CASE WHEN c.kind = 'event' THEN '' ELSE c.source_id END
        ORDER BY 5 DESC, 3 LIMIT %s
    """  # noqa: E501
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant.pk, limit])
        return [
            {
                "kind": kind,
                "id": source_id or None,
                "chunk": chunk,
                "owner": owner,
                "uses": int(uses),
                "last_used": last,
            }
            for kind, source_id, chunk, owner, uses, last in cursor.fetchall()
        ]
