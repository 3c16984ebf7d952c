"""DELETE /workspaces/{workspace}/: delete a workspace with all its memory
(docs/memory-model.md#workspace-deletion), or preview it."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api import examples as ex
from memoryhub.api.common import api_key, query_params
from memoryhub.errors import Forbidden, NotFound
from memoryhub.sessions import resolve_workspace
from memoryhub.workspaces import delete_workspace


class DeleteParams(serializers.Serializer):
    dry_run = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: delete nothing, answer what would be deleted.",
    )


class WorkspaceDetailView(APIView):
    required_scope = "admin"

    @extend_schema(
        summary="Delete a workspace",
        parameters=[
            OpenApiParameter(
                "workspace",
                str,
                OpenApiParameter.PATH,
                description="The workspace's name (as sessions, notes and facts name it).",
            ),
            OpenApiParameter(
                "dry_run",
                bool,
                required=False,
                description="true: delete nothing and answer the counts a deletion would have.",
            ),
        ],
        responses={
            200: inline_serializer(
                "DeletedWorkspace",
                {
                    "workspace": serializers.CharField(help_text="The workspace."),
                    "dry_run": serializers.BooleanField(
                        help_text="True when nothing was deleted (a preview)."
                    ),
                    "deleted": serializers.DictField(
                        child=serializers.IntegerField(),
                        help_text="Rows deleted (or that would be), by model.",
                    ),
                    "total": serializers.IntegerField(help_text="Rows deleted in all."),
                },
            )
        },
        description=(
            "Delete the workspace and everything in it in one transaction: its channels, sessions"
            " and their events, notes, facts with their history, summaries, scratchpads, documents,"
            " search chunks (superseded ones too), schedules and their runs, API keys limited to"
            " it, archived memories. Needs the admin scope; a key limited to one user never may; a"
            " key limited to a workspace may delete only that one. `?dry_run=true` previews the"
            " counts. A tenant with an immutable transcript cannot delete a workspace that has"
            " conversations (409 immutable_transcript)."
        ),
        examples=ex.WORKSPACE_DELETE,
    )
    def delete(self, request: Request, workspace: str) -> Response:
        key = api_key(request)
        if key.user_id:
            raise Forbidden(
                "user_limited_key", "Deleting a workspace needs a key not limited to one user."
            )
        dry_run = query_params(request, DeleteParams)["dry_run"]
        found = resolve_workspace(key, workspace, create=False)
        if found is None:
            raise NotFound("workspace_not_found", f"Workspace {workspace!r} does not exist.")
        deleted = delete_workspace(found, dry_run=dry_run)
        return Response(
            {
                "workspace": found.name,
                "dry_run": dry_run,
                "deleted": deleted,
                "total": sum(deleted.values()),
            }
        )
