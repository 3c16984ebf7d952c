"""REST views over a tenant's data as a whole: forget a user (S1), export and import (S9)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api.common import StrictSerializer, api_key, parse_input
from memoryhub.errors import Forbidden, Invalid, NotFound
from memoryhub.forget import forget_user
from memoryhub.sessions import get_session, resolve_workspace
from memoryhub.transfer import (
    ON_CONFLICT,
    SCOPES,
    ExportScope,
    check_on_conflict,
    export_memory,
    import_memory,
    parse_export_file,
)


def _tenant_wide(request: Request, what: str) -> None:
    key = api_key(request)
    if key.workspace_id is not None:
        raise Forbidden("workspace_limited_key", f"{what} needs a key not limited to a workspace.")
    if key.user_id:
        raise Forbidden("user_limited_key", f"{what} needs a key not limited to one user.")


class ForgetUserView(APIView):
    required_scope = "admin"

    @extend_schema(
        responses=inline_serializer("ForgottenUser", {
            "user_id": serializers.CharField(), "deleted": serializers.DictField(child=serializers.IntegerField()),
            "total": serializers.IntegerField(),
        }),
        description="Delete every row of this end user in the key's tenant, in one transaction (admin scope).",
    )
    def delete(self, request: Request, user_id: str) -> Response:
        key = api_key(request)
        # A user's rows may live in any workspace: only a tenant-wide key may forget them.
        _tenant_wide(request, "Forgetting a user")
        deleted = forget_user(tenant_id=key.tenant_id, user_id=user_id)
        return Response({"user_id": user_id, "deleted": deleted, "total": sum(deleted.values())})


class ExportInput(StrictSerializer):
    scope = serializers.ChoiceField(choices=SCOPES, required=False, default=None)
    workspace = serializers.CharField(max_length=100, required=False)
    session = serializers.CharField(max_length=200, required=False)


class ExportView(APIView):
    required_scope = "read"

    @extend_schema(request=ExportInput, responses=OpenApiTypes.OBJECT,
                   description="Export the tenant, one workspace or one session as JSON with a schema version.")
    def post(self, request: Request) -> Response:
        data = parse_input(ExportInput, request.data if request.data else {})
        key = api_key(request)
        kind = data["scope"] or ("session" if data.get("session") else "workspace" if data.get("workspace") else "tenant")
        if kind == "session":
            if not data.get("session"):
                raise Invalid("session_required", "A session export names its session.")
            session = get_session(key, data["session"])  # 404 outside the key's tenant/workspace
            scope = ExportScope("session", session=session.external_id)
        elif kind == "workspace":
            if not data.get("workspace") and key.workspace_id is None:
                raise Invalid("workspace_required", "A workspace export names its workspace.")
            workspace = resolve_workspace(key, data.get("workspace"), create=False)
            if workspace is None:
                raise NotFound("workspace_not_found", f"Workspace {data.get('workspace')!r} does not exist.")
            scope = ExportScope("workspace", workspace=workspace.name)
        else:
            _tenant_wide(request, "Exporting the whole tenant")
            scope = ExportScope("tenant")
        return Response(export_memory(tenant=key.tenant, scope=scope))


class ImportView(APIView):
    required_scope = "write"
    parser_classes: list = []  # the body is read raw: an export is larger than Django's form limit

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        parameters=[OpenApiParameter(
            "on_conflict", str, enum=list(ON_CONFLICT), required=False,
            description="Sessions (and notes, facts, documents, schedules…) the tenant holds already: "
                        "`fail` (the default: 409 session_exists naming the session), `skip` (keep them as "
                        "stored, import the rest) or `merge` (append the events a stored session lacks, "
                        "matched by idempotency key or (created_at, role, content); add the records it "
                        "lacks). Importing the same file twice with skip or merge changes nothing.")],
        responses={201: inline_serializer("Imported", {
            "on_conflict": serializers.ChoiceField(choices=ON_CONFLICT),
            "imported": serializers.DictField(child=serializers.IntegerField()),
            "skipped": serializers.DictField(child=serializers.IntegerField()),
            "merged": serializers.DictField(child=serializers.IntegerField()),
            "skipped_sessions": serializers.ListField(child=serializers.CharField()),
            "merged_sessions": serializers.ListField(child=serializers.CharField()),
        })},
        description="Import an export (the JSON body) into the key's tenant: all or nothing, in one transaction. "
                    "The answer counts what was imported, skipped and merged per kind of row, and names up to "
                    "100 skipped or merged sessions.")
    def post(self, request: Request) -> Response:
        key = api_key(request)
        on_conflict = check_on_conflict(request.query_params.get("on_conflict"))  # 400 before reading the body
        if key.user_id:  # an export file carries every user's data
            raise Forbidden("user_limited_key", "Importing needs a key not limited to one user.")
        raw = request._request.read(settings.MEMORYHUB_IMPORT_MAX_BYTES + 1)
        data = parse_export_file(raw)
        report = import_memory(tenant=key.tenant, data=data, limit_workspace=key.workspace, on_conflict=on_conflict)
        return Response(report.as_dict(), status=status.HTTP_201_CREATED)
