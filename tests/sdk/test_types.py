"""The client's result shapes stay importable from `memoryhub_client.types`, the module the README
points to, whichever file of the package defines them."""

from __future__ import annotations

import typing

import memoryhub_client.types as types

# Every name `memoryhub_client.types` offered when the shapes were one file.
PUBLIC = {
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
    "EventsDeleted",
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
}


def test_every_shape_is_importable_from_types() -> None:
    assert set(types.__all__) == PUBLIC
    for name in PUBLIC:
        assert getattr(types, name) is not None, name
    from memoryhub_client.types import BrowsedEvent, Event, Fact, Page, Schedule  # noqa: F401


def test_every_shape_s_field_types_resolve() -> None:
    """Each TypedDict's annotations name types its own module defines or imports (a shape that
    inherits from another file's, as BrowsedEvent from Event, included)."""
    shapes = [getattr(types, n) for n in sorted(PUBLIC)]
    typed_dicts = [s for s in shapes if isinstance(s, type) and issubclass(s, dict)]
    assert len(typed_dicts) > 40
    for shape in typed_dicts:
        hints = typing.get_type_hints(shape)
        assert hints, shape.__name__
    assert "role" in typing.get_type_hints(types.BrowsedEvent)
