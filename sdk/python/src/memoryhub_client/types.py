"""Result shapes, as the service returns them (plain dicts, typed for editors and checkers).

The service may add fields; a TypedDict is a dict, so those fields are there too, just untyped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypedDict, TypeVar

T = TypeVar("T")

Role = Literal["user", "assistant", "tool", "system"]
Json = Any


@dataclass
class Page(Generic[T]):
    """One page of a list endpoint; `raw` is the whole response body (e.g. `last_sequence`)."""

    results: list[T]
    count: int | None = None
    next: str | None = None
    previous: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    def __iter__(self) -> Iterator[T]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, index: int) -> T:
        return self.results[index]


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
    """A single append: the event's fields, plus the session and how many events were new (0 or 1)."""

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
    value: Json  # any JSON value: a string of at most 240 characters, else at most 240 as compact JSON


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


# --- retrieval -----------------------------------------------------------------------------------


class SearchResult(TypedDict):
    chunk_id: int
    text: str
    score: float
    session: str | None
    sequence_start: int | None
    sequence_end: int | None
    kind: Literal["event", "note", "fact", "summary", "document"]
    metadata: dict[str, Any]
    created_at: str
    role: str | None
    tags: list[str]
    importance: float
    channel: str | None
    workspace: str | None
    user_id: str  # the end user it belongs to ("" for shared memories)
    embedded: bool  # False while the memory waits for its vector (found by full text meanwhile)
    scores: dict[str, float | None]


class SessionGroup(TypedDict):
    """A conversation of a grouped search (`group_by="session"`); its `hits` results follow one another."""

    session: str
    channel: str | None
    workspace: str | None
    score: float  # its evidence for the query, comparable within one response only
    hits: int


class Citation(TypedDict):
    index: int  # the cited result's position in `results`
    chunk_id: int


class SynthesisError(TypedDict):
    code: Literal["llm_unavailable", "llm_timeout", "llm_bad_reply"]
    message: str


class Synthesis(TypedDict, total=False):
    """search(synthesize=True): an answer with citations, or an error (the results still came back)."""

    answer: str
    citations: list[Citation]
    error: SynthesisError
    model: str


class _Grouped(TypedDict, total=False):
    group_by: Literal["session"]  # only when the request grouped
    sessions: list[SessionGroup]  # only when the request grouped: the conversations, best first
    synthesis: Synthesis  # only with synthesize=True


class SearchResponse(_Grouped):
    mode: str
    fusion: str
    scope: str
    profile: str
    results: list[SearchResult]


class ContextItem(TypedDict):
    source: Literal["recent", "critical", "salient", "relevant"]
    text: str
    score: float
    kind: str
    session: str | None
    sequence_start: int | None
    sequence_end: int | None
    created_at: str
    role: str | None
    chunk_id: int | None
    tokens: int


class Context(TypedDict):
    session: str
    budget: int
    tokens: int
    items: list[ContextItem]
    markdown: str


class BrowsedEvent(Event):
    session: str
    channel: str


class Document(TypedDict):
    id: int
    source_uri: str
    content_hash: str
    indexed: bool
    chunks: int
    metadata: dict[str, Any]
    session: str | None
    created_at: str
    updated_at: str


class DocumentDeleted(TypedDict):
    id: int
    deleted: bool
    chunks_deleted: int


Stats = dict[str, Any]


# --- notes and facts -----------------------------------------------------------------------------


class Note(TypedDict):
    id: str
    note_id: str
    content: str
    source: str
    tags: list[str]
    metadata: dict[str, Any]
    session: str | None
    workspace: str | None
    channel: str | None
    scope: str
    user_id: str
    importance: float
    created_at: str
    updated_at: str


class Fact(TypedDict):
    id: int
    external_id: str
    content: str
    category: str
    key: str
    scope: str
    lifetime: str
    source: str
    importance: float
    access_count: int
    accessed_at: str | None
    tags: list[str]
    metadata: dict[str, Any]
    session: str | None
    source_session: str | None
    workspace: str | None
    channel: str | None
    user_id: str
    created_at: str
    updated_at: str
    valid_from: str | None
    valid_to: str | None


class FactUpserted(Fact):
    created: bool


class FactVersion(TypedDict):
    fact_id: int
    content: str
    category: str
    key: str
    user_id: str
    source: str
    change: str
    valid_from: str
    valid_to: str | None
    closed_by: str
    current: bool


class FactHistory(TypedDict):
    fact_id: int
    versions: list[FactVersion]


class Deleted(TypedDict):
    id: str
    deleted: bool


class Memory(TypedDict):
    """A note or a fact in one shape (get_all): `id` is "note:<note_id>" or "fact:<fact id>", the
    form delete() and history() take; `record` is the note or fact as the service returns it."""

    id: str
    kind: Literal["note", "fact"]
    memory: str  # its text
    user_id: str
    tags: list[str]
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    record: dict[str, Any]


# --- channels, webhooks, consolidation -----------------------------------------------------------


class Channel(TypedDict):
    id: int
    name: str
    description: str
    workspace: str
    is_default: bool
    created_at: str


class Webhook(TypedDict):
    id: str
    kind: Literal["agent", "notification"]
    url: str
    description: str
    created_at: str


class WebhookCreated(Webhook):
    secret: str  # shown this once


class WebhookList(TypedDict):
    results: list[Webhook]


class Consolidation(TypedDict):
    dry_run: bool
    report_id: int | None
    counts: dict[str, int]
    deletions: list[dict[str, Any]]


# --- schedules and runs --------------------------------------------------------------------------


class Cadence(TypedDict, total=False):
    type: Literal["cron", "once", "interval"]
    value: Json
    timezone: str
    description: str


class Schedule(TypedDict):
    id: str
    name: str
    goal: str
    action: str
    params: dict[str, Any]
    cadence: Cadence
    user_id: str
    notification_policy: str
    channel: str
    workspace: str | None
    status: str
    next_run_at: str | None
    next_run_local: str
    last_run_at: str | None
    last_run_local: str
    last_run_status: str
    consecutive_failures: int
    created_at: str
    updated_at: str


class Run(TypedDict):
    id: str
    run_id: str
    schedule: str
    manual: bool
    due_at: str | None
    started_at: str | None
    finished_at: str | None
    status: str
    error: str
    output_summary: str
    output: Json
    turn_count: int
    cost: float
    notified: bool


# --- lifecycle and health ------------------------------------------------------------------------


class Imported(TypedDict):
    """What an import did; `skipped`/`merged` count rows the tenant held already (on_conflict)."""

    on_conflict: Literal["fail", "skip", "merge"]
    imported: dict[str, int]
    skipped: dict[str, int]
    merged: dict[str, int]
    skipped_sessions: list[str]
    merged_sessions: list[str]


class EndUser(TypedDict):
    """An end user who owns sessions, facts or notes the key may see (list_users)."""

    user_id: str
    sessions: int
    facts: int
    notes: int
    last_activity: str | None


class UserForgotten(TypedDict):
    user_id: str
    deleted: dict[str, int]
    total: int
    redacted: dict[str, int]


class WorkspaceDeleted(TypedDict):
    workspace: str
    dry_run: bool
    deleted: dict[str, int]
    total: int


class HealthDetails(TypedDict):
    restarts: int
    restarted: dict[str, int]


class Health(TypedDict):
    status: str
    details: HealthDetails


class Ready(TypedDict):
    status: Literal["ready", "not_ready"]
    checks: dict[str, str]
