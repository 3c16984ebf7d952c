"""REST views of the memory lifecycle: forget a user (S1), export and import (S9)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memoryhub.api import api_key
from memoryhub.errors import ApiError
from memoryhub.lifecycle.forget import forget_user


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
        if key.workspace_id is not None:
            # A user's rows may live in any workspace: only a tenant-wide key may forget them.
            raise ApiError("workspace_limited_key", "Forgetting a user needs a key not limited to a workspace.",
                           status_code=403)
        deleted = forget_user(tenant_id=key.tenant_id, user_id=user_id)
        return Response({"user_id": user_id, "deleted": deleted, "total": sum(deleted.values())})
