"""MemoryHub's MCP server (the official `mcp` SDK's low-level Server): lists the tools of catalog.py
and runs a call as the API key of the connection (stdio) or of the HTTP request (streamable HTTP).

Errors come back as MCP tool errors (`isError`) whose text and structured content are the REST
API's error envelope, {"error": {"code", "message", "details"}}, with the same code: the REST
exception handler (memoryhub.api.errors) is what turns an exception into that envelope.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types as types
from django.db import close_old_connections, transaction
from mcp.server import Server, ServerRequestContext
from rest_framework.utils.encoders import JSONEncoder

from accounts.models import ApiKey
from accounts.permissions import InsufficientScope
from memoryhub.api.errors import api_exception_handler, error_body
from memoryhub.api.middleware import count_usage
from retrieval.mcp_server import catalog
from retrieval.mcp_server.tools import ToolSpec

logger = logging.getLogger("memoryhub.mcp")

INSTRUCTIONS = (
    "MemoryHub is long-term memory. Store each conversation turn with memory_remember (one session"
    " id per conversation, with the end user's user_id), and before answering call memory_context"
    " with the user's message as query to get what is worth remembering. memory_search finds"
    " specific memories; memory_note and memory_fact keep things the agent decides to remember."
)

# The tools whose calls the dashboard counts, as the REST endpoints they mirror are counted.
USAGE_NAMES = {"memory_search": "search", "memory_context": "context"}

# The API key a request acts as; called in the worker thread that runs the call, so it may query the
# database (the stdio command checks its key again on every call, as REST checks every request).
KeyOf = Callable[[ServerRequestContext[Any, Any]], ApiKey]


def build_server(key_of: KeyOf) -> Server[Any]:
    """An MCP server whose calls act as `key_of(ctx)`: the stdio command's key, or the key the HTTP
    endpoint authenticated for the request."""
    specs = {spec.name: spec for spec in catalog.build()}
    listed = types.ListToolsResult(tools=[_tool(spec) for spec in specs.values()])

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = specs.get(params.name)
        if spec is None:
            return _error(
                error_body(
                    "unknown_tool", f"No tool named {params.name!r}.", {"tools": sorted(specs)}
                )
            )
        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(call, spec, lambda: key_of(ctx), arguments)

    return Server(
        "memoryhub",
        version=_version(),
        title="MemoryHub",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _version() -> str:
    try:
        return importlib.metadata.version("memoryhub")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def _tool(spec: ToolSpec) -> types.Tool:
    reads = spec.scope == "read"
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.schema,
        annotations=types.ToolAnnotations(read_only_hint=True) if reads else None,
    )


def call(
    spec: ToolSpec, resolve_key: Callable[[], ApiKey], arguments: dict[str, Any]
) -> types.CallToolResult:
    """Run one tool call in this (worker) thread, in one transaction, as a request would be."""
    close_old_connections()
    started = time.perf_counter()
    failed, code = True, ""
    key: ApiKey | None = None
    try:
        key = resolve_key()
        spec.check_known(arguments)
        required = spec.scope_for(arguments)
        if not key.has_scope(required):
            raise InsufficientScope(
                f"This API key lacks the '{required}' scope.", code="insufficient_scope"
            )
        with transaction.atomic():
            body = spec.run(key, arguments)
        failed, code = False, ""
        return _success(spec, body)
    except Exception as exc:  # every failure becomes a tool error, never a dropped call
        envelope = _envelope(spec, exc)
        code = envelope["error"]["code"]
        return _error(envelope)
    finally:
        duration_ms = round((time.perf_counter() - started) * 1000, 2)
        if spec.name in USAGE_NAMES and key is not None:
            count_usage(
                key.tenant_id, USAGE_NAMES[spec.name], failed=failed, duration_ms=duration_ms
            )
        # One line per call, beside memoryhub.request's one per REST request.
        logger.info(
            "tool call",
            extra={
                "tool": spec.name,
                "error": code,
                "duration_ms": duration_ms,
                "tenant": key.tenant_id if key is not None else None,
            },
        )
        close_old_connections()


def rest_error(exc: Exception, what: str) -> tuple[int, dict[str, Any]]:
    """The status and error envelope REST answers `exc` with (its exception handler decides); an
    exception REST does not expect is logged and is a 500 server_error, as in REST."""
    response = api_exception_handler(exc, {})
    if response is None:
        logger.exception("MCP %s failed", what)
        return 500, error_body("server_error", "Internal server error.")
    return response.status_code, dict(response.data)


def _envelope(spec: ToolSpec, exc: Exception) -> dict[str, Any]:
    envelope = rest_error(exc, f"tool {spec.name}")[1]
    hint = _hint(spec, envelope["error"].get("details") or {})
    return {"error": {**envelope["error"], "hint": hint}} if hint else envelope


def _hint(spec: ToolSpec, details: dict[str, Any]) -> str:
    """What to send instead, for each argument the call got wrong, read off the tool's schema: a
    model corrects its next call from the error alone."""
    hints = []
    for name in details.get("fields") or {}:
        prop = spec.schema["properties"].get(name)
        if prop is None:
            continue
        kind = str(prop.get("type", "value"))
        want = (
            f"one of {', '.join(prop['enum'])}"
            if prop.get("enum")
            else f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"
        )
        hints.append(
            f"{name}: send {want}"
            + (f" ({prop['description']})" if prop.get("description") else "")
        )
    return "; ".join(hints)


def _json(body: dict[str, Any]) -> dict[str, Any]:
    """The body as REST's JSON renderer writes it (same encoder: same dates, decimals, …)."""
    return json.loads(json.dumps(body, cls=JSONEncoder))


def _success(spec: ToolSpec, body: dict[str, Any]) -> types.CallToolResult:
    structured = _json(body)
    if spec.name == "memory_context":
        text = (
            structured["markdown"]
            or "No stored memory is relevant to this: nothing to add to the context."
        )
    elif spec.name == "memory_search":
        text = search_text(structured)
    else:
        text = json.dumps(structured, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def search_text(body: dict[str, Any]) -> str:
    """A search's results as a model reads them cheaply: one line each — rank, date, who (role,
    user), kind, the text, score; a summary's id for summary_expand, a fact's for memory_fact. The
    whole REST body stays in structuredContent for a client that wants ids, metadata and scores."""
    results = body.get("results") or []
    synthesis = body.get("synthesis")
    lines = []
    if synthesis is not None:  # synthesize: the answer first, citing results by their rank below
        if "error" in synthesis:
            lines.append(f"No synthesised answer: {synthesis['error']['message']}")
        elif synthesis["answer"]:
            cited = ", ".join(f"[{c['index'] + 1}]" for c in synthesis["citations"])
            lines.append(f"Answer: {synthesis['answer']}" + (f" (from {cited})" if cited else ""))
    if not results:
        return "\n".join([*lines, "No stored memory matches this."])
    for rank, r in enumerate(results, start=1):
        who = " · ".join(w for w in (r.get("role") or r.get("kind"), r.get("user_id")) if w)
        ref = _follow_up(r)
        text = " ".join(str(r.get("text", "")).split())
        lines.append(
            f"{rank}. [{str(r.get('created_at') or '')[:10]} {who}] {text}"
            f" ({r.get('score', 0):.2f}{ref})"
        )
        lines += _expanded_lines(r.get("expanded"))
    return "\n".join(lines)


def _expanded_lines(expanded: dict[str, Any] | None) -> list[str]:
    """expand: a summary hit's finer summaries, then the messages it condenses, one indented line
    each."""
    if not expanded:
        return []
    children = [
        f"   > {' '.join(str(c.get('text') or '').split())}" for c in expanded.get("children") or []
    ]
    messages = [
        f"   - {m.get('role')}: {' '.join(str(m.get('content') or '').split())}"
        for m in expanded.get("messages") or []
    ]
    return children + messages


def _follow_up(result: dict[str, Any]) -> str:
    meta = result.get("metadata") or {}
    if result.get("kind") == "summary" and meta.get("summary_id"):
        return f"; summary_id {meta['summary_id']}"
    if result.get("kind") == "fact" and meta.get("fact_id"):
        return f"; fact_id {meta['fact_id']}"
    return ""


def _error(envelope: dict[str, Any]) -> types.CallToolResult:
    structured = _json(envelope)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(structured, ensure_ascii=False))],
        structured_content=structured,
        is_error=True,
    )
