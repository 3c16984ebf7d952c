"""The placement fields have one definition, memoryhub/api/placement.py: every serializer of the
API (memoryhub's, retrieval's, scheduling's, the MCP tools') declares `session`, `workspace`,
`channel`, `scope`, `user_id`, `agent`, `tags` and `metadata` through it, so one field reads the
same on every endpoint. The exceptions below share a name but not the meaning: they name the one
thing a request addresses (the session of the path, what an export covers, a deleted workspace),
or belong to another vocabulary (mem0's API, a schedule's notification channel, a search's
range)."""

from __future__ import annotations

import importlib

from rest_framework import serializers

from memoryhub.api.placement import session_field, user_field, workspace_field

PLACEMENT = {"session", "workspace", "channel", "scope", "user_id", "agent", "tags", "metadata"}
# Every module that declares serializers: the routes reach all but the MCP tools'.
MODULES = ("memoryhub.urls", "retrieval.mcp_server.tools", "retrieval.mem0_compat.views")

_THE_SESSION_ADDRESSED = ("session",)
OTHER_MEANINGS: dict[str, tuple[str, ...]] = {
    # the session the path (or the tool's argument) names, echoed in the answer
    **dict.fromkeys(
        (
            "AppendedOutput",
            "EventPage",
            "EventsDeleted",
            "Restored",
            "RollingSummary",
            "Scratchpad",
            "ScratchpadCleared",
            "SessionArg",
            "Summarised",
            "TreeQueued",
        ),
        _THE_SESSION_ADDRESSED,
    ),
    "Context": ("session", "user_id"),  # what a context was asked for, echoed
    "SearchResults": ("scope",),  # the range a search read, echoed
    # how far a search or a context reads, not a row's tier (retrieval/serializers.py, SCOPE_HELP)
    "SearchInput": ("scope",),
    "ContextInput": ("scope",),
    "ExportInput": ("scope", "workspace", "session", "user_id"),  # what an export covers
    "ExportDocument": ("scope",),
    "FactByExternalIdParams": ("workspace", "user_id"),  # which fact a client id names
    "FactArgs": ("workspace", "user_id"),  # the same, for the MCP fact tool (and an upsert's owner)
    "EndUserOutput": ("user_id",),  # the end user listed
    "DeletedWorkspace": ("workspace",),
    "ForgottenUser": ("user_id",),
    "KeyOutput": ("workspace", "user_id"),  # what a key is limited to, not where a row lives
    # mem0's own API, in mem0's words
    "AddInput": ("user_id", "metadata"),
    "BatchUpdateItem": ("metadata",),
    "DeleteAllParams": ("user_id",),
    "Entities": ("user_id",),
    "UpdateInput": ("metadata",),
    # a schedule's channel is where its notifications go; its workspace is computed (worded by
    # workspace_field)
    "ScheduleInput": ("channel",),
    "SchedulePatchInput": ("channel",),
    "ScheduleListParams": ("channel",),
    "ScheduleOutput": ("workspace",),
}


def serializer_classes() -> list[type[serializers.Serializer]]:
    for module in MODULES:
        importlib.import_module(module)
    found: set[type[serializers.Serializer]] = set()
    todo = [serializers.Serializer]
    while todo:
        for cls in todo.pop().__subclasses__():
            if cls not in found:
                found.add(cls)
                todo.append(cls)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__name__))


def declared_by_hand(classes: list[type[serializers.Serializer]]) -> list[tuple[str, str]]:
    """(serializer, field) of every placement field not made by memoryhub.api.placement."""
    return [
        (cls.__name__, name)
        for cls in classes
        for name, field in getattr(cls, "_declared_fields", {}).items()
        if name in PLACEMENT
        and not hasattr(field, "placement_role")
        and name not in OTHER_MEANINGS.get(cls.__name__, ())
    ]


def test_every_placement_field_is_declared_through_its_one_definition() -> None:
    assert declared_by_hand(serializer_classes()) == []


def test_the_check_finds_a_field_declared_by_hand() -> None:
    class ByHand(serializers.Serializer):
        workspace = serializers.CharField(help_text="Its workspace.")
        session = session_field("show")

    assert declared_by_hand([ByHand]) == [("ByHand", "workspace")]


def test_a_body_that_writes_is_held_to_the_columns_length_and_refuses_a_number() -> None:
    class Body(serializers.Serializer):
        workspace = workspace_field("place", required=False)
        user_id = user_field("change", required=False)

    assert not Body(data={"workspace": "w" * 101}).is_valid()
    assert not Body(data={"user_id": 7}).is_valid()
    assert Body(data={"workspace": "w" * 100, "user_id": "ann"}).is_valid()


def test_a_number_is_refused_as_text_in_every_role_that_reads_input() -> None:
    # A search or context body that says `"session": 5` was read as the session "5" while a note's
    # body refused it: one rule now, whatever the role.
    class Body(serializers.Serializer):
        session = session_field("recall", required=False)
        workspace = workspace_field("filter", of="notes", required=False)
        user_id = user_field("on_behalf", required=False)

    for field in ("session", "workspace", "user_id"):
        body = Body(data={field: 5})
        assert not body.is_valid()
        assert body.errors[field][0].code == "invalid"
        assert Body(data={field: "5"}).is_valid()
