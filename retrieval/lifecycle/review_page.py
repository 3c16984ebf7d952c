"""A held deletion reviewed memory by memory: each with its text (a merge: the survivor and the
memory folded into it, side by side) and its own Approve / Reject; or all at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse

from retrieval import decay
from retrieval.admin_helpers import note_pks, source_link
from retrieval.lifecycle import review
from retrieval.lifecycle.models import PendingDeletion
from retrieval.models import Chunk

MAX_SHOWN = 500


@dataclass
class ReviewItem:
    chunk_id: int
    chunk: Chunk | None
    relevance: float | None
    link: tuple[str, str] | None
    decision: str = ""  # "" (still to decide), "approved" or "kept"


def all_ids(pending: PendingDeletion) -> list[int]:
    """Every memory the review held: those still to decide and those decided one by one (deciding
    takes a memory out of chunk_ids; the outcome keeps which were approved and which kept)."""
    outcome = pending.outcome or {}
    decided = [int(i) for i in [*outcome.get("approved_ids", []), *outcome.get("kept_ids", [])]]
    return [*decided, *[int(i) for i in pending.chunk_ids if int(i) not in set(decided)]]


def review_items(pending: PendingDeletion) -> tuple[list[ReviewItem], Chunk | None]:
    """The memories of a review (those still stored, with their relevance and uses now; those
    decided with their decision), and a merge's survivor."""
    outcome = pending.outcome or {}
    approved, kept = (
        {int(i) for i in outcome.get("approved_ids", [])},
        {int(i) for i in outcome.get("kept_ids", [])},
    )
    ids = all_ids(pending)[:MAX_SHOWN]
    # Decided all at once ("Approve all", "Reject all", the list's actions): each memory left had
    # that decision.
    if pending.status == PendingDeletion.Status.APPROVED:
        approved |= set(ids) - kept
    elif pending.status == PendingDeletion.Status.REJECTED:
        kept |= set(ids) - approved
    survivor_id = (pending.payload or {}).get("survivor")
    rows = (
        Chunk.objects.filter(
            tenant_id=pending.tenant_id, pk__in=[*ids, *([survivor_id] if survivor_id else [])]
        )
        .select_related("session")
        .defer("embedding", "search_vector")
        .with_access()
        .annotate(relevance=decay.relevance_expression(table=Chunk._meta.db_table))
    )
    by_id = {c.pk: c for c in rows}
    notes = note_pks(list(by_id.values()))
    items = [
        ReviewItem(
            i,
            by_id.get(i),
            getattr(by_id.get(i), "relevance", None),
            source_link(by_id[i], notes) if i in by_id else None,
            "approved" if i in approved else "kept" if i in kept else "",
        )
        for i in ids
    ]
    return items, by_id.get(survivor_id) if survivor_id else None


def _ids(values: list[str]) -> list[int]:
    return [int(v) for v in values if v.isdigit()]


def decide(request: HttpRequest, pending: PendingDeletion) -> str:
    """Apply the decision the review page posted; returns what happened, in words."""
    by = request.user.get_username()
    if request.POST.get("all") in ("approve", "reject"):
        if request.POST["all"] == "approve":
            outcome = review.approve_pending(pending.pk, by=by)
            return (
                f"Approved: {outcome.get('deleted', 0)} search entries deleted (archived,"
                " restorable)."
            )
        review.reject_pending(pending.pk, by=by)
        return f"Rejected: the {len(pending.chunk_ids)} memories are kept."
    approve, reject = _ids(request.POST.getlist("approve")), _ids(request.POST.getlist("reject"))
    result = review.decide_items(pending.pk, approve=approve, reject=reject, by=by)
    verb = "merged into the survivor" if pending.step == PendingDeletion.Step.MERGE else "deleted"
    return (
        f"{len(approve)} approved ({result['deleted']} search entries {verb}, archived),"
        f" {result['kept']} kept; {result['left']} still to decide."
    )


def review_view(request: HttpRequest, object_id: str) -> HttpResponse:
    pending = get_object_or_404(
        PendingDeletion.objects.select_related("tenant", "report"), pk=object_id
    )
    if request.method == "POST":
        try:
            messages.success(request, decide(request, pending))
        except review.ReviewError as exc:
            messages.error(request, str(exc))
        return HttpResponseRedirect(request.path)
    items, survivor = review_items(pending)
    total = len(all_ids(pending))
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "opts": PendingDeletion._meta,
        "title": (
            f"Review: {pending.get_step_display()} of {total} memor{'y' if total == 1 else 'ies'}"
            f" of {pending.tenant.name}"
        ),
        "pending": pending,
        "items": items,
        "survivor": survivor,
        "more": max(total - MAX_SHOWN, 0),
        "undecided": sum(1 for i in items if not i.decision),
        "survivor_link": source_link(survivor) if survivor else None,
        "report_url": reverse(
            "admin:lifecycle_consolidationreport_change", args=[pending.report_id]
        ),
    }
    return TemplateResponse(request, "admin/lifecycle/pendingdeletion/review.html", context)
