"""The explorer's actions on a memory: pin, unpin (POST, then back) and forget (a confirmation page
that lists, in text, everything that goes; then POST). Forgetting archives: it can be restored
from "Archived memories"."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from accounts.models import Tenant
from memoryhub.models import Fact, Note, SummaryNode
from retrieval.console.common import render, safe_next, tenant_from
from retrieval.lifecycle.memories import delete_memories, pin_memories, unpin_memories
from retrieval.lifecycle.models import ArchivedMemory
from retrieval.models import Chunk

MAX_IDS = 1000


def _chunk_ids(request: HttpRequest) -> list[int]:
    """Chunk ids from `chunks` (comma-separated, as the explorer's buttons send them)."""
    raw = request.POST.get("chunks") or request.GET.get("chunks") or ""
    return sorted({int(v) for v in raw.split(",") if v.strip().isdigit()})[:MAX_IDS]


def _tenant_and_ids(request: HttpRequest) -> tuple[Tenant | None, list[int]]:
    tenant = tenant_from(request.POST.get("tenant") or request.GET.get("tenant"))
    ids = _chunk_ids(request)
    if tenant is None or not ids:
        return None, []
    # Only this tenant's chunks: an id of another tenant is silently not acted on.
    return tenant, list(
        Chunk.objects.filter(tenant=tenant, pk__in=ids).values_list("pk", flat=True)
    )


@require_POST
def pin_view(request: HttpRequest) -> HttpResponse:
    tenant, ids = _tenant_and_ids(request)
    if tenant is None:
        return HttpResponseBadRequest("Name a tenant and at least one memory.")
    if request.POST.get("op") == "unpin":
        n = unpin_memories(ids)
        messages.success(
            request,
            f"Unpinned {n} memor{'y' if n == 1 else 'ies'}: the importance they had is back.",
        )
    else:
        n = pin_memories(ids)
        messages.success(
            request,
            f"Pinned {n} memor{'y' if n == 1 else 'ies'}: importance 1, long-term, "
            "never pruned, merged or capped.",
        )
    return redirect(safe_next(request, reverse("console-explorer") + f"?tenant={tenant.pk}"))


@dataclass
class Going:
    """One memory a forget removes, as the confirmation page lists it."""

    kind: str
    text: str
    owner: str
    where: str
    chunks: int


SOURCE_ROWS = {
    "note": (Note, "note_id", "content"),
    "fact": (Fact, "pk", "content"),
    "summary": (SummaryNode, "pk", "text"),
}


def what_goes(tenant: Tenant, ids: list[int]) -> list[Going]:
    """Every memory these chunks belong to: a note, fact or summary goes whole (its row and all its
    chunks); a message's or a document's chunk goes alone (the event log is never touched)."""
    chunks = list(
        Chunk.objects.filter(tenant=tenant, pk__in=ids).select_related("session").order_by("pk")
    )
    going: list[Going] = []
    seen: set[tuple[str, str]] = set()
    for chunk in chunks:
        where = chunk.session.external_id if chunk.session_id else chunk.tier
        if chunk.kind in SOURCE_ROWS:
            if (chunk.kind, chunk.source_id) in seen:
                continue
            seen.add((chunk.kind, chunk.source_id))
            model, field_name, text_field = SOURCE_ROWS[chunk.kind]
            value = (
                int(chunk.source_id)
                if field_name == "pk" and chunk.source_id.isdigit()
                else chunk.source_id
            )
            row = model.objects.filter(tenant=tenant, **{field_name: value}).first()
            n = Chunk.objects.filter(
                tenant=tenant, kind=chunk.kind, source_id=chunk.source_id
            ).count()
            going.append(
                Going(
                    f"the {chunk.kind}",
                    getattr(row, text_field) if row else chunk.text,
                    chunk.user_id or "shared",
                    where,
                    n,
                )
            )
        else:
            label = (
                "the search entry of a message (the message stays in its transcript)"
                if chunk.kind == "event"
                else f"a {chunk.kind} chunk"
            )
            going.append(Going(label, chunk.text, chunk.user_id or "shared", where, 1))
    return going


def forget_view(request: HttpRequest) -> HttpResponse:
    tenant, ids = _tenant_and_ids(request)
    if tenant is None:
        return HttpResponseBadRequest("Name a tenant and at least one memory.")
    back = safe_next(request, reverse("console-explorer") + f"?tenant={tenant.pk}")
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        deleted = delete_memories(
            tenant_id=tenant.pk, chunk_ids=ids, reason=ArchivedMemory.Reason.FORGET
        )
        url = (
            reverse("admin:lifecycle_archivedmemory_changelist")
            + f"?reason__exact=forget&tenant__id__exact={tenant.pk}"
        )
        messages.success(
            request,
            format_html(
                'Forgot {} search entr{} of {} memor{}. They are archived: <a href="{}">restore'
                " them from Archived memories</a>.",
                deleted,
                "y" if deleted == 1 else "ies",
                len(ids),
                "y" if len(ids) == 1 else "ies",
                url,
            ),
        )
        return redirect(back)
    return render(
        request,
        "admin/console/forget_confirm.html",
        f"Forget memories of {tenant.name}?",
        {"tenant": tenant, "ids": ids, "going": what_goes(tenant, ids), "next": back},
    )
