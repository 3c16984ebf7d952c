"""What the console's pages share: the operator's view of a tenant, rendering in the admin frame,
redirects back to where an action started."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.http import url_has_allowed_host_and_scheme

from accounts.models import ApiKey, Tenant


def operator_key(tenant: Tenant) -> ApiKey:
    """An unsaved key of the whole tenant: the console looks at memory exactly as an API request
    with an unrestricted key of that tenant would (scoping, ownership, visibility), through the
    same functions. It is never stored and authenticates nothing."""
    return ApiKey(tenant=tenant, workspace=None, user_id="", scopes=["read"])


def render(
    request: HttpRequest, template: str, title: str, context: dict[str, Any]
) -> HttpResponse:
    return TemplateResponse(
        request, template, {**admin.site.each_context(request), "title": title, **context}
    )


def tenant_from(value: Any) -> Tenant | None:
    text = str(value or "")
    return Tenant.objects.filter(pk=int(text)).first() if text.isdigit() else None


def safe_next(request: HttpRequest, fallback: str) -> str:
    """The page an action was started from (a local URL only), or `fallback`."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback
