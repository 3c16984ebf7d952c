"""The OpenAPI document's drf-spectacular postprocessing hook (settings.SPECTACULAR_SETTINGS),
complete_schema, and what it says beyond the views in words: the API's introduction, a description
of every schema, and the path parameters' descriptions (one wording for every operation that takes
them). The hook's other steps live beside it: docs_groups (operations grouped by what a user does),
docs_errors (the error responses) and docs_requests (what a request may carry: strict bodies, no
blank strings, no NUL)."""

from __future__ import annotations

from typing import Any

from memoryhub.api.docs_errors import add_error_responses
from memoryhub.api.docs_groups import group_by_task
from memoryhub.api.docs_requests import (
    PATH_PATTERNS,
    forbid_unknown_fields,
    refuse_blank_query_strings,
    refuse_null_characters,
    require_needed_bodies,
    state_import_header,
)

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
"""  # noqa: E501

# A description for every schema the document names, as Swagger shows it beside the body or the
# answer: what it is, for whom. One table, so that the wording is the API's, not the docstrings'
# (which describe how the code works). "PatchedX" and "XRequest" variants share X's line; a "…Page"
# is a page of the list it names. tests/memoryhub/test_openapi_descriptions.py fails on a schema
# left without one.
SCHEMA_DESCRIPTIONS = {
    "ActionEnum": (
        "What a schedule does when it runs: pursue an agent goal, consolidate memories, embed what "
        "is missing, prune old runs, or summarise sessions."
    ),
    "NullEnum": "No value (null).",
    "BulkEventInput": (
        "Several messages at once, stored in order (the same fields as one message, under"
        " `events`)."
    ),
    "Cadence": (
        "When a schedule runs: a cron expression, an interval or one moment, in a time zone."
    ),
    "CadenceInput": (
        "When a schedule runs: a cron expression, an interval or one moment, in a time zone."
    ),
    "CadenceOutput": "When a schedule runs, with a description in words.",
    "ChannelInput": (
        "A channel to create or change: where sessions, notes and documents are grouped (a Slack "
        "channel, an inbox…)."
    ),
    "ChannelPatchInput": "The channel fields to change; those left out stay as they are.",
    "ChannelOutput": (
        "A channel: a named place that groups sessions, notes and documents in a workspace."
    ),
    "ChunkStats": (
        "How much of your content is searchable: stored pieces, how many are embedded, and by kind."
    ),
    "DeletedWorkspace": (
        "What deleting a workspace removed (or, with dry_run, would remove): rows per kind of "
        "record, and whether it was a dry run."
    ),
    "CitationOutput": (
        "A result a synthesised answer rests on: its position in the results and its chunk id."
    ),
    "SynthesisErrorOutput": (
        "Why a synthesised answer is missing: the language model failed, timed out or "
        "answered something unreadable."
    ),
    "SynthesisOutput": (
        "The language model's answer to the query from the caller's own results, with the results "
        "it cites, or why there is none."
    ),
    "CompactionStats": "How far summarising is behind: sessions and messages not yet summarised.",
    "Consolidation": (
        "What consolidation did (or, with dry_run, would do): counts per action and the memories "
        "it deleted."
    ),
    "ConsolidationInput": (
        "Run consolidation now: merge duplicate facts, drop stale memories (dry_run only reports)."
    ),
    "Context": (
        "The memories to put in front of the next prompt, as Markdown and as items, within your"
        " token budget."
    ),
    "ContextInput": (
        "What to recall for the next prompt: the session, the end user, an optional query and a "
        "token budget."
    ),
    "ContextItemOutput": (
        "One memory in a context block: its text, where it comes from and why it was chosen."
    ),
    "Deleted": "The id of what was deleted.",
    "DeliveryOutput": "How delivering a run's result went: status, attempts and the last error.",
    "DocumentDeleted": "The deleted document and how many of its searchable pieces went with it.",
    "DocumentInput": (
        "A document to store and make searchable: its text, where it comes from, tags and owner."
    ),
    "EventAppend": "One message, or several under `events`, to add to a session.",
    "EventInput": (
        "One message of a conversation: role, content, and for tool use the tool's name, arguments "
        "and result."
    ),
    "SingleEventInput": "One message to add to a session.",
    "ToolFunctionInput": "The function a tool call names, with its arguments.",
    "ExplainOutput": (
        "Why a result ranked where it did: each signal's score and weight and the steps applied."
    ),
    "ExplainPartOutput": "One signal's part in a result's score (text match, meaning, recency…).",
    "ExplainStepOutput": "One step that changed a result's score or rank.",
    "ExportDocument": (
        "All memories of a tenant, a workspace or a session in one JSON document, to import "
        "elsewhere."
    ),
    "ExportInput": "What to export: the whole tenant, one workspace or one session.",
    "FactHistory": "Every version a fact has had, oldest first, with when each was valid.",
    "FactInput": (
        "A fact to remember about an end user or the tenant; one with the same key replaces the"
        " older one, which is kept in its history."
    ),
    "FactPatchInput": "The fact fields to change; those left out stay as they are.",
    "FactOutput": (
        "A fact: a short statement held true until replaced, with its category, key and owner."
    ),
    "FactUpserted": "The fact as stored, and whether it was created or replaced an older one.",
    "FactVersionOutput": "One version of a fact and the time it was valid.",
    "Forgotten": "The session that was deleted, with everything derived from it.",
    "EventsDeleted": (
        "The newest events of a session that were deleted, with what was derived from them."
    ),
    "ForgottenUser": "What was deleted of an end user, by kind.",
    "Health": "Whether the service answers.",
    "HealthDetails": (
        "How the service's own processes fared since it started: restarts after they stopped"
        " unexpectedly."
    ),
    "Imported": "What an import stored, skipped or merged.",
    "NoteInput": (
        "A note to store: free text an agent or person wants remembered, with tags and owner."
    ),
    "NoteOutput": "A note: free text remembered as written, searchable, with tags and owner.",
    "QueueStats": "Work waiting in the background: texts to embed and when they will be done.",
    "Ready": "Whether the service can take traffic, with each check's result.",
    "Restored": (
        "A session's recent history to resume a conversation: its summary and latest messages"
        " within a token budget."
    ),
    "RestoredSummaryRef": "The summary a restore started from.",
    "RollingSummary": "A session's running summary and the last message it covers.",
    "RunOutput": "One run of a schedule: when, its status, and what it produced.",
    "ScheduleInput": (
        "A schedule to create: what to do (an agent goal or a maintenance action), when, and whom "
        "to notify."
    ),
    "SchedulePatchInput": "The schedule fields to change; those left out stay as they are.",
    "ScheduleOutput": "A schedule: what it does, when, and its state.",
    "ScheduleDeleted": "The id of the deleted schedule.",
    "ScheduleStats": "Schedules by status and those failing.",
    "Scratchpad": (
        "A session's scratchpad: short key-value items an agent keeps while it works, with a"
        " version for safe concurrent writes."
    ),
    "ScratchpadCleared": "The scratchpad after clearing it.",
    "ScratchpadInput": (
        "The scratchpad's new items (replacing all of them); expected_version refuses a write "
        "over a newer one."
    ),
    "ScratchpadPatchInput": "Items to set or remove, leaving the others as they are.",
    "ScratchpadItem": "One scratchpad item.",
    "SearchInput": (
        "What to search for and where: the query, filters (session, user, tags, kinds, time) and "
        "how to rank."
    ),
    "SearchResults": "Search results, best first, optionally grouped by session.",
    "SearchResultOutput": "One search result: the text found, its score and where it comes from.",
    "SessionGroupOutput": "The results of one session, when results are grouped by session.",
    "SessionCreateInput": "A session to create: its id, end user, agent and where it belongs.",
    "SessionPatchInput": "The session fields to change; those left out stay as they are.",
    "SessionOutput": "A session: one conversation, with its end user, agent and state.",
    "Stats": (
        "Counts and backlogs of this tenant: sessions, messages, memories, and background work."
    ),
    "SummariseInput": "Summarise a session now, within this many tokens.",
    "Summarised": "The session's new summary and what summarising it did.",
    "SummaryPutInput": (
        "A summary written by you to replace the session's; expected_epoch refuses a write over "
        "a newer one."
    ),
    "TreeQueued": "The session whose summary tree will be rebuilt in the background.",
    "WebhookInput": (
        "A webhook to register: the URL MemoryHub calls on an event, and the secret it signs with."
    ),
    "WebhookOutput": "A registered webhook (its secret is never shown again).",
    "WebhookCreatedOutput": "The new webhook, with its signing secret: shown this once.",
    "WebhookDeleted": "The id of the deleted webhook.",
    "WebhookList": "Your registered webhooks.",
    "Error": "An error: a stable machine-readable `code`, a message for people, and details.",
    "EndUserOutput": (
        "An end user: how many of their sessions, facts and notes you may see, and their last"
        " activity."
    ),
    "KeyOutput": (
        "The API key the request carries: its tenant, the workspace and end user it is limited to,"
        " and its scopes (never its secret)."
    ),
}
# Pages of lists: "<Thing>Page" → the things it holds.
PAGE_ITEMS = {
    "Browse": "memories, newest first",
    "Channel": "channels",
    "Document": "documents",
    "EndUser": "end users, by user id",
    "Event": "messages of the session, in order",
    "Fact": "facts",
    "Note": "notes",
    "Run": "runs of the schedule",
    "Schedule": "schedules",
    "Session": "sessions",
    "SummaryNode": "summary nodes",
}


def schema_description(name: str) -> str | None:
    """The line SCHEMA_DESCRIPTIONS holds for a component, by its name or the name it derives
    from."""
    base = name.removeprefix("Patched")
    base = base.removesuffix("Request") if base not in SCHEMA_DESCRIPTIONS else base
    if base in SCHEMA_DESCRIPTIONS:
        return SCHEMA_DESCRIPTIONS[base]
    if base.endswith("Page") and base.removesuffix("Page") in PAGE_ITEMS:
        return (
            f"A page of {PAGE_ITEMS[base.removesuffix('Page')]} ({{count, next, previous,"
            " results})."
        )
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


def complete_schema(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the introduction, a description of every path parameter
    named in PATH_PARAMETERS, the error responses, and no unknown fields where they are refused."""
    result.setdefault("info", {})["description"] = DESCRIPTION
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if parameter.get("in") == "path" and parameter["name"] in PATH_PARAMETERS:
                    parameter.setdefault("description", PATH_PARAMETERS[parameter["name"]])
                if parameter.get("in") == "path" and parameter["name"] in PATH_PATTERNS:
                    parameter["schema"] = {
                        "type": "string",
                        "pattern": PATH_PATTERNS[parameter["name"]],
                    }
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
