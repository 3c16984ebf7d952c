"""The list of MCP tools an agent sees: names, descriptions and argument schemas (read off the REST
serializers that validate them, see schema.py), each bound to its run function in tools.py."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from memoryhub.api.facts import FactInput
from memoryhub.api.notes import NoteInput
from memoryhub.api.sessions import EventInput, SessionCreateInput
from retrieval.mcp_server import tools
from retrieval.mcp_server.schema import field_schema, object_schema
from retrieval.serializers import BrowseParams, ContextInput, SearchInput


def _with(base: dict[str, Any], extra: dict[str, dict[str, Any]], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """`base` with `extra` properties first and `required` added."""
    schema = {**base, "properties": {**extra, **base["properties"]}}
    if required:
        schema["required"] = [*required, *base.get("required", [])]
    return schema


def _session_prop(description: str) -> dict[str, dict[str, Any]]:
    return {"session": {**field_schema(tools.SessionArg().fields["session"]), "description": description}}


def _page_props() -> dict[str, dict[str, Any]]:
    fields = tools.LimitOffset().fields
    return {
        "limit": {**field_schema(fields["limit"]), "description": "At most this many events (default 50)."},
        "offset": {**field_schema(fields["offset"]), "description": "Skip this many events (paging: the "
                                                                     "previous answer's next_offset)."},
    }


def _scratchpad_items() -> dict[str, Any]:
    chars = settings.MEMORYHUB_SCRATCHPAD_MAX_CHARS
    return {
        "type": "array", "maxItems": settings.MEMORYHUB_SCRATCHPAD_MAX_ITEMS,
        "description": "The whole new scratchpad, in order (an empty list clears it).",
        "items": {"type": "object", "additionalProperties": False, "required": ["key", "value"], "properties": {
            "key": {"type": "string", "minLength": 1, "maxLength": chars, "description": "The item's name."},
            "value": {"type": "string", "maxLength": chars, "description": "The item's text."},
        }},
    }


def _events_prop() -> dict[str, dict[str, Any]]:
    item = object_schema(EventInput, tools.EVENT_ARGS, required=("role",))
    return {"events": {"type": "array", "minItems": 1, "maxItems": settings.MEMORYHUB_MAX_BULK_EVENTS,
                       "items": item, "description": "The messages to store, oldest first: each has a role "
                       "and content (or a tool call). All are stored or none."}}


def _props(serializer: type, *names: str) -> dict[str, dict[str, Any]]:
    fields = serializer().fields
    return {name: field_schema(fields[name]) for name in names}


def build() -> list[tools.ToolSpec]:
    """The tools, built when the server starts (schemas read settings such as the limits).

    One list on purpose (over 60 lines): it is the catalogue itself, a declaration per tool with
    no logic between them, read top to bottom as the client lists them."""
    return [
        tools.ToolSpec(
            "memory_search", "Search memory",
            "Search everything remembered (conversation messages, notes, facts, summaries, documents) "
            "by meaning and by words. Returns the best matches with their text, score, kind and origin. "
            "Narrow with scope/session/user_id and the filters; mode 'hybrid' (default) suits most "
            "questions, 'text' matches exact words (a misspelt word also matches the closest stored ones), "
            "'fuzzy' also widens correctly spelt words to similar ones, 'vector' matches meaning only, "
            "'exact' a substring and 'regex' a regular expression (e.g. INV-\\d{4}; newest matches first). "
            "synthesize: true also answers the query from the results with the server's language model "
            "(`synthesis`: answer and the results it cites), where one is configured.",
            object_schema(SearchInput, tools.SEARCH_ARGS, required=("query",)),
            tools.run_search, "read",
        ),
        tools.ToolSpec(
            "memory_context", "Get the memory context block",
            "Build the memory block to put in front of the next prompt: recent messages of the "
            "session, important memories and those relevant to `query`, within a token budget, as "
            "Markdown ('## Relevant Memory ...'). Empty when nothing relevant is stored. Give the "
            "session (its user is implied) or a user_id to recall one user's memories.",
            object_schema(ContextInput, tools.CONTEXT_ARGS),
            tools.run_context, "read",
        ),
        tools.ToolSpec(
            "memory_browse", "Browse stored messages",
            "List stored conversation messages in time order (oldest first), across sessions or "
            "for one session, user, channel or period. Pages with limit/offset.",
            _with(object_schema(BrowseParams, tools.BROWSE_ARGS), _page_props()),
            tools.run_browse, "read",
        ),
        tools.ToolSpec(
            "memory_stats", "Memory statistics",
            "Counts of what is stored for this API key's tenant (or workspace): sessions, events, "
            "chunks and their embedding coverage, notes, facts, summaries, schedules, queued work.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            tools.run_stats, "read",
        ),
        tools.ToolSpec(
            "memory_remember", "Remember messages",
            "Store messages of a conversation (session) so they can be recalled later; the session "
            "is created if it does not exist. Give user_id (and optionally agent, title, channel, "
            "workspace) to create it for that end user; with user_id the session must be that user's "
            "(another user's or an unowned one is an owner_mismatch error). An idempotency_key per message makes a "
            "retried call store nothing twice.",
            _with(object_schema(SessionCreateInput, tools.PLACEMENT_ARGS),
                  {**_session_prop("The session (conversation) id; created if it does not exist."),
                   **_events_prop()}, required=("session", "events")),
            tools.run_remember, "write",
        ),
        tools.ToolSpec(
            "memory_note", "Create, update, delete or read a note",
            "Notes are free-text memories the agent writes itself (a preference, a decision, a "
            "to-do), searchable like everything else. action=create makes one; update replaces "
            "note_id's content and fields; delete removes it; get reads it. scope says how widely "
            "it applies: conversation (needs session), channel, workspace (default) or account.",
            _with(object_schema(NoteInput, tools.NOTE_ARGS), _props(tools.NoteArgs, "action", "note_id"),
                  required=("action",)),
            tools.run_note, tools.note_scope,
        ),
        tools.ToolSpec(
            "memory_fact", "Upsert, read or delete a fact",
            "Facts are short statements about the user or the world (\"prefers tea\"), kept by "
            "category and key: an upsert with the same scope, category and key updates the fact "
            "instead of adding a duplicate. action=upsert stores (returns its id and whether it was "
            "created); get reads fact_id (or external_id); delete removes it.",
            _with(object_schema(FactInput, tools.FACT_ARGS), _props(tools.FactArgs, "action", "fact_id"),
                  required=("action",)),
            tools.run_fact, tools.fact_scope,
        ),
        tools.ToolSpec(
            "scratchpad_read", "Read the session scratchpad",
            "Read the session's scratchpad: a short ordered list of key/value items the agent keeps "
            "as working state (plan, open questions) across turns.",
            {"type": "object", "properties": _session_prop("The session whose scratchpad to read."),
             "required": ["session"], "additionalProperties": False},
            tools.run_scratchpad_read, "read",
        ),
        tools.ToolSpec(
            "scratchpad_write", "Replace the session scratchpad",
            "Replace the whole scratchpad of the session with `items` (key/value pairs, in order). "
            f"At most {settings.MEMORYHUB_SCRATCHPAD_MAX_ITEMS} items of at most "
            f"{settings.MEMORYHUB_SCRATCHPAD_MAX_CHARS} characters each; a bad item changes nothing.",
            {"type": "object", "additionalProperties": False, "required": ["session", "items"], "properties": {
                **_session_prop("The session whose scratchpad to replace."), "items": _scratchpad_items()}},
            tools.run_scratchpad_write, "write",
        ),
        tools.ToolSpec(
            "summary_expand", "Expand a summary",
            "Open a summary of a conversation (a search or context result of kind 'summary') to "
            "its more detailed child summaries and the original messages it condenses.",
            object_schema(tools.SummaryArg, ["summary_id", "events_limit"], required=("summary_id",)),
            tools.run_summary_expand, "read",
        ),
    ]
