"""REST views over a tenant's data as a whole: forget a user (docs/memory-model.md#sharing), export
and import (docs/memory-model.md#export-and-import)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api import examples as ex
from memoryhub.api.common import StrictSerializer, api_key, parse_input
from memoryhub.errors import Forbidden, Invalid, NotFound
from memoryhub.forget import forget_user_report
from memoryhub.ownership import require_tenant_wide
from memoryhub.sessions import get_session, resolve_workspace
from memoryhub.transfer import (
    ON_CONFLICT,
    SCOPES,
    Exporter,
    ExportScope,
    check_on_conflict,
    export_json,
    import_memory,
    parse_export_file,
    user_not_found,
)

_END = object()


class JsonStream(StreamingHttpResponse):
    """A JSON document sent as it is written. Under ASGI each piece is produced in the request's
    own thread (Django's default would first collect a synchronous stream into one list, which is
    the memory this avoids); `content` reads the whole body, for callers that want it at once."""

    def __init__(self, pieces: Iterator[str], status: int = 200) -> None:
        super().__init__(pieces, content_type="application/json", status=status)

    async def __aiter__(self) -> AsyncIterator[bytes]:  # type: ignore[override]
        parts = iter(self.streaming_content)
        while (part := await sync_to_async(next, thread_sensitive=True)(parts, _END)) is not _END:
            yield part  # type: ignore[misc]

    @property  # type: ignore[override]
    def content(self) -> bytes:
        if not hasattr(self, "_whole"):
            self._whole = b"".join(self.streaming_content)  # type: ignore[arg-type]
        return self._whole

    @property  # type: ignore[override]
    def text(self) -> str:
        return self.content.decode(self.charset or "utf-8")


def _tenant_wide(request: Request, what: str) -> None:
    require_tenant_wide(api_key(request), what)


class ForgetUserView(APIView):
    required_scope = "admin"

    @extend_schema(
        summary="Forget an end user",
        responses={
            200: inline_serializer(
                "ForgottenUser",
                {
                    "user_id": serializers.CharField(help_text="The forgotten user."),
                    "deleted": serializers.DictField(
                        child=serializers.IntegerField(), help_text="Rows deleted, by kind."
                    ),
                    "total": serializers.IntegerField(help_text="Rows deleted in all."),
                    "redacted": serializers.DictField(
                        child=serializers.IntegerField(),
                        help_text=(
                            "Rows of no user that quoted this user's words (run outputs, run"
                            " notifications, consolidation reports) and had them removed, by kind;"
                            " every kind looked at is listed."
                        ),
                    ),
                },
            )
        },
        description=(
            "Delete every row of this end user in the key's tenant (sessions, events, memories, "
            "summaries, schedules), and remove their words from run outputs, run notifications and "
            "consolidation reports, in one transaction. Needs the admin scope and a key limited to "
            "neither a workspace nor a user."
        ),
        examples=ex.FORGET_USER,
    )
    def delete(self, request: Request, user_id: str) -> Response:
        key = api_key(request)
        # A user's rows may live in any workspace: only a tenant-wide key may forget them.
        _tenant_wide(request, "Forgetting a user")
        report = forget_user_report(tenant_id=key.tenant_id, user_id=user_id)
        return Response(
            {
                "user_id": user_id,
                "deleted": report["deleted"],
                "total": sum(report["deleted"].values()),
                "redacted": report["redacted"],
            }
        )


class ExportInput(StrictSerializer):
    scope = serializers.ChoiceField(
        choices=SCOPES,
        required=False,
        default=None,
        help_text=(
            "What to export: tenant, workspace, session or user (default: user "
            "when one is named, else session when one is, else workspace when "
            "one is, else tenant)."
        ),
    )
    workspace = serializers.CharField(
        max_length=100, required=False, help_text="The workspace to export."
    )
    session = serializers.CharField(
        max_length=200, required=False, help_text="The session to export."
    )
    user_id = serializers.CharField(
        max_length=200,
        required=False,
        help_text=(
            "The end user to export: her sessions with their events, notes, facts, "
            "summaries, documents, scratchpads, schedules and runs (not shared "
            "knowledge). A user-limited key exports its own user."
        ),
    )


ExportDocument = inline_serializer(
    "ExportDocument",
    {
        "format": serializers.CharField(help_text="Always memoryhub-export."),
        "schema_version": serializers.IntegerField(
            help_text="The format's version (this server reads 1)."
        ),
        "scope": serializers.DictField(
            help_text="What was exported: {type: tenant|workspace|session, workspace?, session?}."
        ),
        "workspaces": serializers.ListField(
            child=serializers.DictField(),
            help_text="Workspaces with their channels: {name, channels: [...]}.",
        ),
        "sessions": serializers.ListField(
            child=serializers.DictField(),
            help_text="Sessions with their fields, events and rolling summary.",
        ),
        "documents": serializers.ListField(
            child=serializers.DictField(), required=False, help_text="Ingested documents."
        ),
        "records": serializers.DictField(
            required=False,
            help_text=(
                "Every other area's rows by model (notes, facts, "
                "summary nodes, scratchpads, schedules, …)."
            ),
        ),
        "chunks": serializers.ListField(
            child=serializers.DictField(),
            required=False,
            help_text=(
                "The searchable chunks with their embeddings, so an import needs no "
                "re-embedding (absent: the imported memories are indexed again)."
            ),
        ),
    },
)


class ExportView(APIView):
    required_scope = "read"

    @extend_schema(
        summary="Export memory",
        description=(
            "Export the tenant, one workspace, one session or one end user (`user_id`: everything"
            " of hers, 404 user_not_found when she has nothing here) as one JSON document with a"
            " format version: what POST /import/ takes back. The document is streamed as it is read"
            " from one snapshot of the database, so exporting a large tenant needs no more server"
            " memory than a small one."
        ),
        request=ExportInput,
        responses=ExportDocument,
        examples=ex.EXPORT,
    )
    def post(self, request: Request) -> Any:
        # No body parses as {}; a body that is not an object (null, []) is refused, not read as {}.
        data = parse_input(ExportInput, request.data)
        key = api_key(request)
        kind = data["scope"] or (
            "user"
            if data.get("user_id")
            else (
                "session"
                if data.get("session")
                else "workspace"
                if data.get("workspace")
                else "tenant"
            )
        )
        if kind == "user":
            scope = _user_scope(key, data)
        elif kind == "session":
            if not data.get("session"):
                raise Invalid("session_required", "A session export names its session.")
            session = get_session(key, data["session"])  # 404 outside the key's tenant/workspace
            scope = ExportScope("session", session=session.external_id)
        elif kind == "workspace":
            if not data.get("workspace") and key.workspace_id is None:
                raise Invalid("workspace_required", "A workspace export names its workspace.")
            workspace = resolve_workspace(key, data.get("workspace"), create=False)
            if workspace is None:
                raise NotFound(
                    "workspace_not_found", f"Workspace {data.get('workspace')!r} does not exist."
                )
            scope = ExportScope("workspace", workspace=workspace.name)
        else:
            _tenant_wide(request, "Exporting the whole tenant")
            scope = ExportScope("tenant")
        # a missing scope: 404 before streaming
        exporter = Exporter(key.tenant, scope, user_id=key.user_id or "")
        return JsonStream(export_json(exporter))


def _user_scope(key: Any, data: dict[str, Any]) -> ExportScope:
    """A user's export: her rows may live in any workspace, so a workspace-limited key is refused
    (as forgetting her is); a user-limited key exports its own user, and another user's id is
    answered as a user with nothing here."""
    if data.get("session") or data.get("workspace"):
        raise Invalid(
            "user_export_alone",
            "A user's export takes user_id alone: it holds all of her workspaces and sessions.",
        )
    user_id = data.get("user_id") or key.user_id
    if not user_id:
        raise Invalid("user_required", "A user export names its user: user_id.")
    if key.workspace_id is not None:
        raise Forbidden(
            "workspace_limited_key", "Exporting a user needs a key not limited to a workspace."
        )
    if key.user_id and user_id != key.user_id:
        raise user_not_found(user_id)
    return ExportScope("user", user=user_id)


class ImportView(APIView):
    required_scope = "write"
    parser_classes: list = []  # the body is read raw: an export is larger than Django's form limit

    @extend_schema(
        summary="Import memory",
        description=(
            "Import an export (the JSON body, as POST /export/ wrote it) into the key's tenant: all"
            " or nothing, in one transaction. A session the tenant holds already is a 409"
            " session_exists (other rows taken already: 409 import_conflict) unless `on_conflict`"
            " says to skip or merge. Every row of the file must land where the key may write: a"
            " workspace-limited key imports nothing account-wide (403 workspace_forbidden), a"
            " user-limited key only its user's rows (403 user_limited_key; shared rows are"
            " read-only to it), a row of a user's session is that user's, a merge appends only into"
            " a stored session of the same owner and a fact's imported history only extends a fact"
            " the import creates (409 owner_mismatch); the error names the first offending row"
            " (`details.path`) and nothing is stored. The answer counts what was imported, skipped"
            " and merged, by kind, and names up to 100 skipped or merged sessions."
        ),
        parameters=[
            OpenApiParameter(
                "on_conflict",
                str,
                enum=list(ON_CONFLICT),
                required=False,
                description=(
                    "Sessions (and notes, facts, documents, schedules…) the tenant holds already:"
                    " `fail` (the default: 409 session_exists naming the session), `skip` (keep"
                    " them as stored, with what hangs off them, and import the rest) or `merge`"
                    " (append the events a stored session lacks, matched by idempotency key or by"
                    " (created_at, role, content), and add the records it lacks, matched by"
                    " identity). Importing the same file twice with skip or merge changes nothing."
                    " Anything else, an empty value included: 400 invalid_on_conflict."
                ),
            )
        ],
        request={"application/json": ExportDocument},
        responses={
            201: inline_serializer(
                "Imported",
                {
                    "on_conflict": serializers.ChoiceField(
                        choices=ON_CONFLICT, help_text="The option the import ran with."
                    ),
                    "imported": serializers.DictField(
                        child=serializers.IntegerField(),
                        help_text=(
                            "Records imported, by kind (events appended by a merge count here)."
                        ),
                    ),
                    "skipped": serializers.DictField(
                        child=serializers.IntegerField(),
                        help_text=(
                            "Records of the file left out because the tenant held "
                            "them already (or what hangs off them), by kind."
                        ),
                    ),
                    "merged": serializers.DictField(
                        child=serializers.IntegerField(),
                        help_text="Stored rows the file was merged into, by kind (sessions).",
                    ),
                    "skipped_sessions": serializers.ListField(
                        child=serializers.CharField(),
                        help_text="Ids of the sessions skipped (at most 100).",
                    ),
                    "merged_sessions": serializers.ListField(
                        child=serializers.CharField(),
                        help_text="Ids of the sessions merged into (at most 100).",
                    ),
                },
            )
        },
        examples=ex.IMPORT,
    )
    def post(self, request: Request) -> Response:
        key = api_key(request)
        # 400 before reading the body
        on_conflict = check_on_conflict(request.query_params.get("on_conflict"))
        raw = request._request.read(settings.MEMORYHUB_IMPORT_MAX_BYTES + 1)
        data = parse_export_file(raw)
        report = import_memory(
            tenant=key.tenant,
            data=data,
            limit_workspace=key.workspace,
            on_conflict=on_conflict,
            limit_user=key.user_id,
        )
        return Response(report.as_dict(), status=status.HTTP_201_CREATED)
