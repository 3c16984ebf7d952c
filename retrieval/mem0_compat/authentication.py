"""mem0's `Authorization: Token <key>` header, checked as every MemoryHub key is."""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.authentication import ApiPrincipal, authenticate_key
from accounts.models import ApiKey


class TokenAuthentication(authentication.BaseAuthentication):
    """`Token <key>` (what mem0's client sends) or `Bearer <key>`: the same MemoryHub key."""

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() not in ("token", "bearer"):
            raise exceptions.AuthenticationFailed("Use 'Authorization: Token <api key>'.")
        key = authenticate_key(parts[1])
        return ApiPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        return "Token"
