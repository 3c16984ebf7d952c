"""Result shapes, as the service returns them (plain dicts, typed for editors and checkers).

The service may add fields; a TypedDict is a dict, so those fields are there too, just untyped.
Every shape is importable from here; they are written by area in _types_sessions.py,
_types_memory.py and _types_service.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from memoryhub_client._types_memory import (
    BrowsedEvent,
    Citation,
    Context,
    ContextItem,
    Deleted,
    Document,
    DocumentDeleted,
    Fact,
    FactHistory,
    FactUpserted,
    FactVersion,
    Memory,
    Note,
    SearchResponse,
    SearchResult,
    SessionGroup,
    Stats,
    Synthesis,
    SynthesisError,
)
from memoryhub_client._types_service import (
    Cadence,
    Channel,
    Consolidation,
    EndUser,
    Health,
    HealthDetails,
    Imported,
    KeyInfo,
    Ready,
    Run,
    Schedule,
    UserForgotten,
    Webhook,
    WebhookCreated,
    WebhookList,
    WorkspaceDeleted,
)
from memoryhub_client._types_sessions import (
    AppendedEvent,
    AppendResult,
    Event,
    EventIn,
    EventsDeleted,
    Json,
    Restored,
    Role,
    RollingSummary,
    Scratchpad,
    ScratchpadItem,
    Session,
    SessionForgotten,
    Summarised,
    SummaryExpanded,
    SummaryNode,
    ToolCall,
    TreeQueued,
)

T = TypeVar("T")


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


__all__ = [
    "AppendResult",
    "AppendedEvent",
    "BrowsedEvent",
    "Cadence",
    "Channel",
    "Citation",
    "Consolidation",
    "Context",
    "ContextItem",
    "Deleted",
    "Document",
    "DocumentDeleted",
    "EndUser",
    "KeyInfo",
    "Event",
    "EventIn",
    "Fact",
    "FactHistory",
    "FactUpserted",
    "FactVersion",
    "Health",
    "HealthDetails",
    "Imported",
    "Json",
    "Memory",
    "Note",
    "Page",
    "Ready",
    "Restored",
    "Role",
    "RollingSummary",
    "Run",
    "Schedule",
    "Scratchpad",
    "ScratchpadItem",
    "SearchResponse",
    "SearchResult",
    "Session",
    "SessionForgotten",
    "EventsDeleted",
    "SessionGroup",
    "Stats",
    "Summarised",
    "SummaryExpanded",
    "SummaryNode",
    "Synthesis",
    "SynthesisError",
    "T",
    "ToolCall",
    "TreeQueued",
    "UserForgotten",
    "Webhook",
    "WebhookCreated",
    "WebhookList",
    "WorkspaceDeleted",
]
