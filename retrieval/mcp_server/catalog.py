"""The list of MCP tools an agent sees: names, descriptions and argument schemas (read off the REST
serializers that validate them, see schema.py), each bound to its run function in tools.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memoryhub import scratchpad
from memoryhub.api.events_input import EventInput
from memoryhub.api.facts_serializers import FactInput
from memoryhub.api.notes import NoteInput
from memoryhub.api.sessions import SessionCreateInput
from memoryhub.event_log import MAX_BULK_EVENTS
from retrieval.mcp_server import tools
from retrieval.mcp_server.schema import field_schema, object_schema
from retrieval.serializers import BrowseParams, ContextInput, SearchInput


def _with(
    base: dict[str, Any], extra: dict[str, dict[str, Any]], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """`base` with `extra` properties first and `required` added."""
    schema = {**base, "properties": {**extra, **base["properties"]}}
    if required:
        schema["required"] = [*required, *base.get("required", [])]
    return schema


def _session_prop(description: str) -> dict[str, dict[str, Any]]:
    return {
        "session": {
            **field_schema(tools.SessionArg().fields["session"]),
            "description": description,
        }
    }


def _page_props(what: str = "events") -> dict[str, dict[str, Any]]:
    fields = tools.LimitOffset().fields
    return {
        "limit": {
            **field_schema(fields["limit"]),
            "description": f"At most this many {what} (default 50).",
        },
        "offset": {
            **field_schema(fields["offset"]),
            "description": "Skip this many events (paging: the previous answer's next_offset).",
        },
    }


def _scratchpad_items() -> dict[str, Any]:
    chars = scratchpad.MAX_CHARS
    return {
        "type": "array",
        "maxItems": scratchpad.MAX_ITEMS,
        "description": "The whole new scratchpad, in order (an empty list clears it).",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": ["key", "value"],
            "properties": {
                "key": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": chars,
                    "description": "The item's name.",
                },
                "value": {"type": "string", "maxLength": chars, "description": "The item's text."},
            },
        },
    }


def _events_prop() -> dict[str, dict[str, Any]]:
    item = object_schema(EventInput, tools.EVENT_ARGS, required=("role",))
    return {
        "events": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_BULK_EVENTS,
            "items": item,
            "description": "The messages to store, oldest first: each has a role "
            "and content (or a tool call). All are stored or none.",
        }
    }


def _props(serializer: type, *names: str) -> dict[str, dict[str, Any]]:
    fields = serializer().fields
    return {name: field_schema(fields[name]) for name in names}


# What a model reads of each argument: a few words, or none where the name and type say it all,
# since the catalogue sits in every agent's context before it asks anything. The REST serializers'
# help_text (the OpenAPI reference) says the rest; a tool's errors name what to send instead.
BRIEF = {
    "budget": "Tokens.",
    "importance": "0-1; 0.85+ always recalled.",
    "key": "Same key, same fact.",
    "external_id": "Your id; the same id updates it.",
    "expand": "Summaries with their messages.",
}
# Arguments whose name and type say it all to a model: no description.
SELF_EVIDENT = frozenset(
    {
        "session",
        "workspace",
        "channel",
        "agent",
        "kinds",
        "role",
        "since",
        "until",
        "top_k",
        "limit",
        "offset",
        "events",
        "content",
        "tool_name",
        "tool_args",
        "tool_result",
        "tags",
        "note_id",
        "fact_id",
        "category",
        "summary_id",
        "events_limit",
        "items",
        "key",
        "value",
        "scope",
        "title",
        "user_id",
        "mode",
        "as_of",
        "lifetime",
        "created_at",
        "query",
        "synthesize",
    }
)
EVENT_BRIEF = {
    "idempotency_key": "Resending it stores nothing twice.",
}
# Per tool: what an argument means there, where that differs from BRIEF (or adds to it).
PER_TOOL = {
    "memory_context": {"query": "The user's message."},
    "memory_note": {"action": "update, get, delete need note_id."},
    "memory_fact": {"action": "get, history, delete: by fact_id or external_id."},
}
# The arguments a model needs; the REST endpoint a tool mirrors takes the rest (explain, group_by,
# roles, metadata, …), and a tool refuses those as unknown with the nearest name it takes.
OFFERED = {
    "memory_search": (
        "query",
        "mode",
        "scope",
        "session",
        "user_id",
        "workspace",
        "tags",
        "kinds",
        "agent",
        "since",
        "until",
        "as_of",
        "top_k",
        "synthesize",
        "expand",
    ),
    "memory_context": ("query", "session", "user_id", "budget", "scope", "as_of"),
    "memory_browse": ("session", "user_id", "role", "since", "until", "limit", "offset"),
    "summary_expand": ("summary_id", "events_limit"),
    "memory_remember": ("session", "events", "user_id", "agent", "title", "channel", "workspace"),
    "memory_note": (
        "action",
        "note_id",
        "content",
        "scope",
        "session",
        "user_id",
        "tags",
        "importance",
    ),
    "memory_fact": (
        "action",
        "fact_id",
        "content",
        "category",
        "key",
        "scope",
        "session",
        "user_id",
        "importance",
        "lifetime",
        "external_id",
    ),
}
OFFERED_EVENT = (
    "role",
    "content",
    "tool_name",
    "tool_args",
    "tool_result",
    "created_at",
    "idempotency_key",
)


def lean(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as a model reads it: the arguments it needs, their types and brief descriptions.
    Limits and defaults are the REST schema's: the server refuses a value out of bounds with an
    error that says what to send instead."""
    return _lean(schema, OFFERED.get(tool), BRIEF | PER_TOOL.get(tool, {}))


def _lean(
    schema: dict[str, Any], offered: tuple[str, ...] | None, briefs: dict[str, str]
) -> dict[str, Any]:
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        if offered is not None and name not in offered:
            continue
        prop = {
            k: v
            for k, v in prop.items()
            if k in ("type", "enum", "format", "items", "anyOf", "minItems")
        }
        if name in briefs:
            prop["description"] = briefs[name]
        # message content: a model sends text (chat APIs' lists are accepted too)
        if "anyOf" in prop:
            prop = {"type": "string", **{k: v for k, v in prop.items() if k != "anyOf"}}
        if name == "events":
            prop["items"] = _lean(prop["items"], OFFERED_EVENT, EVENT_BRIEF)
        # scratchpad items
        elif isinstance(prop.get("items"), dict) and "properties" in prop["items"]:
            prop["items"] = _lean(prop["items"], None, {})
        if prop.get("enum") and "session" in prop["enum"] and "conversation" in prop["enum"]:
            # the REST alias, not a model's choice
            prop["enum"] = [e for e in prop["enum"] if e != "session"]
        properties[name] = prop
    return {k: v for k, v in schema.items() if k != "additionalProperties"} | {
        "properties": properties
    }


def build() -> list[tools.ToolSpec]:
    """The tools as a client lists them (see _specs), with lean schemas; what a tool leaves out of
    its REST endpoint's arguments is named as such when sent."""
    built = []
    for spec in _specs():
        schema = lean(spec.name, spec.schema)
        rest_only = tuple(
            name for name in spec.schema["properties"] if name not in schema["properties"]
        )
        built.append(replace(spec, schema=schema, rest_only=rest_only))
    return built


def _specs() -> list[tools.ToolSpec]:
    """The tools, built when the server starts (schemas read settings such as the limits).

    One list on purpose (over 60 lines): it is the catalogue itself, a declaration per tool with
    no logic between them, read top to bottom as the client lists them."""
    return [
        tools.ToolSpec(
            "memory_search",
            "Search memory",
            "Find messages, notes, facts, summaries and documents by meaning and words.",
            object_schema(SearchInput, tools.SEARCH_ARGS, required=("query",)),
            tools.run_search,
            "read",
        ),
        tools.ToolSpec(
            "memory_context",
            "Memory context",
            "Memory for your next answer: summary, recent messages, key and relevant memories.",
            object_schema(ContextInput, tools.CONTEXT_ARGS),
            tools.run_context,
            "read",
        ),
        tools.ToolSpec(
            "memory_browse",
            "Browse messages",
            "List stored messages oldest first, by session, user, role or period.",
            _with(object_schema(BrowseParams, tools.BROWSE_ARGS), _page_props()),
            tools.run_browse,
            "read",
        ),
        tools.ToolSpec(
            "memory_stats",
            "Memory statistics",
            "Counts of what is stored and of work still queued.",
            {"type": "object", "properties": {}, "additionalProperties": False},
            tools.run_stats,
            "read",
        ),
        tools.ToolSpec(
            "memory_users",
            "End users",
            "End users this key may see, with counts and last activity.",
            {"type": "object", "properties": _page_props("users"), "additionalProperties": False},
            tools.run_users,
            "read",
        ),
        tools.ToolSpec(
            "memory_remember",
            "Remember messages",
            "Store conversation messages; give the end user's user_id.",
            _with(
                object_schema(SessionCreateInput, tools.PLACEMENT_ARGS),
                {
                    **_session_prop("The session (conversation) id; created if it does not exist."),
                    **_events_prop(),
                },
                required=("session", "events"),
            ),
            tools.run_remember,
            "write",
        ),
        tools.ToolSpec(
            "memory_note",
            "Notes",
            "Memories you write yourself: a preference, a decision, a to-do.",
            _with(
                object_schema(NoteInput, tools.NOTE_ARGS),
                _props(tools.NoteArgs, "action", "note_id"),
                required=("action",),
            ),
            tools.run_note,
            tools.note_scope,
        ),
        tools.ToolSpec(
            "memory_fact",
            "Facts",
            "Statements about the user or world; an upsert by key keeps the old version.",
            _with(
                object_schema(FactInput, tools.FACT_ARGS),
                _props(tools.FactArgs, "action", "fact_id"),
                required=("action",),
            ),
            tools.run_fact,
            tools.fact_scope,
        ),
        tools.ToolSpec(
            "scratchpad_read",
            "Read scratchpad",
            "The session's working state: ordered key/value items.",
            {
                "type": "object",
                "properties": _session_prop("The session whose scratchpad to read."),
                "required": ["session"],
                "additionalProperties": False,
            },
            tools.run_scratchpad_read,
            "read",
        ),
        tools.ToolSpec(
            "scratchpad_write",
            "Write scratchpad",
            "Replace the session's whole scratchpad with items, in order.",
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["session", "items"],
                "properties": {
                    **_session_prop("The session whose scratchpad to replace."),
                    "items": _scratchpad_items(),
                },
            },
            tools.run_scratchpad_write,
            "write",
        ),
        tools.ToolSpec(
            "scratchpad_clear",
            "Clear scratchpad",
            "Remove every item of the session's scratchpad.",
            {
                "type": "object",
                "properties": _session_prop("The session whose scratchpad to clear."),
                "required": ["session"],
                "additionalProperties": False,
            },
            tools.run_scratchpad_clear,
            "write",
        ),
        tools.ToolSpec(
            "summary_expand",
            "Expand summary",
            "A summary's finer summaries and the messages it condenses.",
            object_schema(
                tools.SummaryArg, ["summary_id", "events_limit"], required=("summary_id",)
            ),
            tools.run_summary_expand,
            "read",
        ),
    ]
