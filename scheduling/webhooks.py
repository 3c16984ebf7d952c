"""Per-tenant webhooks: where a tenant's agent goals and run notifications are POSTed, signed.

Every body sent to a tenant's webhook is signed with its secret: HMAC-SHA256 over
"<timestamp>.<raw body>", sent as `X-MemoryHub-Signature: sha256=<hex>` beside
`X-MemoryHub-Timestamp: <unix seconds>`. The timestamp is inside the signed bytes so that a
receiver that refuses old timestamps cannot be fed a captured request again later.
The server-wide MEMORYHUB_AGENT_WEBHOOK_URL stays as the default agent webhook of tenants that
have none (with MEMORYHUB_AGENT_WEBHOOK_TOKEN as a bearer token, as before).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction

from accounts.models import ApiKey
from memoryhub.errors import Conflict, Invalid, NotFound
from memoryhub.ownership import require_tenant_wide
from memoryhub.plumbing import outbound
from scheduling.models import Webhook, WebhookKind

SIGNATURE_HEADER = "X-MemoryHub-Signature"
TIMESTAMP_HEADER = "X-MemoryHub-Timestamp"
MIN_SECRET_CHARS = 16


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """What a receiver does (the tests' fake server uses it): constant-time comparison."""
    try:
        expected = sign(secret, int(timestamp), body)
    except ValueError:
        return False
    return hmac.compare_digest(expected, signature)


@dataclass(frozen=True)
class Target:
    """Where a call goes and how it is authenticated: a tenant's webhook (signed) or the default."""

    url: str
    secret: str = ""
    token: str = ""
    webhook: Webhook | None = None

    def headers(self, body: bytes) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": "MemoryHub-Webhook/1",
        }
        if self.secret:
            now = int(time.time())
            headers[TIMESTAMP_HEADER] = str(now)
            headers[SIGNATURE_HEADER] = sign(self.secret, now, body)
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers


def target_for(tenant_id: Any, kind: str) -> Target | None:
    """The tenant's webhook of this kind; for agent goals the server default when it has none."""
    hook = Webhook.objects.filter(tenant_id=tenant_id, kind=kind).first()
    if hook is not None:
        return Target(hook.url, secret=hook.secret, webhook=hook)
    if kind == WebhookKind.AGENT and settings.MEMORYHUB_AGENT_WEBHOOK_URL:
        return Target(
            settings.MEMORYHUB_AGENT_WEBHOOK_URL, token=settings.MEMORYHUB_AGENT_WEBHOOK_TOKEN
        )
    return None


def require_agent_webhook(tenant_id: Any) -> None:
    """Refuse an agent_goal schedule that could only fail when it runs."""
    if target_for(tenant_id, WebhookKind.AGENT) is None:
        message = (
            "Action 'agent_goal' needs an agent webhook: add one with POST /api/v1/webhooks/ "
            "(kind 'agent'), or set MEMORYHUB_AGENT_WEBHOOK_URL on the server."
        )
        raise Invalid(
            "webhook_required",
            message,
            details={"fields": {"action": [{"code": "webhook_required", "message": message}]}},
        )


# --- sending -------------------------------------------------------------------------------------


class SendError(Exception):
    """The call failed: unreachable, timed out, or a non-2xx answer (`status`, `text`)."""

    def __init__(self, message: str, *, status: int | None = None, text: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.text = text


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # A redirect would resend to an address nobody configured (and urllib turns a POST into a
    # GET without the body): a 3xx is an answer like any other non-2xx.
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# Only to allowed addresses, checked as the connection is made (memoryhub.plumbing.outbound).
_opener = outbound.build_opener(_NoRedirects)


def send(
    target: Target,
    body: bytes,
    *,
    timeout: float,
    max_reply: int,
    extra_headers: dict[str, str] | None = None,
) -> tuple[int, str]:
    """POST the body; returns (status, reply text) for a 2xx, raises SendError otherwise."""
    headers = {**target.headers(body), **(extra_headers or {})}
    request = urllib.request.Request(target.url, data=body, headers=headers, method="POST")
    try:
        with _opener.open(request, timeout=timeout) as response:
            return response.status, response.read(max_reply).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        text = exc.read(100_000).decode("utf-8", "replace") if exc.fp else ""
        raise SendError(f"HTTP {exc.code}", status=exc.code, text=text) from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, outbound.DestinationRefused):
            raise SendError(
                f"refused: {reason} (MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS allows one)"
            ) from None
        raise SendError(f"unreachable: {reason}") from None


# --- management (API and admin) ------------------------------------------------------------------


def check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Invalid(
            "invalid_url",
            "A webhook URL is an http:// or https:// address.",
            details={"fields": {"url": [{"code": "invalid_url", "message": "http(s) only"}]}},
        )
    if parts.username or parts.password:
        raise Invalid(
            "invalid_url",
            "Put no credentials in a webhook URL; bodies are signed with its secret.",
            details={"fields": {"url": [{"code": "invalid_url", "message": "no credentials"}]}},
        )
    try:
        outbound.check_url(url)
    except outbound.DestinationRefused as exc:
        message = (
            f"Webhooks may not point at this server or its private networks ({exc}); the operator "
            "can allow a network with MEMORYHUB_OUTBOUND_ALLOWED_NETWORKS."
        )
        raise Invalid(
            "destination_not_allowed",
            message,
            details={"fields": {"url": [{"code": "destination_not_allowed", "message": message}]}},
        ) from None
    return url


def check_secret(secret: str) -> str:
    if len(secret) < MIN_SECRET_CHARS:
        message = f"A webhook secret has at least {MIN_SECRET_CHARS} characters."
        raise Invalid(
            "secret_too_short",
            message,
            details={"fields": {"secret": [{"code": "secret_too_short", "message": message}]}},
        )
    return secret


def _tenant_wide(key: ApiKey) -> None:
    # A webhook serves every workspace and user of the tenant: only a key for all of it manages
    # them.
    require_tenant_wide(key, "Managing webhooks")


def list_webhooks(key: ApiKey) -> Any:
    _tenant_wide(key)
    return Webhook.objects.filter(tenant_id=key.tenant_id).order_by("kind", "created_at")


def get_webhook(key: ApiKey, webhook_id: str) -> Webhook:
    _tenant_wide(key)
    try:
        pk = uuid.UUID(webhook_id)
    except ValueError:  # not an id at all: the same answer as an unknown one
        pk = None
    hook = Webhook.objects.filter(tenant_id=key.tenant_id, pk=pk).first() if pk else None
    if hook is None:
        raise NotFound("webhook_not_found", f"Webhook {webhook_id!r} does not exist.")
    return hook


def create_webhook(
    key: ApiKey, *, kind: str, url: str, secret: str = "", description: str = ""
) -> Webhook:
    """A new webhook; its secret (generated unless given) is on the returned object, once."""
    _tenant_wide(key)
    return save_webhook(
        Webhook(tenant_id=key.tenant_id, kind=kind, description=description), url=url, secret=secret
    )


def save_webhook(hook: Webhook, *, url: str, secret: str = "") -> Webhook:
    """Check and store; a blank secret keeps the stored one, or generates one for a new webhook."""
    hook.url = check_url(url)
    if secret:
        hook.secret = check_secret(secret)
    elif not hook.secret:
        hook.secret = new_secret()
    try:
        with transaction.atomic():
            hook.save()
    except IntegrityError:
        raise Conflict(
            "webhook_exists",
            f"This tenant already has a {hook.kind} webhook; delete it first.",
            {"kind": hook.kind},
        ) from None
    return hook
