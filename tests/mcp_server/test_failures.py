"""Failures the spawned servers cannot be made to show: the database failing under the HTTP
endpoint's key check, and a tool crashing. Both answer as REST does (its exception handler; the
endpoint's refusals as a JSON-RPC error carrying REST's envelope), never with a bare 500 page or a
dropped call."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from django.db import OperationalError

from accounts.models import ApiKey
from retrieval.mcp_server import http, server
from retrieval.mcp_server.tools import ToolSpec
from tests.base import make_key, make_tenant


def _post(app: Any, headers: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any]]:
    """One POST through an ASGI app: (status, headers, JSON body)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp/",
        "raw_path": b"/mcp/",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(app(scope, receive, send))
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, json.loads(body)


async def _never(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the request must not reach the MCP app")


def test_a_database_failure_during_the_key_check_is_answered_in_the_envelope(
    monkeypatch: Any,
) -> None:
    def failing(header: str) -> ApiKey:
        raise OperationalError("connection refused")

    monkeypatch.setattr(http, "_authenticate", failing)
    status, _, body = _post(
        http.ApiKeyRequired(_never), {"host": "localhost", "authorization": "Bearer mh_x_y"}
    )
    expected_status, expected = server.rest_error(OperationalError("connection refused"), "test")
    assert (status, body["error"]["data"]) == (expected_status, expected["error"])
    assert status >= 500 and body["error"]["code"] == -32603 and body["id"] is None


def test_a_host_outside_allowed_hosts_is_refused(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["memory.example.com"]
    status, _, body = _post(
        http.ApiKeyRequired(_never), {"host": "evil.example.net", "authorization": "Bearer x"}
    )
    assert status == 400 and body["error"]["data"]["code"] == "bad_request"


@pytest.mark.django_db
def test_a_crashing_tool_is_a_server_error_tool_result(caplog: Any) -> None:
    caplog.set_level("INFO", logger="memoryhub.mcp")
    key = ApiKey.objects.get(prefix=ApiKey.parse_prefix(make_key(make_tenant("alice"))))

    def crash(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("boom")

    spec = ToolSpec("memory_stats", "Stats", "…", {"type": "object"}, crash, "read")
    result = server.call(spec, lambda: key, {})
    assert result.is_error
    assert result.structured_content == {
        "error": {"code": "server_error", "message": "Internal server error.", "details": {}}
    }
    assert "boom" not in result.content[0].text  # the exception's text stays in the server's log
    assert any("memory_stats" in r.getMessage() for r in caplog.records)  # the traceback, logged
    calls = [r for r in caplog.records if r.getMessage() == "tool call"]
    assert [(r.tool, r.error, r.tenant) for r in calls] == [
        ("memory_stats", "server_error", key.tenant_id)
    ]
