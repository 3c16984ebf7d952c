"""POST /api/v1/import/?on_conflict=fail|skip|merge: sessions and records a tenant holds already."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from memoryhub.models import Event, Fact, Note, RollingSummary, ScratchpadItem, Session, SummaryNode
from retrieval.models import Chunk, Document
from tests.base import (
    error_code,
    make_client,
    make_key,
    make_tenant,
    new_session,
    remember,
    search_texts,
)
from tests.memoryhub.test_transfer import export


def import_(client: Any, data: Any, captured: Any, on_conflict: str | None = None) -> Any:
    url = "/api/v1/import/" + (f"?on_conflict={on_conflict}" if on_conflict is not None else "")
    with captured(execute=True):
        return client.post(url, json.dumps(data), content_type="application/json")


def holdings(tenant_name: str) -> dict[str, Any]:
    """Everything an import may add to a tenant, counted, and each session's transcript."""
    where = {"tenant__name": tenant_name}
    counts = {
        model.__name__: model.objects.filter(**where).count()
        for model in (
            Session,
            Event,
            Chunk,
            Note,
            Fact,
            SummaryNode,
            ScratchpadItem,
            Document,
            RollingSummary,
        )
    }
    transcripts = {
        s.external_id: list(
            Event.objects.filter(session=s)
            .order_by("sequence")
            .values_list("sequence", "role", "content")
        )
        for s in Session.objects.filter(**where)
    }
    return {"counts": counts, "transcripts": transcripts}


@pytest.fixture
def carol():  # type: ignore[no-untyped-def]
    return make_client(make_key(make_tenant("carol")))


def test_fail_is_the_default_names_the_session_and_stores_nothing(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    assert import_(carol, first, django_capture_on_commit_callbacks).status_code == 201
    before = holdings("carol")
    for option in (None, "fail"):
        response = import_(carol, first, django_capture_on_commit_callbacks, option)
        assert response.status_code == 409, response.content
        body = response.json()["error"]
        assert body["code"] == "session_exists" and body["details"]["session"] == "chat-1"
        assert "on_conflict=skip or merge" in body["message"]
    assert holdings("carol") == before


def test_a_bad_option_is_400_with_a_code(filled, carol, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    response = import_(carol, export(filled.alice), django_capture_on_commit_callbacks, "overwrite")
    assert response.status_code == 400 and error_code(response) == "invalid_on_conflict"
    assert response.json()["error"]["details"]["allowed"] == ["fail", "skip", "merge"]
    # ?on_conflict=
    empty = import_(carol, export(filled.alice), django_capture_on_commit_callbacks, "")
    assert empty.status_code == 400 and error_code(empty) == "invalid_on_conflict"
    assert not Session.objects.filter(tenant__name="carol").exists()


def test_skip_keeps_the_stored_session_imports_the_rest_and_is_idempotent(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    new_session(carol, "chat-1", title="Carol's own")
    with django_capture_on_commit_callbacks(execute=True):
        carol.post(
            "/api/v1/sessions/chat-1/events/",
            {"events": [{"role": "user", "content": "carol speaking"}]},
            format="json",
        )
    response = import_(carol, first, django_capture_on_commit_callbacks, "skip")
    assert response.status_code == 201, response.content
    report = response.json()
    assert report["on_conflict"] == "skip" and report["skipped_sessions"] == ["chat-1"]
    assert report["imported"]["sessions"] == 1 and report["imported"]["events"] == 1  # chat-2
    assert report["skipped"]["sessions"] == 1 and report["skipped"]["events"] == 2
    # What hangs off the stored session stays out: its summary tree, scratchpad, the fact it
    # produced.
    assert (
        report["skipped"]["memoryhub.SummaryNode"] == 3 and report["skipped"]["memoryhub.Fact"] == 1
    )
    assert report["imported"]["memoryhub.Note"] == 1 and report["imported"]["documents"] == 1
    chat1 = Session.objects.get(tenant__name="carol", external_id="chat-1")
    assert chat1.title == "Carol's own"
    assert list(Event.objects.filter(session=chat1).values_list("content", flat=True)) == [
        "carol speaking"
    ]
    assert not SummaryNode.objects.filter(session=chat1).exists()
    assert "Summarise the paper on octopus cognition" in search_texts(carol, "octopus paper")

    after_first = holdings("carol")
    again = import_(carol, first, django_capture_on_commit_callbacks, "skip")
    assert again.status_code == 201, again.content
    assert again.json()["imported"] == {} and sorted(again.json()["skipped_sessions"]) == [
        "chat-1",
        "chat-2",
    ]
    assert holdings("carol") == after_first


def test_merge_appends_only_missing_events_and_records_and_is_idempotent(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    assert import_(carol, first, django_capture_on_commit_callbacks).status_code == 201
    stored = holdings("carol")
    # The source goes on: one more message in chat-1, a new note; the re-export holds old and new.
    with django_capture_on_commit_callbacks(execute=True):
        filled.alice.post(
            "/api/v1/sessions/chat-1/events/",
            {"events": [{"role": "user", "content": "Also a hotel near the Alfama"}]},
            format="json",
        )
    remember(
        Note.objects.create(
            tenant=filled.alice_tenant, content="Note: alice hates layovers", source="agent"
        )
    )
    second = export(filled.alice)

    response = import_(carol, second, django_capture_on_commit_callbacks, "merge")
    assert response.status_code == 201, response.content
    report = response.json()
    assert sorted(report["merged_sessions"]) == ["chat-1", "chat-2"] and report["merged"] == {
        "sessions": 2
    }
    assert report["imported"]["events"] == 1 and report["skipped"]["events"] == 3
    assert report["imported"]["memoryhub.Note"] == 1 and report["skipped"]["memoryhub.Note"] == 1
    assert report["skipped"]["memoryhub.Fact"] == 1 and report["skipped"]["documents"] == 1
    merged = holdings("carol")
    assert merged["transcripts"]["chat-1"] == [
        *stored["transcripts"]["chat-1"],
        (3, "user", "Also a hotel near the Alfama"),
    ]
    assert merged["counts"]["Note"] == stored["counts"]["Note"] + 1
    for kind in ("Session", "Fact", "SummaryNode", "ScratchpadItem", "Document", "RollingSummary"):
        assert merged["counts"][kind] == stored["counts"][kind], kind
    assert Session.objects.get(tenant__name="carol", external_id="chat-1").event_count == 3
    # The appended message is indexed like an append; the stored chunks are not doubled.
    assert "Also a hotel near the Alfama" in search_texts(carol, "hotel Alfama")
    # message, note
    assert Chunk.objects.filter(tenant__name="carol").count() == stored["counts"]["Chunk"] + 2

    again = import_(carol, second, django_capture_on_commit_callbacks, "merge")
    assert again.status_code == 201, again.content
    assert again.json()["imported"] == {}
    assert holdings("carol") == merged


def test_merge_never_appends_to_an_archived_session(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    assert import_(carol, first, django_capture_on_commit_callbacks).status_code == 201
    assert (
        carol.patch("/api/v1/sessions/chat-1/", {"status": "archived"}, format="json").status_code
        == 200
    )
    # Merging the same file again appends nothing: allowed, an archived session stays as it is.
    assert import_(carol, first, django_capture_on_commit_callbacks, "merge").status_code == 201
    with django_capture_on_commit_callbacks(execute=True):
        filled.alice.post(
            "/api/v1/sessions/chat-1/events/",
            {"events": [{"role": "user", "content": "Also a hotel near the Alfama"}]},
            format="json",
        )
    before = holdings("carol")
    response = import_(carol, export(filled.alice), django_capture_on_commit_callbacks, "merge")
    assert response.status_code == 409 and error_code(response) == "session_archived"
    assert response.json()["error"]["details"] == {"session": "chat-1", "on_conflict": ["skip"]}
    assert holdings("carol") == before  # the whole import refused: nothing stored
    assert (
        import_(carol, export(filled.alice), django_capture_on_commit_callbacks, "skip").status_code
        == 201
    )


def test_merge_matches_events_by_idempotency_key_or_time_role_and_content(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    new_session(carol, "chat-1", user_id="u1")  # the same owner: a merge appends only into theirs
    events = first["sessions"][0]["events"]
    # Stored already: the keyed message (its text edited since: the key decides) and, unkeyed, the
    # tool call.
    carol.post(
        "/api/v1/sessions/chat-1/events/",
        {
            "events": [
                {
                    "role": "user",
                    "content": "Book a flight to Lisbon (edited)",
                    "idempotency_key": "k1",
                },
                {
                    "role": "assistant",
                    "content": "",
                    "tool_name": "book_flight",
                    "created_at": events[1]["created_at"],
                },
            ]
        },
        format="json",
    )
    response = import_(carol, first, django_capture_on_commit_callbacks, "merge")
    assert response.status_code == 201, response.content
    chat1 = Session.objects.get(tenant__name="carol", external_id="chat-1")
    assert Event.objects.filter(session=chat1).count() == 2
    report = response.json()
    assert report["merged_sessions"] == ["chat-1"] and report["skipped"]["events"] == 2
    # chat-2, new here
    assert report["imported"]["events"] == 1 and report["imported"]["sessions"] == 1


def test_merge_adds_a_scratchpad_item_after_the_stored_ones(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    assert import_(carol, first, django_capture_on_commit_callbacks).status_code == 201
    second = copy.deepcopy(first)
    items = second["records"]["memoryhub.ScratchpadItem"]
    items[0]["fields"]["value"] = "buy pears"  # the stored value wins
    # same position
    items.append({"key": 1, "fields": {**items[0]["fields"], "key": "budget", "value": "40 EUR"}})
    assert import_(carol, second, django_capture_on_commit_callbacks, "merge").status_code == 201
    pad = Session.objects.get(tenant__name="carol", external_id="chat-1").scratchpad
    assert list(pad.items.order_by("position").values_list("position", "key", "value")) == [
        (0, "goal", "buy quinces"),
        (1, "budget", "40 EUR"),
    ]


def test_a_bad_file_with_merge_leaves_nothing_half_written(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    assert import_(carol, first, django_capture_on_commit_callbacks).status_code == 201
    stored = holdings("carol")
    bad = copy.deepcopy(first)
    bad["sessions"][0]["events"].append(
        {
            **bad["sessions"][0]["events"][0],
            "sequence": 9,
            "content": "new",
            "idempotency_key": "k9",
        }
    )  # would be appended to chat-1…
    bad["sessions"][1]["events"][0]["role"] = "narrator"  # …but chat-2 is broken
    response = import_(carol, bad, django_capture_on_commit_callbacks, "merge")
    assert response.status_code == 400 and error_code(response) == "invalid_import"
    assert "sessions[1].events[0].role" in response.json()["error"]["message"]
    assert holdings("carol") == stored


def test_skip_and_merge_never_reach_another_tenant(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    first = export(filled.alice)
    alice_before = holdings("alice")
    for option in ("skip", "merge"):
        response = import_(carol, first, django_capture_on_commit_callbacks, option)
        assert response.status_code == 201, response.content
        # Alice's sessions of the same ids are not carol's: the first import creates, the second
        # finds carol's.
        if option == "skip":
            assert (
                response.json()["skipped_sessions"] == []
                and response.json()["imported"]["sessions"] == 2
            )
    assert holdings("alice") == alice_before
    # Alice merging her own export back changes nothing of hers, nothing of carol's.
    carol_after = holdings("carol")
    assert (
        import_(filled.alice, first, django_capture_on_commit_callbacks, "merge").json()["imported"]
        == {}
    )
    assert holdings("alice") == alice_before and holdings("carol") == carol_after


def test_skip_and_merge_keep_a_stored_channels_description(
    filled, carol, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    from accounts.models import Channel

    first = export(filled.alice)
    assert import_(carol, first, django_capture_on_commit_callbacks).status_code == 201
    travel = Channel.objects.get(tenant__name="carol", name="travel")
    Channel.objects.filter(pk=travel.pk).update(description="Carol's own words")
    edited = copy.deepcopy(first)
    for workspace in edited["workspaces"]:
        for channel in workspace["channels"]:
            channel["description"] = "From the file"
    for option in ("skip", "merge"):
        assert import_(carol, edited, django_capture_on_commit_callbacks, option).status_code == 201
        assert Channel.objects.get(pk=travel.pk).description == "Carol's own words"
    others = Channel.objects.filter(tenant__name="carol").exclude(pk=travel.pk)
    # merge filled in the empty ones
    assert set(others.values_list("description", flat=True)) == {"From the file"}


@pytest.mark.parametrize("on_conflict", ["fail", "skip", "merge"])
def test_another_workspaces_session_is_answered_as_a_missing_one(
    db, on_conflict, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    scratch = make_client(make_key(make_tenant("scratch")))
    assert (
        scratch.post(
            "/api/v1/sessions/", {"id": "plans", "workspace": "w1"}, format="json"
        ).status_code
        == 201
    )
    data = export(scratch, workspace="w1")
    tenant = make_tenant("carol")
    assert (
        make_client(make_key(tenant))
        .post("/api/v1/sessions/", {"id": "plans", "workspace": "w2"}, format="json")
        .status_code
        == 201
    )
    limited = make_client(make_key(tenant, workspace="w1"))
    before = holdings("carol")
    response = import_(limited, data, django_capture_on_commit_callbacks, on_conflict)
    # The body a read of the id answers this key: nothing says that w2 holds it.
    assert (response.status_code, response.json()) == (
        404,
        limited.get("/api/v1/sessions/plans/").json(),
    )
    assert holdings("carol") == before


def _held_in_two_workspaces(path: str, body: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """An export of workspace w1 holding the row `body` (scratch tenant), and tenant carol whose
    w2 holds a row of the same id: (carol's key limited to w1, the file)."""
    scratch = make_client(make_key(make_tenant("scratch")))
    assert scratch.post(path, {**body, "workspace": "w1"}, format="json").status_code == 201
    data = export(scratch, workspace="w1")
    tenant = make_tenant("carol")
    wide = make_client(make_key(tenant))
    assert wide.post(path, {**body, "workspace": "w2"}, format="json").status_code == 201
    return make_client(make_key(tenant, workspace="w1")), data


@pytest.mark.parametrize("on_conflict", ["fail", "skip", "merge"])
def test_another_workspaces_note_is_answered_as_a_missing_one(
    db, on_conflict, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    limited, data = _held_in_two_workspaces(
        "/api/v1/notes/", {"note_id": "plans", "content": "Book the train."}
    )
    before = holdings("carol")
    response = import_(limited, data, django_capture_on_commit_callbacks, on_conflict)
    # The body a read of the id answers this key: nothing says that w2 holds it (it used to be 409
    # import_conflict with fail, and a skipped note with skip or merge).
    assert (response.status_code, response.json()) == (
        404,
        limited.get("/api/v1/notes/plans/").json(),
    )
    assert holdings("carol") == before


@pytest.mark.parametrize("on_conflict", ["fail", "skip", "merge"])
def test_another_workspaces_fact_id_is_another_fact(
    db, on_conflict, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    """A fact's client id and key are unique per workspace: the w2 fact neither blocks nor shows
    through the w1 import."""
    limited, data = _held_in_two_workspaces(
        "/api/v1/facts/",
        {"content": "Lives in Lyon.", "key": "city", "external_id": "city", "user_id": "ann"},
    )
    response = import_(limited, data, django_capture_on_commit_callbacks, on_conflict)
    assert response.status_code == 201, response.content
    assert response.json()["skipped"] == {}
    assert [f["content"] for f in limited.get("/api/v1/facts/").json()["results"]] == [
        "Lives in Lyon."
    ]
    assert Fact.objects.filter(tenant__name="carol").count() == 2
