"""Deleting a workspace in the admin: the same deletion as DELETE /workspaces/{name}/.

Django's own delete page walks every related row and asks for the delete permission of each model
it meets; chunks, events and sessions are deleted only through the domain (their admins refuse
it), so an operator could never delete a workspace ("permission to delete chunk"). The page here
shows the counts of a dry run of memoryhub.workspaces.delete_workspace instead, and deleting
calls it."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

import accounts.admin  # registers Workspace first: this module replaces its admin
from accounts.models import Workspace
from memoryhub.models import Session
from memoryhub.workspaces import delete_workspace


def _plural(label: str) -> str:
    try:
        return str(apps.get_model(label)._meta.verbose_name_plural)
    except LookupError:
        return label


class WorkspaceAdmin(accounts.admin.WorkspaceAdmin):
    def get_deleted_objects(
        self, objs: Any, request: HttpRequest
    ) -> tuple[list[Any], dict[str, int], set[str], list[Any]]:
        if not request.user.is_superuser:  # staff: Django's checks, model by model
            return super().get_deleted_objects(objs, request)
        workspaces = list(objs)
        protected = [
            f"{w} ({w.tenant}): the tenant keeps an immutable transcript and the workspace has "
            "conversations; forget their users instead"
            for w in workspaces
            if w.tenant.immutable_transcript and Session.objects.filter(workspace=w).exists()
        ]
        if protected:
            return [], {}, set(), protected
        totals: dict[str, int] = {}
        for workspace in workspaces:
            for label, count in delete_workspace(workspace, dry_run=True).items():
                totals[_plural(label)] = totals.get(_plural(label), 0) + count
        shown = [f"Workspace {w.name!r} of {w.tenant} with everything in it" for w in workspaces]
        return shown, dict(sorted(totals.items())), set(), []

    def delete_model(self, request: HttpRequest, obj: Workspace) -> None:
        delete_workspace(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Workspace]) -> None:
        for workspace in queryset.select_related("tenant"):
            delete_workspace(workspace)


admin.site.unregister(Workspace)
admin.site.register(Workspace, WorkspaceAdmin)
