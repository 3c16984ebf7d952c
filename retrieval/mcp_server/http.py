"""The MCP endpoint at /mcp/ (streamable HTTP): an ASGI app mounted beside Django by
memoryhub.plumbing.asgi (settings.MEMORYHUB_ASGI_MOUNTS).

Every request must carry `Authorization: Bearer <API key>`, checked as the REST API checks it
(accounts.authentication.authenticate_key); a refusal is a JSON-RPC error (the REST error
envelope's code, message and details in its `data`), which an MCP client hands the agent as it
reads it, where a plain HTTP error reaches it only as "Server returned an error response". The
tools then act as that key, bound to its tenant,
workspace and user exactly as REST is. The server is stateless (no MCP session is kept between
requests) and answers POSTs in JSON: any web worker can serve any request.

A GET opens the protocol's event stream, which a stateless server never writes to. Each web
worker holds at most MEMORYHUB_MCP_STREAMS_PER_KEY of them per API key and MEMORYHUB_MCP_STREAMS
in all (429 too_many_streams past either), and closes one that carried no event for
MEMORYHUB_MCP_STREAM_IDLE_SECONDS (2,100 were once held open at once).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import mcp_types as types
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from accounts.authentication import authenticate_key, bearer_token
from accounts.models import ApiKey
from memoryhub.api.errors import error_body
from memoryhub.plumbing.limits import body_limit
from retrieval.mcp_server.server import build_server, rest_error

PATH = "/mcp/"


def _key_of(ctx: Any) -> ApiKey:
    return ctx.request.scope["state"]["api_key"]


def _authenticate(header: str) -> ApiKey:
    close_old_connections()
    try:
        return authenticate_key(bearer_token(header))
    finally:
        close_old_connections()


class ApiKeyRequired:
    """Lets a request through with its API key in scope["state"]["api_key"], or answers 401 (or 400
    for a Host that ALLOWED_HOSTS refuses, as Django would) in the REST API's error envelope."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope["headers"]
        }
        refusal = self._refusal(headers)
        if refusal is None:
            try:
                key = await anyio.to_thread.run_sync(_authenticate, headers["authorization"])
            # a bad key (401), or the database failing: REST's answer to it
            except Exception as exc:
                refusal = self._answer(*rest_error(exc, "authentication"))
            else:
                scope.setdefault("state", {})["api_key"] = key
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, headers: dict[str, str]) -> JSONResponse | None:
        domain, _port = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            return self._answer(400, error_body("bad_request", "Bad request."))
        if not headers.get("authorization"):
            return self._unauthorized(
                "not_authenticated", "An API key is required: 'Authorization: Bearer <key>'."
            )
        return None

    @staticmethod
    def _unauthorized(code: str, message: str) -> JSONResponse:
        return ApiKeyRequired._answer(401, error_body(code, message))

    @staticmethod
    def _answer(status: int, envelope: dict[str, Any]) -> JSONResponse:
        """A refusal with `status`, its body the JSON-RPC error an MCP client surfaces: the REST
        envelope's message, and the whole of its error (code, message, details) as data. The id is
        null: the request's own is not read before it is refused (a client answers its request)."""
        error = envelope["error"]
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": types.INTERNAL_ERROR if status >= 500 else types.INVALID_REQUEST,
                "message": error["message"],
                "data": error,
            },
        }
        return JSONResponse(
            body,
            status_code=status,
            headers={"WWW-Authenticate": "Bearer"} if status == 401 else None,
        )


class StreamLimits:
    """Bounds the GET event streams (module docstring); runs inside ApiKeyRequired."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.per_key: Counter[Any] = Counter()  # one event loop per worker: no lock needed
        self.total = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        key_id = scope["state"]["api_key"].pk
        refusal = self._refusal(key_id)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        self.per_key[key_id] += 1
        self.total += 1
        try:
            await self._serve_until_idle(scope, receive, send)
        finally:
            self.per_key[key_id] -= 1
            if not self.per_key[key_id]:
                del self.per_key[key_id]
            self.total -= 1

    def _refusal(self, key_id: Any) -> JSONResponse | None:
        for held, limit, whose in (
            (self.per_key[key_id], settings.MEMORYHUB_MCP_STREAMS_PER_KEY, "key"),
            (self.total, settings.MEMORYHUB_MCP_STREAMS, "server"),
        ):
            if held >= limit:
                return JSONResponse(
                    error_body(
                        "too_many_streams",
                        f"At most {limit} MCP event streams are held open per {whose}; close "
                        "one first (a stateless server sends nothing on them).",
                        {"limit": limit, "per": whose},
                    ),
                    status_code=429,
                )
        return None

    async def _serve_until_idle(self, scope: Scope, receive: Receive, send: Send) -> None:
        idle = settings.MEMORYHUB_MCP_STREAM_IDLE_SECONDS
        last_event = anyio.current_time()
        response = {"started": False, "ended": False}

        async def tracked(message: Any) -> None:
            nonlocal last_event
            if message["type"] == "http.response.start":
                response["started"] = True
            elif message["type"] == "http.response.body":
                body = message.get("body", b"")
                # a keep-alive comment is not an event
                if body.strip() and not body.lstrip().startswith(b":"):
                    last_event = anyio.current_time()
                response["ended"] = not message.get("more_body", False)
            await send(message)

        async def close_when_idle(scope_to_cancel: anyio.CancelScope) -> None:
            while anyio.current_time() - last_event < idle:
                await anyio.sleep(last_event + idle - anyio.current_time())
            scope_to_cancel.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(close_when_idle, group.cancel_scope)
            await self.app(scope, receive, tracked)
            group.cancel_scope.cancel()
        # closed for idleness: end the stream cleanly
        if response["started"] and not response["ended"]:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def build_app() -> Any:
    """The Starlette app serving MCP at PATH; its lifespan runs the SDK's session manager."""
    server = build_server(_key_of)
    starlette_app = server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=body_limit(PATH),
        # The Host check is Django's own (ALLOWED_HOSTS, above); the SDK's DNS-rebinding guard is
        # for servers without credentials, and every request here carries an API key.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    starlette_app.add_middleware(StreamLimits)  # inside ApiKeyRequired (added last, so outermost)
    starlette_app.add_middleware(ApiKeyRequired)
    return starlette_app


application = build_app()
