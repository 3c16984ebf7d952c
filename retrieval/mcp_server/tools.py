"""The MCP tools: each validates its arguments with the REST API's serializer and calls the same
domain function as the REST view, so a tool answers exactly what the endpoint answers.

A tool's `run(key, arguments)` returns the REST response body (a dict) or, for memory_context,
the body whose `markdown` is the text the agent reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from rest_framework import serializers

from accounts.models import ApiKey
from memoryhub import chat, end_users, event_log, facts, notes, scratchpad, sessions
from memoryhub.api.common import (
    LimitOffset,
    StrictSerializer,
    parse_input,
    parse_params,
    unknown_field_message,
)
from memoryhub.api.events import appended
from memoryhub.api.events_input import BulkEventInput
from memoryhub.api.facts_serializers import FactInput, FactOutput, FactUpserted, FactVersionOutput
from memoryhub.api.fields import NOTE_ID_REGEX, StrictCharField, StrictRegexField
from memoryhub.api.notes import NoteInput, NoteOutput, NotePutInput
from memoryhub.api.scratchpad import ScratchpadInput
from memoryhub.api.sessions import SessionCreateInput
from memoryhub.api.summaries import SummaryDetailParams, expand_node
from memoryhub.api.users import EndUserOutput
from retrieval import operations, stats
from retrieval.serializers import BrowseParams, ContextInput, SearchInput

Run = Callable[[ApiKey, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    schema: dict[str, Any]
    run: Run
    # The key scope a call needs: "read", "write", or a function of the arguments.
    scope: str | Callable[[dict[str, Any]], str]
    # Arguments of the mirrored REST endpoint that the tool does not offer a model
    # (catalog.OFFERED).
    rest_only: tuple[str, ...] = ()

    def scope_for(self, arguments: dict[str, Any]) -> str:
        return self.scope if isinstance(self.scope, str) else self.scope(arguments)

    def check_known(self, arguments: dict[str, Any]) -> None:
        """Refuse an argument the tool does not take, as the REST API refuses an unknown field."""
        known = list(self.schema.get("properties", {}))
        unknown = sorted(set(arguments) - set(known))
        if unknown:
            raise serializers.ValidationError(
                {
                    name: [
                        serializers.ErrorDetail(self._unknown(name, known), code="unknown_field")
                    ]
                    for name in unknown
                }
            )

    def _unknown(self, name: str, known: list[str]) -> str:
        if name in self.rest_only:
            return (
                f"Unknown field: this tool takes {', '.join(known)}; '{name}' is an option of the"
                " REST API only."
            )
        return unknown_field_message(name, known)


def _split(arguments: dict[str, Any], *names: str) -> tuple[list[Any], dict[str, Any]]:
    rest = dict(arguments)
    return [rest.pop(name, None) for name in names], rest


# --- search, context, browse, stats ---------------------------------------------------------------

SEARCH_ARGS = [
    "query",
    "mode",
    "scope",
    "session",
    "user_id",
    "channel",
    "workspace",
    "tags",
    "kinds",
    "roles",
    "agent",
    "since",
    "until",
    "as_of",
    "top_k",
    "case_sensitive",
    "explain",
    "group_by",
    "hits_per_session",
    "synthesize",
    "expand",
]


def run_search(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    return operations.search(key, parse_input(SearchInput, arguments))


CONTEXT_ARGS = ["query", "session", "user_id", "budget", "scope", "top_k", "tags", "kinds", "as_of"]


def run_context(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    return operations.context(key, parse_input(ContextInput, arguments))


BROWSE_ARGS = ["session", "user_id", "channel", "workspace", "agent", "role", "since", "until"]


def run_browse(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    (limit, offset), filters = _split(arguments, "limit", "offset")
    page = parse_params(
        LimitOffset, {k: v for k, v in (("limit", limit), ("offset", offset)) if v is not None}
    )
    qs = operations.browse(key, parse_params(BrowseParams, filters))
    start, stop = page["offset"], page["offset"] + page["limit"]
    count = qs.count()
    return {
        "count": count,
        "next_offset": stop if stop < count else None,
        "results": [operations.browsed(e) for e in qs[start:stop]],
    }


def run_stats(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    return stats.tenant_stats(key)


def run_users(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    """GET /users/'s rows (memoryhub.api.users), paged as memory_browse pages."""
    page = parse_params(LimitOffset, arguments)
    ids = end_users.end_user_ids(key)
    start, stop = page["offset"], page["offset"] + page["limit"]
    count = ids.count()
    rows = end_users.end_users(key, [row["user_id"] for row in ids[start:stop]])
    return {
        "count": count,
        "next_offset": stop if stop < count else None,
        "results": EndUserOutput(rows, many=True).data,
    }


# --- the conversation: remember, scratchpad, summaries --------------------------------------------

PLACEMENT_ARGS = ["user_id", "agent", "title", "channel", "workspace"]


EVENT_ARGS = [
    "role",
    "content",
    "tool_name",
    "tool_args",
    "tool_result",
    "metadata",
    "importance",
    "created_at",
    "idempotency_key",
]


def run_remember(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    (session_id, events), placement = _split(arguments, "session", "events")
    sent = events
    events = parse_input(BulkEventInput, {"events": events})["events"]
    with transaction.atomic():
        # the session is got or created with these fields first, as the Python client does
        if placement:
            data = parse_input(
                SessionCreateInput, {"id": session_id, "get_or_create": True, **placement}
            )
            data.pop("get_or_create")
            sessions.create_session(key=key, data=sessions.SessionInput(**data), get_or_create=True)
        items = [
            event_log.EventInput(**dict(e), message=chat.kept_message(raw))
            for e, raw in zip(events, sent, strict=True)
        ]
        result = event_log.append_events(
            key=key,
            session_id=_session_id(session_id),
            items=items,
            user_id=placement.get("user_id") or None,
        )
    return appended(result)


def _session_id(value: Any) -> str:
    return parse_input(SessionArg, {"session": value})["session"]


class SessionArg(StrictSerializer):
    session = serializers.CharField(max_length=200, help_text="The session (conversation) id.")


def run_scratchpad_read(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    return scratchpad.read(key, parse_input(SessionArg, arguments)["session"])


def run_scratchpad_write(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    (session_id,), rest = _split(arguments, "session")
    return scratchpad.write(
        key, _session_id(session_id), parse_input(ScratchpadInput, rest)["items"]
    )


def run_scratchpad_clear(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    """DELETE /sessions/{id}/scratchpad/: every item removed, the version up."""
    return scratchpad.clear(key, parse_input(SessionArg, arguments)["session"])


class SummaryArg(SummaryDetailParams):
    summary_id = serializers.IntegerField(
        min_value=1,
        help_text=(
            "The summary node's id (`id` in search results of kind summary, or GET /summaries/)."
        ),
    )


def run_summary_expand(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    params = parse_params(SummaryArg, arguments)
    return expand_node(key, params["summary_id"], events_limit=params["events_limit"])


# --- notes and facts ----------------------------------------------------------------------------

NOTE_ACTIONS = ("create", "update", "delete", "get")
NOTE_ARGS = [
    "content",
    "tags",
    "metadata",
    "source",
    "scope",
    "session",
    "workspace",
    "channel",
    "user_id",
    "importance",
]


class NoteArgs(StrictSerializer):
    action = serializers.ChoiceField(
        choices=NOTE_ACTIONS,
        help_text=(
            "create: a new note (note_id optional: one is made up); update: replace "
            "the note note_id (created if missing); delete: remove note_id; get: read note_id."
        ),
    )
    note_id = StrictRegexField(
        NOTE_ID_REGEX,
        help_text="The note's id: needed by update, delete and get; optional for create.",
    )


def _action(args: type[StrictSerializer], arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The call's action and the other arguments; no action is a missing one (not a null one)."""
    (action,), rest = _split(arguments, "action")
    if action is None:
        choices = ", ".join(args().fields["action"].choices)
        raise serializers.ValidationError(
            {
                "action": [
                    serializers.ErrorDetail(
                        f"This field is required: one of {choices}.", code="required"
                    )
                ]
            }
        )
    return parse_input(args, {"action": action}, partial=True)["action"], rest


def run_note(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    action, rest = _action(NoteArgs, arguments)
    if action == "create":
        return NoteOutput(notes.create_note(key, parse_input(NoteInput, rest))).data
    (note_id,), fields = _split(rest, "note_id")
    note_id = parse_input(NoteArgs, {"action": action, "note_id": note_id})["note_id"]
    if action == "update":
        note, created = notes.put_note(key, note_id, parse_input(NotePutInput, fields))
        return {**NoteOutput(note).data, "created": created}
    parse_input(StrictSerializer, fields)  # get and delete take nothing else
    if action == "delete":
        notes.delete_note(key, note_id)
        return {"id": note_id, "deleted": True}
    return NoteOutput(notes.get_note(key, note_id)).data


FACT_ACTIONS = ("upsert", "get", "history", "delete")
FACT_ARGS = [
    "content",
    "category",
    "key",
    "scope",
    "lifetime",
    "source",
    "importance",
    "tags",
    "metadata",
    "session",
    "source_session",
    "workspace",
    "channel",
    "user_id",
    "external_id",
]


class FactArgs(StrictSerializer):
    action = serializers.ChoiceField(
        choices=FACT_ACTIONS,
        help_text=(
            "upsert: store the fact, updating the user's fact with the same external_id (in the"
            " same workspace), or scope, category and key, if there is one (the old content stays"
            " in its history); get: read fact_id; history: every version of fact_id; delete: remove"
            " fact_id. get, history and delete also take external_id instead of fact_id (with"
            " user_id and workspace when other users or workspaces use the same id)."
        ),
    )
    fact_id = serializers.IntegerField(
        min_value=1,
        required=False,
        help_text=(
            "The fact's id (returned by upsert): needed by get, history "
            "and delete unless external_id names the fact."
        ),
    )
    external_id = StrictCharField(max_length=200, required=False)
    user_id = StrictCharField(max_length=200, required=False, allow_blank=True)
    workspace = StrictCharField(max_length=100, required=False, allow_blank=True)


def run_fact(key: ApiKey, arguments: dict[str, Any]) -> dict[str, Any]:
    action, rest = _action(FactArgs, arguments)
    if action == "upsert":
        # read back in the write's transaction: no commit behind an error
        with transaction.atomic():
            fact, created = facts.upsert_fact(key, parse_input(FactInput, rest), given=set(rest))
            return FactUpserted(facts.get_fact(key, fact.pk), context={"created": created}).data
    args = parse_input(FactArgs, {"action": action, **rest})
    if "fact_id" in args:
        fact_id = args["fact_id"]
    elif args.get("external_id"):
        fact_id = facts.fact_id_by_external_id(
            key, args["external_id"], user_id=args.get("user_id"), workspace=args.get("workspace")
        )
    else:
        raise serializers.ValidationError(
            {"fact_id": [f"{action} needs fact_id (or external_id)."]}, code="required"
        )
    if action == "delete":
        facts.delete_fact(key, fact_id)
        return {"id": str(fact_id), "deleted": True}
    if action == "history":
        return {
            "fact_id": fact_id,
            "versions": FactVersionOutput(facts.fact_history(key, fact_id), many=True).data,
        }
    return FactOutput(facts.get_fact(key, fact_id)).data


def note_scope(arguments: dict[str, Any]) -> str:
    return "read" if arguments.get("action") == "get" else "write"


def fact_scope(arguments: dict[str, Any]) -> str:
    return "read" if arguments.get("action") in ("get", "history") else "write"
