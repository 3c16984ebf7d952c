"""The error responses of the OpenAPI document (a step of memoryhub.api.docs.complete_schema):
what every operation can answer besides its success, and the one Error component they share."""

from __future__ import annotations

from typing import Any

# What every operation can answer besides its success, derived from how the server is built rather
# than listed per view: the middleware (memoryhub.api.middleware) refuses a NUL in the path or query
# and a bad Content-Length with 400, and a body over the limit with 413, before any view runs; DRF's
# authentication and HasApiScope answer 401 and 403 on every operation that needs a key; a path id
# or a named session may not exist (404); a JSON body may be malformed (400)
# or of another media type (415). Conflicts (409) come from the domain and are named per operation.

ERROR_DESCRIPTIONS = {
    400: (
        "Invalid input: a malformed body, an unknown or ill-typed field, a bad query parameter, or"
        " a query parameter the operation does not list (`unknown_parameter`, with the one meant"
        " when it is near)."
    ),
    401: "No API key, or an invalid or revoked one (`not_authenticated`, `invalid_api_key`).",
    403: (
        "The key may not do this: a scope it lacks (`insufficient_scope`), or a workspace or end"
        " user it is limited to (`workspace_forbidden`, `user_forbidden`, `shared_read_only`, …)."
    ),
    404: "What the path or the input names does not exist, or the key cannot see it.",
    409: "The request contradicts what is stored (it exists already, is archived, is stale).",
    413: "The request body is larger than the server's limit (`payload_too_large`).",
    415: "The body is not JSON (`unsupported_media_type`).",
    503: "The database is unavailable (`database_unavailable`): retry after `Retry-After` seconds.",
}

# A `session` named in a body must exist (memoryhub.sessions.get_session: session_not_found; a
# search, context or export may also name a missing workspace or channel, and always takes a session
# too). A named workspace or channel is otherwise created or only filters, and so do list filters,
# except where a query names the session to read (below). Measured by asking each operation for a
# missing one.
NAMED_RECORDS = frozenset({"session"})
NOT_FOUND_BY_QUERY = frozenset({("get", "/api/v1/browse/")})

# Operations whose domain functions raise memoryhub.errors.Conflict.
CONFLICTS = frozenset(
    {
        ("post", "/api/v1/channels/"),
        ("patch", "/api/v1/channels/{channel_id}/"),
        ("post", "/api/v1/documents/"),
        ("patch", "/api/v1/schedules/{schedule_id}/"),
        ("post", "/api/v1/facts/"),
        ("patch", "/api/v1/facts/{fact_id}/"),
        ("post", "/api/v1/import/"),
        ("post", "/api/v1/notes/"),
        ("put", "/api/v1/notes/{note_id}/"),
        ("post", "/api/v1/schedules/{schedule_id}/pause/"),
        ("post", "/api/v1/schedules/{schedule_id}/resume/"),
        ("post", "/api/v1/sessions/"),
        ("patch", "/api/v1/sessions/{session_id}/"),
        ("get", "/api/v1/sessions/{session_id}/"),
        ("delete", "/api/v1/sessions/{session_id}/"),
        ("get", "/api/v1/sessions/{session_id}/events/"),
        ("post", "/api/v1/sessions/{session_id}/events/"),
        ("delete", "/api/v1/sessions/{session_id}/events/"),
        ("put", "/api/v1/sessions/{session_id}/scratchpad/"),
        ("patch", "/api/v1/sessions/{session_id}/scratchpad/"),
        ("delete", "/api/v1/sessions/{session_id}/scratchpad/"),
        ("put", "/api/v1/sessions/{session_id}/summary/"),
        ("post", "/api/v1/webhooks/"),
        ("delete", "/api/v1/workspaces/{workspace}/"),  # immutable_transcript
    }
)

RETRY_AFTER = {
    "schema": {"type": "integer"},
    "required": True,
    "description": "Seconds to wait before retrying.",
}

ERROR_COMPONENT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {
                    "type": "string",
                    "description": "A stable machine-readable reason, e.g. session_not_found.",
                },
                "message": {"type": "string", "description": "What went wrong, for a person."},
                "details": {
                    "type": "object",
                    "additionalProperties": True,
                    "description": "More about it, e.g. `fields` with each bad field's problems.",
                },
            },
            "description": "The error.",
        },
    },
}


def error_statuses(
    path: str,
    method: str,
    operation: dict[str, Any],
    components: dict[str, Any],
    *,
    reads_json: bool,
) -> list[int]:
    """The error statuses this operation can answer with (see the comment above)."""
    statuses = {400, 413}
    if any(requirement for requirement in operation.get("security", [])):
        # Every operation with a key reads the database (memoryhub.api.errors: a lost database is
        # a 503 with Retry-After, not a 500); /health/ does not, /ready/ documents its own 503.
        statuses |= {401, 403, 503}
    parameters = operation.get("parameters", [])
    if (
        any(p.get("in") == "path" for p in parameters)
        or NAMED_RECORDS & _body_properties(operation, components)
        or (method, path) in NOT_FOUND_BY_QUERY
    ):
        statuses.add(404)
    if "requestBody" in operation and reads_json:
        statuses.add(415)
    if (method, path) in CONFLICTS:
        statuses.add(409)
    return sorted(statuses)


def _body_properties(operation: dict[str, Any], components: dict[str, Any]) -> set[str]:
    schema = (
        operation.get("requestBody", {})
        .get("content", {})
        .get("application/json", {})
        .get("schema", {})
    )
    if "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
    return set(schema.get("properties", {}))


def _json_reading_views(generator: Any) -> set[tuple[str, str]]:
    """(method, path) of the operations whose view parses its body with DRF's parsers (a 415 is then
    possible); an import reads its body raw (parser_classes = [])."""
    raw = set()
    for path, _regex, method, view in getattr(generator, "endpoints", None) or []:
        if getattr(getattr(view, "cls", None), "parser_classes", None) == []:
            raw.add((method.lower(), path))
    return raw


def add_error_responses(result: dict[str, Any], generator: Any) -> None:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_COMPONENT
    raw_body = _json_reading_views(generator)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status in error_statuses(
                path, method, operation, components, reads_json=(method, path) not in raw_body
            ):
                response = operation["responses"].setdefault(
                    str(status),
                    {
                        "description": ERROR_DESCRIPTIONS[status],
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                        },
                    },
                )
                if status == 503:
                    response.setdefault("headers", {"Retry-After": RETRY_AFTER})
