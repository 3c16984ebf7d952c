"""Scope checks: read for safe methods, write for the rest; views may demand admin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework import exceptions, permissions
from rest_framework.request import Request

if TYPE_CHECKING:
    from rest_framework.views import APIView

from accounts.models import ApiKey


class InsufficientScope(exceptions.PermissionDenied):
    default_code = "insufficient_scope"


class HasApiScope(permissions.BasePermission):
    def has_permission(self, request: Request, view: APIView) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            raise exceptions.NotAuthenticated(
                "An API key is required: 'Authorization: Bearer <key>'."
            )
        required = getattr(view, "required_scope", None)
        if required is None:
            required = "read" if request.method in permissions.SAFE_METHODS else "write"
        if not key.has_scope(required):
            raise InsufficientScope(
                f"This API key lacks the '{required}' scope.", code="insufficient_scope"
            )
        return True
