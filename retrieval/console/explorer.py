"""The memory explorer: tenant → end user (or "shared") → everything they own, with one search
box running the real hybrid search and saying why each result ranked.

    /admin/console/explorer/                         tenants
    /admin/console/explorer/?tenant=1                the tenant's end users (and "shared")
    /admin/console/explorer/?tenant=1&user=alice     alice's memories; &q=… searches them
    /admin/console/explorer/?tenant=1&user=          what no one owns: shared knowledge (notes,
                                                     facts, documents) and the tenant's conversations

A user's search sees their own memories and shared knowledge, never a conversation nobody owns
(the ownership rule of every search); the lists below it show what the user owns.
"""  # noqa: E501

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.db.models import Count
from django.http import HttpRequest, HttpResponse

from accounts.models import Tenant
from memoryhub.errors import DomainError
from memoryhub.searchable import KINDS, TIERS
from retrieval.console import items
from retrieval.console.common import render, tenant_from
from retrieval.console.explain import explained_search
from retrieval.search import MODES, PROFILES, SearchError

KIND_LABELS = {
    "event": "messages",
    "note": "notes",
    "fact": "facts",
    "summary": "summaries",
    "document": "documents",
}


class ExplorerForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=4000,
        label="Search",
        widget=forms.TextInput(
            attrs={"size": 60, "placeholder": "what are you looking for? (meaning or words)"}
        ),
    )
    kinds = forms.MultipleChoiceField(
        choices=[(k, KIND_LABELS[k]) for k in KINDS],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Kind",
    )
    tiers = forms.MultipleChoiceField(
        choices=[(t, t) for t in TIERS],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Scope",
    )
    tags = forms.CharField(
        required=False, max_length=500, help_text="comma-separated; all must be present"
    )
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    source = forms.CharField(required=False, max_length=100, help_text="e.g. agent, extractor, api")
    mode = forms.ChoiceField(choices=[(m, m) for m in MODES], initial="hybrid", required=False)
    profile = forms.ChoiceField(
        choices=[(p, p) for p in PROFILES],
        initial="default",
        required=False,
        help_text="memory: adds recency, importance and use (decayed relevance)",
    )

    def clean_tags(self) -> list[str]:
        return sorted(
            {t.strip().lower() for t in self.cleaned_data["tags"].split(",") if t.strip()}
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            self.add_error("until", "The end date is before the start date.")
        return data


def _tenants_page(request: HttpRequest) -> HttpResponse:
    tenants = Tenant.objects.order_by("name").annotate(n_sessions=Count("sessions", distinct=True))
    return render(
        request, "admin/console/explorer_tenants.html", "Memory explorer", {"tenants": tenants}
    )


def _users_page(request: HttpRequest, tenant: Tenant) -> HttpResponse:
    contains = request.GET.get("find", "").strip()
    return render(
        request,
        "admin/console/explorer_users.html",
        f"Memory of {tenant.name}",
        {
            "tenant": tenant,
            "users": items.end_users(tenant, contains),
            "find": contains,
            "user_limit": items.USER_LIMIT,
        },
    )


def user_label(user: str) -> str:
    return (
        f"end user “{user}”"
        if user
        else "no owner: shared knowledge (notes, facts, documents) and the tenant's conversations"
    )


def explorer_view(request: HttpRequest) -> HttpResponse:
    tenant = tenant_from(request.GET.get("tenant"))
    if tenant is None:
        return _tenants_page(request)
    user = request.GET.get("user")
    if user is None:
        return _users_page(request, tenant)
    form = ExplorerForm(request.GET)
    results: list[Any] | None = None
    lists: list[tuple[str, list[items.Row]]] = []
    error = ""
    if form.is_valid():
        filters = form.cleaned_data
        if filters["q"].strip():
            try:
                results = explained_search(tenant, user, filters)
            except (SearchError, DomainError) as exc:
                error = exc.message
        lists = items.owned_items(tenant, user, filters)
    here = request.get_full_path()
    return render(
        request,
        "admin/console/explorer_user.html",
        f"{tenant.name}: {user_label(user)}",
        {
            # Not "user": the admin's templates show the signed-in operator under that name.
            "tenant": tenant,
            "end_user": user,
            "user_label": user_label(user),
            "form": form,
            "results": results,
            "lists": lists,
            "error": error,
            "here": here,
            "list_limit": items.LIST_LIMIT,
            "users_url": "?" + urlencode({"tenant": tenant.pk}),
        },
    )
