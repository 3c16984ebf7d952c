"""Result shapes of sessions, events, scratchpads and summaries (re-exported by types.py)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

Role = Literal["user", "assistant", "tool", "system"]
Json = Any


# --- sessions and events -------------------------------------------------------------------------


class Session(TypedDict):
    id: str
    user_id: str
    persistence_key: str
    agent: str
    workspace: str
    channel: str
    title: str
    metadata: dict[str, Any]
    status: str
    ref_code: str
    summary_budget: int | None
    event_count: int
    last_sequence: int
    created_at: str
    updated_at: str
    ended_at: str | None


class SessionForgotten(TypedDict):
    id: str
    deleted: dict[str, int]


class EventsDeleted(TypedDict):
    session: str
    deleted: dict[str, int]
    results: list[Event]


class ToolCall(TypedDict):
    """One of several tool calls in a message, as chat APIs send them."""

    id: str
    name: str
    arguments: Json


class EventIn(TypedDict, total=False):
    """One event to append; only `role` and one of content/tool_name/tool_calls/tool_result/
    tool_call_id are needed."""

    role: Role
    content: str
    sequence: int
    tool_name: str
    tool_args: Json
    tool_result: Json
    tool_calls: list[ToolCall]
    tool_call_id: str
    metadata: dict[str, Any]
    importance: float
    created_at: str
    idempotency_key: str


class Event(TypedDict):
    id: int
    sequence: int
    role: Role
    content: str
    tool_name: str | None
    tool_args: Json
    tool_result: Json
    tool_calls: list[ToolCall] | None
    tool_call_id: str | None
    metadata: dict[str, Any]
    importance: float
    idempotency_key: str | None
    created_at: str
    consolidated_at: str | None  # when extraction or consolidation covered it; None: not yet


class AppendedEvent(Event):
    """A single append: the event's fields, plus the session and how many events were new (0
    or 1)."""

    session: str
    created: int


class AppendResult(TypedDict):
    session: str
    created: int
    events: list[Event]


class _Restored(TypedDict):
    session: str
    budget: int
    tokens: int
    truncated: bool
    omitted: int
    summary_epoch: int | None
    sessions: list[str]
    messages: list[dict[str, Any]]


class Restored(_Restored, total=False):
    """The stored messages verbatim, oldest first; a leading system message with `summaries` only
    when the whole history did not fit in the budget. With format="openai"/"anthropic" the messages
    are that chat API's; `system` (anthropic only) holds the system messages' text."""

    system: str | None


class ScratchpadItem(TypedDict):
    key: str
    # any JSON value: a string of at most 240 characters, else at most 240 as compact JSON
    value: Json


class Scratchpad(TypedDict):
    session: str
    items: list[ScratchpadItem]
    count: int
    version: int
    updated_at: str | None


class RollingSummary(TypedDict):
    session: str
    text: str
    epoch: int
    upper_sequence: int
    updated_at: str | None


class SummaryNode(TypedDict):
    id: int
    level: Literal["leaf", "branch", "root"]
    depth: int
    text: str
    session: str
    parent: int | None
    sequence_start: int
    sequence_end: int
    source_count: int
    token_count: int
    summariser: str
    model: str  # "extractive", or the HTTP summariser's model
    earliest_at: str | None  # time of the first event covered
    latest_at: str | None
    created_at: str


class SummaryExpanded(SummaryNode):
    node: SummaryNode
    children: list[SummaryNode]
    events: list[dict[str, Any]]
    events_truncated: bool


class Summarised(RollingSummary, total=False):
    summarised: bool  # whether the trigger fired and a summary was written
    budget: int
    condensed: int
    remaining_tokens: int
    summariser: str
    messages: int
    tokens: int
    stale: bool


class TreeQueued(TypedDict):
    session: str
    queued: bool
