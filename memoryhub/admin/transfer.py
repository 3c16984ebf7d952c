"""Import and export of memory in the admin (docs/memory-model.md#export-and-import): the same JSON
files as the API and commands.

Superusers only: an export holds a whole tenant's conversations (or all of one end user's: the
End users page offers hers beside "forget", through `export_download`).
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import Tenant, Workspace
from memoryhub.errors import DomainError
from memoryhub.models import Session
from memoryhub.transfer import (
    ExportScope,
    export_memory,
    import_memory,
    parse_export_file,
)


class ExportForm(forms.Form):
    tenant = forms.ModelChoiceField(Tenant.objects.order_by("name"))
    scope = forms.ChoiceField(
        choices=[
            ("tenant", "the whole tenant"),
            ("workspace", "one workspace"),
            ("session", "one session"),
        ],
        initial="tenant",
    )
    workspace = forms.CharField(required=False, help_text="Workspace name, for a workspace export.")
    session = forms.CharField(required=False, help_text="Session id, for a session export.")

    def clean(self) -> dict:
        data = super().clean()
        tenant, scope = data.get("tenant"), data.get("scope")
        if tenant is None:
            return data
        if scope == "workspace":
            name = (data.get("workspace") or "").strip()
            if not Workspace.objects.filter(tenant=tenant, name=name).exists():
                self.add_error("workspace", f"{tenant.name} has no workspace named {name!r}.")
            data["export_scope"] = ExportScope("workspace", workspace=name)
        elif scope == "session":
            external_id = (data.get("session") or "").strip()
            if not Session.objects.filter(tenant=tenant, external_id=external_id).exists():
                self.add_error("session", f"{tenant.name} has no session {external_id!r}.")
            data["export_scope"] = ExportScope("session", session=external_id)
        else:
            data["export_scope"] = ExportScope("tenant")
        return data


class ImportForm(forms.Form):
    tenant = forms.ModelChoiceField(
        Tenant.objects.order_by("name"), help_text="The tenant the file is imported into."
    )
    file = forms.FileField(
        help_text="A MemoryHub export (JSON). All or nothing: a bad file stores nothing."
    )
    on_conflict = forms.ChoiceField(
        label="Sessions it holds already",
        widget=forms.RadioSelect,
        initial="fail",
        required=False,
        choices=[
            ("fail", "Stop: import nothing if a session of the file exists in the tenant"),
            (
                "skip",
                "Skip them: keep the stored sessions (notes, facts…) as they are, import the rest",
            ),
            (
                "merge",
                "Merge: add the messages, notes, facts and scratchpad items they lack, never twice",
            ),
        ],
        help_text="Importing the same file again with skip or merge changes nothing.",
    )


def check_may_transfer(request: HttpRequest) -> None:
    if not request.user.is_superuser:
        raise PermissionDenied("Only superusers import or export memory.")


def export_download(tenant: Tenant, scope: ExportScope) -> HttpResponse:
    """The export of `scope` as a JSON file to save, named after the tenant, the scope and now."""
    data = export_memory(tenant=tenant, scope=scope)
    named = scope.workspace or scope.session or scope.user or ""
    label = "-".join(slugify(part) for part in (tenant.name, scope.kind, named) if part)
    response = HttpResponse(json.dumps(data, ensure_ascii=False), content_type="application/json")
    response["Content-Disposition"] = (
        f'attachment; filename="memoryhub-{label}-{timezone.now():%Y%m%d-%H%M%S}.json"'
    )
    return response


def transfer_view(request: HttpRequest) -> HttpResponse:
    check_may_transfer(request)
    export_form = ExportForm(
        request.POST if request.POST.get("action") == "export" else None, prefix="export"
    )
    import_form = ImportForm(
        request.POST if request.POST.get("action") == "import" else None,
        request.FILES or None,
        prefix="import",
    )
    if (
        request.method == "POST"
        and request.POST.get("action") == "export"
        and export_form.is_valid()
    ):
        return export_download(
            export_form.cleaned_data["tenant"], export_form.cleaned_data["export_scope"]
        )
    if (
        request.method == "POST"
        and request.POST.get("action") == "import"
        and import_form.is_valid()
    ):
        tenant = import_form.cleaned_data["tenant"]
        try:
            data = parse_export_file(import_form.cleaned_data["file"].read())
            report = import_memory(
                tenant=tenant,
                data=data,
                on_conflict=import_form.cleaned_data["on_conflict"] or "fail",
            )
        except DomainError as exc:
            import_form.add_error("file", f"{exc.code}: {exc.message}")
        else:
            messages.success(request, f"Imported into {tenant.name}: {report.summary()}.")
            return redirect("memoryhub-transfer")
    context = {
        **admin.site.each_context(request),
        "title": "Import and export memory",
        "export_form": export_form,
        "import_form": import_form,
    }
    return TemplateResponse(request, "admin/memoryhub/transfer.html", context)
