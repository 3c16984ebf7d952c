"""What the OpenAPI document says beyond the views: the API's introduction and the path
parameters' descriptions (one wording for every operation that takes them), added by a
drf-spectacular postprocessing hook (settings.SPECTACULAR_SETTINGS)."""

from __future__ import annotations

from typing import Any

DESCRIPTION = """Memory for AI agents: store conversations, recall what matters.

**Authentication.** Every call but /health/ and /ready/ needs an API key:
`Authorization: Bearer mh_<prefix>_<secret>` (create one with `python manage.py create_api_key --tenant
<name>`). A key sees one tenant; it may be limited to a workspace and/or an end user, and holds the
scopes read, write and/or admin.

**The two calls most agents need.** `POST /sessions/{session_id}/events/` stores messages (the session is
created if new; give each message an `idempotency_key` to make retries safe), and `POST /context/`
returns the Markdown block of memories to put in front of the next prompt.

**Errors** always have the same shape: `{"error": {"code", "message", "details"}}`, with a stable
machine-readable `code` (e.g. `session_not_found`, `invalid_time_range`, `insufficient_scope`).

**Lists** are paged with `limit` and `offset` and answer `{count, next, previous, results}`.

**Agents over MCP.** The same tools are served over the Model Context Protocol at `/mcp/` (streamable
HTTP, the same bearer key) and by `python manage.py mcp --key …` on stdio.
"""

PATH_PARAMETERS = {
    "session_id": "The session's id (chosen at creation, e.g. chat-42).",
    "note_id": "The note's id.",
    "fact_id": "The fact's id (returned when it was stored).",
    "node_id": "The summary node's id.",
    "schedule_id": "The schedule's id.",
    "run_id": "The run's id.",
    "user_id": "The end user's id, as given in user_id fields.",
    "channel_id": "The channel's id (GET /channels/ lists them).",
    "document_id": "The document's id (returned when it was ingested).",
    "webhook_id": "The webhook's id (returned when it was registered).",
}


def complete_schema(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the introduction, and a description of every path
    parameter named in PATH_PARAMETERS."""
    result.setdefault("info", {})["description"] = DESCRIPTION
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter["name"] in PATH_PARAMETERS:
                    parameter.setdefault("description", PATH_PARAMETERS[parameter["name"]])
    return result
