"""`Authorization: Bearer <key>` authentication for the REST API.

Keys are cached per process for MEMORYHUB_API_KEY_CACHE_SECONDS (the key's query was a
round trip of every request): a key revoked, changed or deleted in this process is dropped from
the cache at once (post_save / post_delete); one revoked by another process (the admin's bulk
action, another worker) is refused by this one within that many seconds. The secret is checked
on every request all the same (a fast hash), so the cache never lets a wrong secret in.

A key's last use is announced (accounts.signals.key_used) and written with other keys' by a
background thread of the process (memoryhub.api.middleware.key_uses, every
memoryhub.plumbing.counters.FLUSH_SECONDS, as the request counters are): a request never waits for
that write. With a thousand tenants' keys each used now and then, it was an UPDATE and a commit in
most requests (bench/README.md, stop 39).
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.models import ApiKey, Tenant, Workspace
from accounts.signals import key_used

# A key's last use is written at most once per this many seconds per key (coarse on purpose).
TOUCH_SECONDS = 60


@dataclass(frozen=True)
class ApiPrincipal:
    """Stands in for request.user: the caller is a key, not a person."""

    api_key: ApiKey

    is_authenticated = True
    is_anonymous = False

    @property
    def tenant_id(self) -> int:
        return self.api_key.tenant_id

    def __str__(self) -> str:
        return f"api-key:{self.api_key.prefix}"


class KeyCache:
    """Keys by prefix, each with the monotonic time it was read; bounded, thread-safe."""

    MAX_ENTRIES = 10_000

    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, ApiKey]] = {}
        self._lock = threading.Lock()

    def get(self, prefix: str) -> ApiKey | None:
        ttl = settings.MEMORYHUB_API_KEY_CACHE_SECONDS
        entry = self._entries.get(prefix)
        if entry is None or ttl <= 0 or time.monotonic() - entry[0] >= ttl:
            return None
        return entry[1]

    def put(self, key: ApiKey) -> None:
        if settings.MEMORYHUB_API_KEY_CACHE_SECONDS <= 0:
            return
        with self._lock:
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[key.prefix] = (time.monotonic(), key)

    def drop(self, prefix: str) -> None:
        with self._lock:
            self._entries.pop(prefix, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


key_cache = KeyCache()


@receiver(post_save, sender=ApiKey)
@receiver(post_delete, sender=ApiKey)
def _forget_cached_key(sender: Any, instance: ApiKey, **kwargs: Any) -> None:
    key_cache.drop(instance.prefix)


def find_key(prefix: str) -> ApiKey | None:
    """The key with this prefix (tenant and workspace loaded), from the cache when fresh."""
    key = key_cache.get(prefix)
    if key is None:
        key = read_key(prefix)
        if key is not None:
            key_cache.put(key)
    return key


_KEY_MODELS = (ApiKey, Tenant, Workspace)


@functools.cache
def _key_statement() -> str:
    k, t, w = (model._meta for model in _KEY_MODELS)
    columns = ", ".join(
        f"{alias}.{field.column}"
        for alias, meta in zip("ktw", (k, t, w), strict=True)
        for field in meta.concrete_fields
    )
    return (
        f"SELECT {columns} FROM {k.db_table} k JOIN {t.db_table} t ON t.id = k.tenant_id "
        f"LEFT JOIN {w.db_table} w ON w.id = k.workspace_id WHERE k.prefix = %s"
    )


def read_key(prefix: str) -> ApiKey | None:
    """The key with this prefix from the database, its tenant and workspace loaded: what
    `ApiKey.objects.select_related("tenant", "workspace").filter(prefix=prefix).first()` gives, as
    one plain statement. The ORM spent ~1 ms compiling that query for each key read, where a
    thousand tenants' keys each used now and then miss the cache on most requests (stop 39)."""
    with connection.cursor() as cursor:
        cursor.execute(_key_statement(), [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    loaded = []
    for model in _KEY_MODELS:
        fields = model._meta.concrete_fields
        values, row = row[: len(fields)], row[len(fields) :]
        # as the ORM does
        values = [
            f.from_db_value(v, None, connection) if hasattr(f, "from_db_value") else v
            for f, v in zip(fields, values, strict=True)
        ]
        loaded.append(
            model.from_db(connection.alias, [f.attname for f in fields], values)
            if values[0] is not None
            else None
        )
    key, tenant, workspace = loaded
    key.tenant = tenant
    key.workspace = workspace
    return key


def bearer_token(header: str) -> str:
    """The key in an `Authorization: Bearer <key>` header value (AuthenticationFailed otherwise)."""
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <api key>'.")
    return parts[1]


def authenticate_key(raw: str, *, cached: bool = True) -> ApiKey:
    """The active key `raw` is (its use noted), or AuthenticationFailed: the one check of a key,
    for the REST API, the MCP endpoint and `manage.py mcp --key` (uncached: one process serving
    one key, which promises that a revocation stops it at the next call)."""
    prefix = ApiKey.parse_prefix(raw)
    if not prefix:
        key = None
    elif cached:
        key = find_key(prefix)
    else:
        key = read_key(prefix)
    if key is None or not key.matches(raw):
        raise exceptions.AuthenticationFailed("Invalid API key.")
    if not key.is_active:
        raise exceptions.AuthenticationFailed("This API key has been revoked.")
    _touch(key)
    return key


def _touch(key: ApiKey) -> None:
    # One write per key per interval, not per request: last_used_at is coarse on purpose. The
    # write itself is batched off the request (accounts.signals.key_used).
    now = timezone.now()
    interval = timedelta(seconds=TOUCH_SECONDS)
    if key.last_used_at is None or now - key.last_used_at >= interval:
        key_used.send(sender=ApiKey, key_id=key.pk, at=now)
        key.last_used_at = now


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        key = authenticate_key(bearer_token(header))
        return ApiPrincipal(key), key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Documents the bearer key in the OpenAPI schema (the docs page's Authorize button)."""

    target_class = ApiKeyAuthentication
    name = "ApiKey"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A MemoryHub API key: `Authorization: Bearer mh_<prefix>_<secret>`.",
        }
