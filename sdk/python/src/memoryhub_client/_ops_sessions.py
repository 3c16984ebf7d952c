"""Sessions, events, restore, scratchpad, rolling summary and the summary tree (requests only)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from memoryhub_client._core import Call, as_is, body, page_of, path, query
from memoryhub_client.types import (
    AppendedEvent,
    AppendResult,
    Event,
    EventIn,
    EventsDeleted,
    Json,
    Page,
    Restored,
    Role,
    RollingSummary,
    Scratchpad,
    Session,
    SessionForgotten,
    Summarised,
    SummaryExpanded,
    SummaryNode,
    TreeQueued,
)

SessionStatus = Literal["active", "idle", "archived"]
# How events and restored messages come back: MemoryHub's own fields, or a chat API's messages
# (exactly as they were sent in that shape).
MessageFormat = Literal["native", "openai", "anthropic"]

# --- sessions ------------------------------------------------------------------------------------


def create_session(
    id: str | None = None,
    *,
    user_id: str | None = None,
    persistence_key: str | None = None,
    agent: str | None = None,
    channel: str | None = None,
    workspace: str | None = None,
    title: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    summary_budget: int | None = None,
    get_or_create: bool = False,
) -> Call[Session]:
    """Create a session (POST /sessions/); an existing `id` is a ConflictError (`session_exists`)
    unless `get_or_create`, which returns the existing session unchanged."""
    return Call(
        "POST",
        "sessions/",
        as_is,
        json=body(
            id=id,
            user_id=user_id,
            persistence_key=persistence_key,
            agent=agent,
            channel=channel,
            workspace=workspace,
            title=title,
            metadata=metadata,
            summary_budget=summary_budget,
            get_or_create=get_or_create or None,
        ),
        idempotent=get_or_create,
    )


def list_sessions(
    *,
    agent: str | None = None,
    channel: str | None = None,
    workspace: str | None = None,
    status: SessionStatus | None = None,
    persistence_key: str | None = None,
    user_id: str | None = None,
    q: str | None = None,
    include_archived: bool | None = None,
    ref_code: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[Session]]:
    """Sessions, newest activity first (GET /sessions/); `limit` is the page size. Archived ones
    only with `status="archived"` or `include_archived`; `ref_code` looks one up by its code."""
    return Call(
        "GET",
        "sessions/",
        page_of,
        params=query(
            agent=agent,
            channel=channel,
            workspace=workspace,
            status=status,
            persistence_key=persistence_key,
            user_id=user_id,
            q=q,
            include_archived=None if include_archived is None else str(include_archived).lower(),
            ref_code=ref_code,
            limit=limit,
            offset=offset,
        ),
        idempotent=True,
    )


def get_session(session_id: str, *, user_id: str | None = None) -> Call[Session]:
    """One session; with `user_id` it must be that end user's (a ConflictError `owner_mismatch`
    for another user's conversation or one of no user)."""
    return Call(
        "GET", path("sessions", session_id), as_is, params=query(user_id=user_id), idempotent=True
    )


def update_session(
    session_id: str,
    *,
    title: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    status: SessionStatus | None = None,
    agent: str | None = None,
    user_id: str | None = None,
    persistence_key: str | None = None,
    summary_budget: int | None = None,
) -> Call[Session]:
    """Change the given fields (PATCH /sessions/{id}/). Moving to the current status is a
    ConflictError (`invalid_status_transition`)."""
    return Call(
        "PATCH",
        path("sessions", session_id),
        as_is,
        json=body(
            title=title,
            metadata=metadata,
            status=status,
            agent=agent,
            user_id=user_id,
            persistence_key=persistence_key,
            summary_budget=summary_budget,
        ),
        idempotent=True,
    )


def delete_session(session_id: str) -> Call[SessionForgotten]:
    """Forget the session and everything derived from it (DELETE /sessions/{id}/)."""
    return Call("DELETE", path("sessions", session_id), as_is, idempotent=True)


# --- events --------------------------------------------------------------------------------------


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


def append_event(
    session_id: str,
    role: Role,
    content: str | Sequence[Mapping[str, Any]] | None = "",
    *,
    sequence: int | None = None,
    tool_name: str | None = None,
    tool_args: Json = None,
    tool_result: Json = None,
    tool_calls: Sequence[Mapping[str, Any]] | None = None,
    tool_call_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    importance: float | None = None,
    created_at: datetime | str | None = None,
    idempotency_key: str | None = None,
) -> Call[AppendedEvent]:
    """Append one event (POST /sessions/{id}/events/); an unknown session is created.

    `tool_calls` carries several calls [{id, name, arguments}] (a chat API's message as it is);
    `tool_call_id` names the call a tool result answers. `content` may also be null or a list of
    OpenAI content parts / Anthropic blocks, as chat APIs send it. An idempotency key is generated
    unless given, so a retried append is stored once."""
    event = body(
        role=role,
        content=[dict(p) for p in content]
        if isinstance(content, Sequence) and not isinstance(content, str)
        else content,
        sequence=sequence,
        tool_name=tool_name,
        tool_args=tool_args,
        tool_result=tool_result,
        tool_calls=[dict(c) for c in tool_calls] if tool_calls is not None else None,
        tool_call_id=tool_call_id,
        metadata=metadata,
        importance=importance,
        created_at=created_at,
        idempotency_key=idempotency_key or new_idempotency_key(),
    )
    if content is None:  # sent as null, as a chat API's assistant message with tool calls has it
        event["content"] = None
    return Call("POST", path("sessions", session_id, "events"), as_is, json=event, idempotent=True)


def keyed(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event as a JSON object with an idempotency key (its own, or a new one). A null content
    is kept: a chat API's assistant message with tool calls has one, and comes back as sent."""
    out = body(**event)
    if "content" in event and event["content"] is None:
        out["content"] = None
    out.setdefault("idempotency_key", new_idempotency_key())
    return out


def append_events(
    session_id: str, events: Sequence[EventIn | Mapping[str, Any]], *, user_id: str | None = None
) -> Call[AppendResult]:
    """Append events atomically ({"events": [...]}); each gets an idempotency key unless it has
    one, so a retried request stores nothing twice. With `user_id` the session must be that
    user's (a ConflictError `owner_mismatch` otherwise); a new session becomes theirs."""
    return Call(
        "POST",
        path("sessions", session_id, "events"),
        as_is,
        json=body(events=[keyed(e) for e in events], user_id=user_id),
        idempotent=True,
    )


def list_events(
    session_id: str,
    *,
    limit: int | None = None,
    after: int | None = None,
    before: int | None = None,
    format: MessageFormat | None = None,  # noqa: A002 - the API's parameter
    user_id: str | None = None,
) -> Call[Page[Event]]:
    """Events in sequence order (GET /sessions/{id}/events/). `limit` alone: the newest N (one
    page); with `after`, pages follow by sequence. `page.raw["last_sequence"]` is the session's.
    `format="openai"`/`"anthropic"`: each result is that chat API's message (as it was sent when
    it was sent in that shape), ready to send to the model again. With `user_id` the session
    must be that end user's (a ConflictError `owner_mismatch` otherwise)."""
    return Call(
        "GET",
        path("sessions", session_id, "events"),
        page_of,
        params=query(limit=limit, after=after, before=before, format=format, user_id=user_id),
        idempotent=True,
    )


def delete_events(
    session_id: str,
    *,
    after: int | None = None,
    limit: int | None = None,
    user_id: str | None = None,
) -> Call[EventsDeleted]:
    """Delete the session's newest events (DELETE /sessions/{id}/events/): those above sequence
    `after`, at most `limit` of them (neither: every event), with their search chunks and the
    summaries covering them; `results` holds the deleted events. With `user_id` the session must
    be that end user's. A tenant with an immutable transcript refuses (ConflictError
    `immutable_transcript`)."""
    return Call(
        "DELETE",
        path("sessions", session_id, "events"),
        as_is,
        params=query(after=after, limit=limit, user_id=user_id),
        idempotent=True,
    )


def event_pages(
    session_id: str,
    *,
    after: int = 0,
    before: int | None = None,
    limit: int | None = None,
    format: MessageFormat | None = None,  # noqa: A002 - the API's parameter
) -> Call[Page[Event]]:
    """Every event after sequence `after`, oldest first, `limit` per request (page size)."""
    return list_events(session_id, after=after, before=before, limit=limit, format=format)


def restore(
    session_id: str,
    *,
    budget: int | None = None,
    persistence: bool = False,
    format: MessageFormat | None = None,
) -> Call[Restored]:  # noqa: A002 - the API's parameter
    """The stored messages that fit in `budget` tokens, oldest first (the whole history when it
    fits, else the rolling summary first); `persistence` restores every session sharing this
    one's persistence key as one history. `format="openai"`/`"anthropic"`: the messages in that
    chat API's shape (anthropic: system text in `system`)."""
    return Call(
        "GET",
        path("sessions", session_id, "restore"),
        as_is,
        params=query(budget=budget, persistence="true" if persistence else None, format=format),
        idempotent=True,
    )


# --- scratchpad ----------------------------------------------------------------------------------


def get_scratchpad(session_id: str) -> Call[Scratchpad]:
    return Call("GET", path("sessions", session_id, "scratchpad"), as_is, idempotent=True)


def put_scratchpad(
    session_id: str,
    items: Sequence[Mapping[str, Any] | str] | Mapping[str, Any],
    *,
    expected_version: int | None = None,
) -> Call[Scratchpad]:
    """Replace the whole scratchpad: [{"key", "value"}, …], plain strings, or one {key: value};
    values are any JSON. With `expected_version`, only if nobody wrote since (else ConflictError
    stale_version)."""
    payload: Any = (
        dict(items)
        if isinstance(items, Mapping)
        else [item if isinstance(item, str) else dict(item) for item in items]
    )
    body: dict[str, Any] = {"items": payload}
    if expected_version is not None:
        body["expected_version"] = expected_version
    return Call(
        "PUT", path("sessions", session_id, "scratchpad"), as_is, json=body, idempotent=True
    )


def update_scratchpad(
    session_id: str,
    set: Mapping[str, Any] | None = None,
    *,
    remove: Sequence[str] = (),  # noqa: A002
    expected_version: int | None = None,
) -> Call[Scratchpad]:
    """Per-key writes: set these keys, remove those; the other items stay (PATCH)."""
    body: dict[str, Any] = {"set": dict(set or {}), "remove": list(remove)}
    if expected_version is not None:
        body["expected_version"] = expected_version
    return Call(
        "PATCH",
        path("sessions", session_id, "scratchpad"),
        as_is,
        json=body,
        idempotent=expected_version is not None,
    )


def clear_scratchpad(session_id: str) -> Call[Scratchpad]:
    return Call("DELETE", path("sessions", session_id, "scratchpad"), as_is, idempotent=True)


# --- summaries -----------------------------------------------------------------------------------


def get_summary(session_id: str) -> Call[RollingSummary]:
    return Call("GET", path("sessions", session_id, "summary"), as_is, idempotent=True)


def put_summary(
    session_id: str,
    text: str,
    *,
    expected_epoch: int | None = None,
    upper_sequence: int | None = None,
) -> Call[RollingSummary]:
    """Write the rolling summary; with `expected_epoch` a compare-and-swap (ConflictError
    `stale_epoch` when another writer got there first)."""
    return Call(
        "PUT",
        path("sessions", session_id, "summary"),
        as_is,
        json=body(text=text, expected_epoch=expected_epoch, upper_sequence=upper_sequence),
        # a resent compare-and-swap that had succeeded would fail as stale
        idempotent=expected_epoch is None,
    )


def summarise(session_id: str, *, budget: int | None = None) -> Call[Summarised]:
    """Apply the rolling-summary trigger now (POST /sessions/{id}/summary/), within `budget`
    tokens (default: the session's summary_budget, else the server's); `summarised` says whether
    a summary was written."""
    return Call("POST", path("sessions", session_id, "summary"), as_is, json=body(budget=budget))


def build_summary_tree(session_id: str, *, final: bool = False) -> Call[TreeQueued]:
    """Queue a build of the session's summary tree now (202)."""
    return Call(
        "POST",
        path("sessions", session_id, "summary", "tree"),
        as_is,
        params=query(final=final or None),
        idempotent=True,
    )


def list_summaries(
    *,
    session: str | None = None,
    level: Literal["leaf", "branch", "root"] | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> Call[Page[SummaryNode]]:
    return Call(
        "GET",
        "summaries/",
        page_of,
        params=query(session=session, level=level, limit=limit, offset=offset),
        idempotent=True,
    )


def expand_summary(node_id: int, *, events_limit: int | None = None) -> Call[SummaryExpanded]:
    """A summary node with its child nodes and its source events."""
    return Call(
        "GET",
        path("summaries", node_id),
        as_is,
        params=query(events_limit=events_limit),
        idempotent=True,
    )
