"""Context preview: pick a session (or an end user) and a query, see exactly the items and the
Markdown POST /context/ would return, with token counts. Built as ContextView builds it (same
scoping, same assemble_context), so what is shown is what the agent would get."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse

from accounts.models import Tenant
from memoryhub.errors import DomainError
from memoryhub.models import Session
from memoryhub.sessions import get_session
from retrieval.admin_helpers import note_pks, source_link
from retrieval.console.common import operator_key, render
from retrieval.context import DEFAULT_BUDGET, AssembledContext, assemble_context
from retrieval.models import Chunk
from retrieval.scoping import build_search_request
from retrieval.search import SCOPES, SearchError
from retrieval.search.request import MAX_TOP_K

RECENT_SESSIONS = 200


class ContextPreviewForm(forms.Form):
    tenant = forms.ModelChoiceField(Tenant.objects.order_by("name"))
    session = forms.CharField(
        required=False,
        max_length=200,
        help_text="The session's id (its recent messages "
        "come first; its user's memories and shared knowledge are searched).",
    )
    user_id = forms.CharField(
        required=False,
        max_length=200,
        label="End user",
        help_text="Without a session: whose memories (with shared knowledge). Empty: every user's.",
    )
    query = forms.CharField(
        required=False, max_length=4000, widget=forms.TextInput(attrs={"size": 60})
    )
    scope = forms.ChoiceField(
        choices=[("", "as the API defaults")] + [(s, s) for s in SCOPES], required=False
    )
    budget = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=200_000,
        help_text=f"Tokens; empty: the server's default ({DEFAULT_BUDGET}).",
    )
    top_k = forms.IntegerField(required=False, min_value=1, max_value=MAX_TOP_K, initial=10)


def preview(
    tenant: Tenant, data: dict[str, Any]
) -> tuple[AssembledContext, Session | None, str | None]:
    """What POST /context/ returns for these inputs (the same calls as ContextView)."""
    key = operator_key(tenant)
    session = get_session(key, data["session"]) if data.get("session") else None
    req = build_search_request(
        key,
        {
            "query": data.get("query") or "",
            "session": data.get("session") or None,
            "user_id": data.get("user_id") or None,
            # none: the API's default for the same request (scoping)
            "scope": data.get("scope") or None,
            "top_k": data.get("top_k") or 10,
            "tags": [],
            "kinds": [],
        },
    )
    req.counts_as_use = False  # a preview is not a use of what it shows: no reinforcement
    assembled = assemble_context(session=session, req=req, budget=data.get("budget"))
    return assembled, session, req.user_id


def _item_links(assembled: AssembledContext) -> list[tuple[Any, tuple[str, str] | None]]:
    ids = [i.chunk_id for i in assembled.items if i.chunk_id]
    chunks = {c.pk: c for c in Chunk.objects.filter(pk__in=ids).defer("embedding", "search_vector")}
    notes = note_pks(list(chunks.values()))
    return [
        (item, source_link(chunks[item.chunk_id], notes) if item.chunk_id in chunks else None)
        for item in assembled.items
    ]


def context_preview_view(request: HttpRequest) -> HttpResponse:
    form = ContextPreviewForm(request.GET or None)
    context: dict[str, Any] = {"form": form}
    if form.is_valid():
        tenant = form.cleaned_data["tenant"]
        try:
            assembled, session, user = preview(tenant, form.cleaned_data)
        except (DomainError, SearchError) as exc:
            form.add_error(None, exc.message)
        else:
            context.update(
                assembled=assembled,
                rows=_item_links(assembled),
                session=session,
                end_user=user,
                tenant=tenant,
                by_source={
                    s: sum(i.tokens for i in assembled.items if i.source == s)
                    for s in ("critical", "summary", "salient", "relevant", "recent")
                },
            )
    tenant_value = request.GET.get("tenant", "")
    if tenant_value.isdigit():
        context["sessions"] = list(
            Session.objects.filter(tenant_id=int(tenant_value))
            .order_by("-updated_at")
            .values_list("external_id", flat=True)[:RECENT_SESSIONS]
        )
    return render(request, "admin/console/context_preview.html", "Context preview", context)
