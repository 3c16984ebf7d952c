"""What the OpenAPI document says beyond the views: the API's introduction and the path
parameters' descriptions (one wording for every operation that takes them), added by a
drf-spectacular postprocessing hook (settings.SPECTACULAR_SETTINGS)."""

from __future__ import annotations

from typing import Any

from memoryhub.models import SESSION_ID_REGEX

DESCRIPTION = """Memory for AI agents: store conversations, recall what matters.

**Authentication.** Every call but /health/ and /ready/ needs an API key:
`Authorization: Bearer mh_<prefix>_<secret>` (create one in the checkout with `.venv/bin/python manage.py create_api_key
--tenant <name>`). A key sees one tenant; it may be limited to a workspace and/or an end user, and holds the
scopes read, write and/or admin.

**The two calls most agents need.** `POST /sessions/{session_id}/events/` stores messages (the session is
created if new; give each message an `idempotency_key` to make retries safe), and `POST /context/`
returns the Markdown block of memories to put in front of the next prompt. Messages may be sent as an
OpenAI or Anthropic chat API returned them (content null or a list of parts, tool calls, tool results):
`GET /sessions/{session_id}/events/?format=openai` (or `anthropic`, also on `restore/`) gives them back as sent.

**Errors** always have the same shape: `{"error": {"code", "message", "details"}}`, with a stable
machine-readable `code` (e.g. `session_not_found`, `invalid_time_range`, `insufficient_scope`).

**Lists** are paged with `limit` and `offset` and answer `{count, next, previous, results}`.

**Agents over MCP.** The same tools are served over the Model Context Protocol at `/mcp/` (streamable
HTTP, the same bearer key) and by `.venv/bin/python manage.py mcp --key …` on stdio.
"""

# A description for every schema the document names, as Swagger shows it beside the body or the
# answer: what it is, for whom. One table, so that the wording is the API's, not the docstrings'
# (which describe how the code works). "PatchedX" and "XRequest" variants share X's line; a "…Page"
# is a page of the list it names. tests/memoryhub/test_openapi_descriptions.py fails on a schema
# left without one.
SCHEMA_DESCRIPTIONS = {
    "ActionEnum": "What a schedule does when it runs: pursue an agent goal, consolidate memories, embed what "
                  "is missing, prune old runs, or summarise sessions.",
    "NullEnum": "No value (null).",
    "BulkEventInput": "Several messages at once, stored in order (the same fields as one message, under `events`).",
    "Cadence": "When a schedule runs: a cron expression, an interval or one moment, in a time zone.",
    "CadenceInput": "When a schedule runs: a cron expression, an interval or one moment, in a time zone.",
    "CadenceOutput": "When a schedule runs, with a description in words.",
    "ChannelInput": "A channel to create or change: where sessions, notes and documents are grouped (a Slack "
                    "channel, an inbox…).",
    "ChannelPatchInput": "The channel fields to change; those left out stay as they are.",
    "ChannelOutput": "A channel: a named place that groups sessions, notes and documents in a workspace.",
    "ChunkStats": "How much of your content is searchable: stored pieces, how many are embedded, and by kind.",
    "DeletedWorkspace": "What deleting a workspace removed (or, with dry_run, would remove): rows per kind of "
                        "record, and whether it was a dry run.",
    "CitationOutput": "A result a synthesised answer rests on: its position in the results and its chunk id.",
    "SynthesisErrorOutput": "Why a synthesised answer is missing: the language model failed, timed out or "
                            "answered something unreadable.",
    "SynthesisOutput": "The language model's answer to the query from the caller's own results, with the results "
                       "it cites, or why there is none.",
    "CompactionStats": "How far summarising is behind: sessions and messages not yet summarised.",
    "Consolidation": "What consolidation did (or, with dry_run, would do): counts per action and the memories "
                     "it deleted.",
    "ConsolidationInput": "Run consolidation now: merge duplicate facts, drop stale memories (dry_run only reports).",
    "Context": "The memories to put in front of the next prompt, as Markdown and as items, within your token "
               "budget.",
    "ContextInput": "What to recall for the next prompt: the session, the end user, an optional query and a "
                    "token budget.",
    "ContextItemOutput": "One memory in a context block: its text, where it comes from and why it was chosen.",
    "Deleted": "The id of what was deleted.",
    "DeliveryOutput": "How delivering a run's result went: status, attempts and the last error.",
    "DocumentDeleted": "The deleted document and how many of its searchable pieces went with it.",
    "DocumentInput": "A document to store and make searchable: its text, where it comes from, tags and owner.",
    "EventAppend": "One message, or several under `events`, to add to a session.",
    "EventInput": "One message of a conversation: role, content, and for tool use the tool's name, arguments "
                  "and result.",
    "SingleEventInput": "One message to add to a session.",
    "ToolFunctionInput": "The function a tool call names, with its arguments.",
    "ExplainOutput": "Why a result ranked where it did: each signal's score and weight and the steps applied.",
    "ExplainPartOutput": "One signal's part in a result's score (text match, meaning, recency…).",
    "ExplainStepOutput": "One step that changed a result's score or rank.",
    "ExportDocument": "All memories of a tenant, a workspace or a session in one JSON document, to import "
                      "elsewhere.",
    "ExportInput": "What to export: the whole tenant, one workspace or one session.",
    "FactHistory": "Every version a fact has had, oldest first, with when each was valid.",
    "FactInput": "A fact to remember about an end user or the tenant; one with the same key replaces the older "
                 "one, which is kept in its history.",
    "FactPatchInput": "The fact fields to change; those left out stay as they are.",
    "FactOutput": "A fact: a short statement held true until replaced, with its category, key and owner.",
    "FactUpserted": "The fact as stored, and whether it was created or replaced an older one.",
    "FactVersionOutput": "One version of a fact and the time it was valid.",
    "Forgotten": "The session that was deleted, with everything derived from it.",
    "ForgottenUser": "What was deleted of an end user, by kind.",
    "Health": "Whether the service answers.",
    "HealthDetails": "How the service's own processes fared since it started: restarts after they stopped unexpectedly.",
    "Imported": "What an import stored, skipped or merged.",
    "NoteInput": "A note to store: free text an agent or person wants remembered, with tags and owner.",
    "NoteOutput": "A note: free text remembered as written, searchable, with tags and owner.",
    "QueueStats": "Work waiting in the background: texts to embed and when they will be done.",
    "Ready": "Whether the service can take traffic, with each check's result.",
    "Restored": "A session's recent history to resume a conversation: its summary and latest messages within "
                "a token budget.",
    "RestoredSummaryRef": "The summary a restore started from.",
    "RollingSummary": "A session's running summary and the last message it covers.",
    "RunOutput": "One run of a schedule: when, its status, and what it produced.",
    "ScheduleInput": "A schedule to create: what to do (an agent goal or a maintenance action), when, and whom "
                     "to notify.",
    "SchedulePatchInput": "The schedule fields to change; those left out stay as they are.",
    "ScheduleOutput": "A schedule: what it does, when, and its state.",
    "ScheduleDeleted": "The id of the deleted schedule.",
    "ScheduleStats": "Schedules by status and those failing.",
    "Scratchpad": "A session's scratchpad: short key-value items an agent keeps while it works, with a version "
                  "for safe concurrent writes.",
    "ScratchpadCleared": "The scratchpad after clearing it.",
    "ScratchpadInput": "The scratchpad's new items (replacing all of them); expected_version refuses a write "
                       "over a newer one.",
    "ScratchpadPatchInput": "Items to set or remove, leaving the others as they are.",
    "ScratchpadItem": "One scratchpad item.",
    "SearchInput": "What to search for and where: the query, filters (session, user, tags, kinds, time) and "
                   "how to rank.",
    "SearchResults": "Search results, best first, optionally grouped by session.",
    "SearchResultOutput": "One search result: the text found, its score and where it comes from.",
    "SessionGroupOutput": "The results of one session, when results are grouped by session.",
    "SessionCreateInput": "A session to create: its id, end user, agent and where it belongs.",
    "SessionPatchInput": "The session fields to change; those left out stay as they are.",
    "SessionOutput": "A session: one conversation, with its end user, agent and state.",
    "Stats": "Counts and backlogs of this tenant: sessions, messages, memories, and background work.",
    "SummariseInput": "Summarise a session now, within this many tokens.",
    "Summarised": "The session's new summary and what summarising it did.",
    "SummaryPutInput": "A summary written by you to replace the session's; expected_epoch refuses a write over "
                       "a newer one.",
    "TreeQueued": "The session whose summary tree will be rebuilt in the background.",
    "WebhookInput": "A webhook to register: the URL MemoryHub calls on an event, and the secret it signs with.",
    "WebhookOutput": "A registered webhook (its secret is never shown again).",
    "WebhookCreatedOutput": "The new webhook, with its signing secret: shown this once.",
    "WebhookDeleted": "The id of the deleted webhook.",
    "WebhookList": "Your registered webhooks.",
    "Error": "An error: a stable machine-readable `code`, a message for people, and details.",
    "EndUserOutput": "An end user: how many of their sessions, facts and notes you may see, and their last activity.",
}
# Pages of lists: "<Thing>Page" → the things it holds.
PAGE_ITEMS = {"Browse": "memories, newest first", "Channel": "channels", "Document": "documents",
              "EndUser": "end users, by user id",
              "Event": "messages of the session, in order", "Fact": "facts", "Note": "notes",
              "Run": "runs of the schedule", "Schedule": "schedules", "Session": "sessions",
              "SummaryNode": "summary nodes"}


def schema_description(name: str) -> str | None:
    """The line SCHEMA_DESCRIPTIONS holds for a component, by its name or the name it derives from."""
    base = name.removeprefix("Patched")
    base = base.removesuffix("Request") if base not in SCHEMA_DESCRIPTIONS else base
    if base in SCHEMA_DESCRIPTIONS:
        return SCHEMA_DESCRIPTIONS[base]
    if base.endswith("Page") and base.removesuffix("Page") in PAGE_ITEMS:
        return f"A page of {PAGE_ITEMS[base.removesuffix('Page')]} ({{count, next, previous, results}})."
    return None


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
    "workspace": "The workspace's name (as sessions, notes and facts name it).",
}


# Path ids the server checks against a pattern (memoryhub.models.SESSION_ID_REGEX): an id outside
# it is refused, so the schema says so.
PATH_PATTERNS = {"session_id": SESSION_ID_REGEX, "note_id": SESSION_ID_REGEX}


def complete_schema(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the introduction, a description of every path parameter
    named in PATH_PARAMETERS, the error responses, and no unknown fields where they are refused."""
    result.setdefault("info", {})["description"] = DESCRIPTION
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter["name"] in PATH_PARAMETERS:
                    parameter.setdefault("description", PATH_PARAMETERS[parameter["name"]])
                if parameter.get("in") == "path" and parameter["name"] in PATH_PATTERNS:
                    parameter["schema"] = {"type": "string", "pattern": PATH_PATTERNS[parameter["name"]]}
    group_by_task(result)
    add_error_responses(result, generator)
    forbid_unknown_fields(result, generator)
    require_needed_bodies(result)
    refuse_blank_query_strings(result, generator)
    refuse_null_characters(result)
    state_import_header(result)
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if not component.get("description") and (line := schema_description(name)):
            component["description"] = line
    return result


# --- Error responses ----------------------------------------------------------------------------
# What every operation can answer besides its success, derived from how the server is built rather
# than listed per view: the middleware (memoryhub.api.middleware) refuses a NUL in the path or query and
# a bad Content-Length with 400, and a body over the limit with 413, before any view runs; DRF's
# authentication and HasApiScope answer 401 and 403 on every operation that needs a key; a path id
# or a named session may not exist (404); a JSON body may be malformed (400)
# or of another media type (415). Conflicts (409) come from the domain and are named per operation.

ERROR_DESCRIPTIONS = {
    400: "Invalid input: a malformed body, an unknown or ill-typed field, a bad query parameter, or a query "
         "parameter the operation does not list (`unknown_parameter`, with the one meant when it is near).",
    401: "No API key, or an invalid or revoked one (`not_authenticated`, `invalid_api_key`).",
    403: "The key may not do this: a scope it lacks (`insufficient_scope`), or a workspace or end user "
         "it is limited to (`workspace_forbidden`, `user_forbidden`, `shared_read_only`, …).",
    404: "What the path or the input names does not exist, or the key cannot see it.",
    409: "The request contradicts what is stored (it exists already, is archived, is stale).",
    413: "The request body is larger than the server's limit (`payload_too_large`).",
    415: "The body is not JSON (`unsupported_media_type`).",
    503: "The database is unavailable (`database_unavailable`): retry after `Retry-After` seconds.",
}

# A `session` named in a body must exist (memoryhub.sessions.get_session: session_not_found; a search,
# context or export may also name a missing workspace or channel, and always takes a session too).
# A named workspace or channel is otherwise created or only filters, and so do list filters, except
# where a query names the session to read (below). Measured by asking each operation for a missing one.
NAMED_RECORDS = frozenset({"session"})
NOT_FOUND_BY_QUERY = frozenset({("get", "/api/v1/browse/")})

# Operations whose domain functions raise memoryhub.errors.Conflict.
CONFLICTS = frozenset({
    ("post", "/api/v1/channels/"), ("patch", "/api/v1/channels/{channel_id}/"),
    ("post", "/api/v1/documents/"), ("patch", "/api/v1/schedules/{schedule_id}/"),
    ("post", "/api/v1/facts/"), ("patch", "/api/v1/facts/{fact_id}/"),
    ("post", "/api/v1/import/"),
    ("post", "/api/v1/notes/"), ("put", "/api/v1/notes/{note_id}/"),
    ("post", "/api/v1/schedules/{schedule_id}/pause/"), ("post", "/api/v1/schedules/{schedule_id}/resume/"),
    ("post", "/api/v1/sessions/"), ("patch", "/api/v1/sessions/{session_id}/"),
    ("delete", "/api/v1/sessions/{session_id}/"), ("post", "/api/v1/sessions/{session_id}/events/"),
    ("put", "/api/v1/sessions/{session_id}/scratchpad/"), ("patch", "/api/v1/sessions/{session_id}/scratchpad/"),
    ("delete", "/api/v1/sessions/{session_id}/scratchpad/"),
    ("put", "/api/v1/sessions/{session_id}/summary/"),
    ("post", "/api/v1/webhooks/"),
    ("delete", "/api/v1/workspaces/{workspace}/"),  # immutable_transcript
})

RETRY_AFTER = {"schema": {"type": "integer"}, "required": True,
               "description": "Seconds to wait before retrying."}

ERROR_COMPONENT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string", "description": "A stable machine-readable reason, e.g. session_not_found."},
                "message": {"type": "string", "description": "What went wrong, for a person."},
                "details": {"type": "object", "additionalProperties": True,
                            "description": "More about it, e.g. `fields` with each bad field's problems."},
            },
            "description": "The error.",
        },
    },
}


def error_statuses(path: str, method: str, operation: dict[str, Any], components: dict[str, Any],
                   *, reads_json: bool) -> list[int]:
    """The error statuses this operation can answer with (see the comment above)."""
    statuses = {400, 413}
    if any(requirement for requirement in operation.get("security", [])):
        # Every operation with a key reads the database (memoryhub.api.errors: a lost database is
        # a 503 with Retry-After, not a 500); /health/ does not, /ready/ documents its own 503.
        statuses |= {401, 403, 503}
    parameters = operation.get("parameters", [])
    if (any(p.get("in") == "path" for p in parameters) or NAMED_RECORDS & _body_properties(operation, components)
            or (method, path) in NOT_FOUND_BY_QUERY):
        statuses.add(404)
    if "requestBody" in operation and reads_json:
        statuses.add(415)
    if (method, path) in CONFLICTS:
        statuses.add(409)
    return sorted(statuses)


def _body_properties(operation: dict[str, Any], components: dict[str, Any]) -> set[str]:
    schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
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
            for status in error_statuses(path, method, operation, components, reads_json=(method, path) not in raw_body):
                response = operation["responses"].setdefault(str(status), {
                    "description": ERROR_DESCRIPTIONS[status],
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                })
                if status == 503:
                    response.setdefault("headers", {"Retry-After": RETRY_AFTER})


def forbid_unknown_fields(result: dict[str, Any], generator: Any) -> None:
    """`additionalProperties: false` on the request bodies of StrictSerializers, which refuse a
    field they do not know (`unknown_field`): the schema must not invite what the server refuses."""
    from memoryhub.api.common import StrictSerializer

    schemas = result.get("components", {}).get("schemas", {})
    registry = getattr(generator, "registry", None)
    for (name, kind), component in (getattr(registry, "_components", None) or {}).items():
        serializer = component.object
        cls = serializer if isinstance(serializer, type) else type(serializer)
        if kind == "schemas" and name in schemas and issubclass(cls, StrictSerializer):
            schemas[name]["additionalProperties"] = False
            _require_items(schemas[name], serializer)


def _require_items(schema: dict[str, Any], serializer: Any) -> None:
    """minItems 1 on a list field that refuses an empty list (allow_empty=False), which
    drf-spectacular does not carry into the schema."""
    from rest_framework import serializers

    fields = serializer().fields if isinstance(serializer, type) else serializer.fields
    for name, field in fields.items():
        prop = schema.get("properties", {}).get(name)
        if prop is not None and isinstance(field, (serializers.ListField, serializers.ListSerializer)) \
                and not field.allow_empty:
            prop.setdefault("minItems", 1)
        if prop is not None and _trimmed_and_not_blank(field):
            _not_blank(prop)
        elif prop is not None and getattr(field, "refuses_blank", False) and prop.get("type") == "string":
            # Not trimmed, so not a pattern of its own: "not only white space" (with a maxLength of
            # 50,000, a pattern would cost generators seconds per string).
            prop["not"] = {"pattern": BLANK}
        if prop is not None and isinstance(field, serializers.ListField) and _trimmed_and_not_blank(field.child) \
                and isinstance(prop.get("items"), dict):
            _not_blank(prop["items"])


def _trimmed_and_not_blank(field: Any) -> bool:
    from rest_framework import serializers

    return (isinstance(field, serializers.CharField) and field.trim_whitespace and not field.allow_blank
            and not isinstance(field, (serializers.RegexField, serializers.URLField, serializers.EmailField)))


def _not_blank(schema: dict[str, Any]) -> None:
    """DRF trims a CharField and then refuses it blank: a string of spaces is no more valid than ""."""
    if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema \
            and "format" not in schema:
        schema["pattern"] = NOT_BLANK


# A character str.strip() keeps: Python's white space, not ECMA's \s (which has U+FEFF and lacks
# U+001C–U+001F and U+0085).
NOT_BLANK = "[^\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
# Only what str.strip() removes, or nothing.
BLANK = "^[" + NOT_BLANK[2:-1] + "]*$"


def refuse_blank_query_strings(result: dict[str, Any], generator: Any) -> None:
    """Query parameters are read by serializers of CharFields (common.query_params), which refuse a
    blank value unless they allow it (`?user_id=` is not "no filter"): such a parameter has
    minLength 1, and a required character is a character other than white space too."""
    blank_refused = _blank_refusing_query_parameters(generator)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                schema = parameter.get("schema", {})
                if parameter.get("in") != "query" or schema.get("type") != "string":
                    continue
                if (method, path, parameter["name"]) in blank_refused or "enum" in schema:
                    schema.setdefault("minLength", 1)
                if schema.get("minLength", 0) >= 1:
                    _not_blank(schema)


def _blank_refusing_query_parameters(generator: Any) -> set[tuple[str, str, str]]:
    """(method, path, name) of the query parameters a view reads with a CharField that refuses a
    blank value: the serializers each operation names in its `parameters`."""
    from rest_framework import serializers

    found: set[tuple[str, str, str]] = set()
    for path, _regex, method, callback in getattr(generator, "endpoints", None) or []:
        view = generator.create_view(callback, method)
        for item in view.schema.get_override_parameters():
            if isinstance(item, type) and issubclass(item, serializers.Serializer):
                for name, field in item().fields.items():
                    if isinstance(field, serializers.CharField) and not field.allow_blank:
                        found.add((method.lower(), path, name))
    return found


# PostgreSQL text and jsonb cannot hold U+0000: every string a request carries refuses it
# (StrictSerializer, and the middleware for the path and query). Stated on every string of every
# request as `not: {pattern: NUL}` (a pattern of the whole string, with the long maxLengths of
# contents, cost generators seconds per string); free-form JSON (metadata, params, tool arguments…)
# is a JsonValue whose strings say it too. Object keys cannot be stated in OpenAPI 3.0
# (propertyNames is 3.1): the descriptions say it.
NUL = r"\x00"
JSON_VALUE = {
    "nullable": True,
    "description": "Any JSON value; no string (nor object key) in it may hold a NUL character (U+0000).",
    "anyOf": [
        {"type": "string", "not": {"pattern": NUL}},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array", "items": {"$ref": "#/components/schemas/JsonValue"}},
        {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/JsonValue"}},
    ],
}


def refuse_null_characters(result: dict[str, Any]) -> None:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["JsonValue"] = JSON_VALUE
    for name, component in components.items():
        if name.endswith("Request"):
            _no_nul(component)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("in") in ("query", "path") and isinstance(parameter.get("schema"), dict):
                    _no_nul(parameter["schema"])
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            if isinstance(body.get("schema"), dict):
                _no_nul(body["schema"])


def state_import_header(result: dict[str, Any]) -> None:
    """An import reads one format at one version (memoryhub.transfer.format.check_header)."""
    from memoryhub.transfer.format import FORMAT, SCHEMA_VERSION

    properties = result.get("components", {}).get("schemas", {}).get("ExportDocumentRequest", {}).get("properties", {})
    if "format" in properties:
        properties["format"]["enum"] = [FORMAT]
        properties["format"].pop("pattern", None)
    if "schema_version" in properties:
        properties["schema_version"].update(minimum=SCHEMA_VERSION, maximum=SCHEMA_VERSION)


def _free_form(schema: dict[str, Any]) -> bool:
    """Any JSON ({}), or an object of anything (additionalProperties true, no properties)."""
    keys = set(schema) - {"description", "nullable", "readOnly", "writeOnly", "title", "default"}
    if not keys:
        return True
    return (schema.get("type") == "object" and schema.get("additionalProperties") is True
            and not schema.get("properties") and keys <= {"type", "additionalProperties"})


def _no_nul(schema: Any) -> None:
    if not isinstance(schema, dict) or "$ref" in schema:
        return
    for key in ("properties",):
        for name, child in list(schema.get(key, {}).items()):
            if isinstance(child, dict) and _free_form(child):
                schema[key][name] = _json_value(child)
            else:
                _no_nul(child)
    for key in ("items", "additionalProperties"):
        child = schema.get(key)
        if isinstance(child, dict) and _free_form(child) and not (key == "additionalProperties" and child == {}):
            schema[key] = _json_value(child)
        elif isinstance(child, dict):
            _no_nul(child)
    for key in ("oneOf", "anyOf", "allOf"):
        for index, child in enumerate(schema.get(key, [])):
            if isinstance(child, dict) and _free_form(child):
                schema[key][index] = _json_value(child)
            else:
                _no_nul(child)
    if schema.get("type") == "string" and "enum" not in schema and "format" not in schema \
            and schema.get("pattern") not in PATTERNS_WITHOUT_NUL:
        refused = schema.get("not")
        schema["not"] = {"anyOf": [refused, {"pattern": NUL}]} if refused else {"pattern": NUL}


# Patterns that leave NUL out already (ids: letters, digits and a few signs).
PATTERNS_WITHOUT_NUL = frozenset(PATH_PATTERNS.values())


def _json_value(schema: dict[str, Any]) -> dict[str, Any]:
    """A free-form schema as a JsonValue (an object stays an object), keeping its description."""
    described = {k: schema[k] for k in ("description",) if k in schema}
    if schema.get("type") == "object":
        return {**described, "type": "object", "additionalProperties": {"$ref": "#/components/schemas/JsonValue"}}
    return {**described, "allOf": [{"$ref": "#/components/schemas/JsonValue"}]}


def require_needed_bodies(result: dict[str, Any]) -> None:
    """A body whose every shape has required fields is itself required: without one the server
    answers 400 (drf-spectacular sees that for a plain serializer, not for a oneOf of them)."""
    components = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            schema = (body or {}).get("content", {}).get("application/json", {}).get("schema")
            if schema is not None and _needs_fields(schema, components):
                body["required"] = True


def _needs_fields(schema: dict[str, Any], components: dict[str, Any]) -> bool:
    if "$ref" in schema:
        return _needs_fields(components.get(schema["$ref"].rsplit("/", 1)[-1], {}), components)
    if "oneOf" in schema:
        return all(_needs_fields(alternative, components) for alternative in schema["oneOf"])
    return bool(schema.get("required"))


# --- Operations grouped by what a user does ------------------------------------------------------
# The reference lists these groups in this order (and the paths in it in the same order), so that
# the two calls every user needs first (store events, get the context) lead, not the alphabet.

TASK_GROUPS = {
    "Sessions and events": ("Store what was said: conversations (sessions) and their events.",
                            ("sessions",)),
    "Search and context": ("Get memory back: the context block for the next prompt, search, browse.",
                           ("context", "search", "browse")),
    "Memory": ("What is remembered besides the transcript: notes, facts, documents, summaries.",
               ("notes", "facts", "documents", "summaries")),
    "Schedules": ("Work that runs later for this key: schedules, their runs, webhooks.",
                  ("schedules", "runs", "webhooks")),
    "Operations": ("Running an installation: end users, workspaces, channels, import and export, "
                   "consolidation, statistics, health.",
                   ("users", "workspaces", "channels", "import", "export", "consolidation", "stats", "health",
                    "ready")),
}


def group_by_task(result: dict[str, Any]) -> None:
    """Tag each operation with its group (TASK_GROUPS, by the path's first part) and order the
    groups and paths by what a user does first; a path no group names goes last, under its own tag."""
    rank = {part: (g, i) for g, (_, parts) in enumerate(TASK_GROUPS.values()) for i, part in enumerate(parts)}
    names = list(TASK_GROUPS)

    def part(path: str) -> str:
        return path.removeprefix("/api/v1/").split("/", 1)[0]

    def order(path: str) -> tuple[int, int, str]:
        group, index = rank.get(part(path), (len(names), 0))
        return group, index, path

    paths = result.get("paths", {})
    for path, operations in paths.items():
        if part(path) in rank:
            for operation in operations.values():
                if isinstance(operation, dict):
                    operation["tags"] = [names[rank[part(path)][0]]]
    result["paths"] = {path: paths[path] for path in sorted(paths, key=order)}
    result["tags"] = [{"name": name, "description": text} for name, (text, _) in TASK_GROUPS.items()]
