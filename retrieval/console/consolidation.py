"""Consolidation with a preview: a dry run first (the same steps, rolled back) says, in text, what
would be promoted, pruned, merged and capped; the operator then runs it for real, or not.
Deletions of a tenant that reviews them (and of every tenant's first destructive run) are held
for review, which the preview says too."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from accounts.models import Tenant
from retrieval.admin_helpers import count_rows
from retrieval.console.common import render
from retrieval.lifecycle import steps
from retrieval.lifecycle.consolidation import run_consolidation
from retrieval.lifecycle.models import PendingDeletion


class ConsolidationForm(forms.Form):
    tenant = forms.ModelChoiceField(Tenant.objects.order_by("name"))


def _held(tenant: Tenant) -> bool:

    first = (
        steps.FIRST_REVIEW
        and not PendingDeletion.objects.filter(tenant=tenant)
        .exclude(status=PendingDeletion.Status.PENDING)
        .exists()
    )
    return bool(tenant.review_deletions or first)


def consolidation_view(request: HttpRequest) -> HttpResponse:
    form = ConsolidationForm(request.POST or request.GET or None)
    if not form.is_valid():
        return render(
            request, "admin/console/consolidation.html", "Consolidate memory", {"form": form}
        )
    tenant = form.cleaned_data["tenant"]
    if request.method == "POST" and request.POST.get("run") == "yes":
        result = run_consolidation(tenant_id=tenant.pk)
        held = result["counts"].get("held_for_review", 0)
        messages.success(
            request,
            f"Consolidated {tenant.name}: {result['counts'].get('promoted', 0)} promoted,"
            f" {result['counts'].get('pruned', 0)} pruned, {result['counts'].get('merged', 0)}"
            " merged" + (f"; {held} deletions wait for your review." if held else "."),
        )
        return redirect(
            reverse("admin:lifecycle_consolidationreport_change", args=[result["report_id"]])
        )
    preview = run_consolidation(tenant_id=tenant.pk, dry_run=True)
    return render(
        request,
        "admin/console/consolidation.html",
        f"Consolidate {tenant.name}: preview",
        {
            "form": form,
            "tenant": tenant,
            "preview": preview,
            "counts": count_rows(preview["counts"]),
            "deletions": preview["deletions"],
            "held": _held(tenant),
        },
    )
