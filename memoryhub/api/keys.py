"""GET /key/: what the caller's own API key is (its tenant, limits and scopes), so that a client can
tell, for instance, which workspace a workspace-limited key writes to. Never the secret, never
another key."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import ApiKey
from memoryhub.api import examples as ex
from memoryhub.api.common import api_key


class KeyOutput(serializers.Serializer):
    tenant = serializers.CharField(help_text="The tenant the key belongs to (its name).")
    workspace = serializers.CharField(
        allow_null=True,
        help_text="The workspace the key is limited to (its name); null: every workspace of the"
        " tenant.",
    )
    user_id = serializers.CharField(
        allow_null=True,
        help_text="The end user the key is limited to; null: any user of the tenant.",
    )
    scopes = serializers.ListField(
        child=serializers.CharField(), help_text="What the key may do: read, write, admin."
    )


def describe_key(key: ApiKey) -> dict[str, object]:
    return {
        "tenant": key.tenant.name,
        "workspace": key.workspace.name if key.workspace_id else None,
        "user_id": key.user_id or None,
        "scopes": sorted(key.scopes),
    }


class KeyView(APIView):
    required_scope = "read"

    @extend_schema(
        summary="Describe this API key",
        operation_id="key_retrieve",
        description="The key the request carries: its tenant, the workspace and end user it is"
        " limited to (null: none), and its scopes. Never its secret, never another key's data."
        " A client asks it once, e.g. to know which workspace a workspace-limited key writes to.",
        responses={200: KeyOutput},
        examples=ex.KEY_GET,
    )
    def get(self, request: Request) -> Response:
        return Response(KeyOutput(describe_key(api_key(request))).data)
