"""A conversation's lifecycle. Repeating a status is an error, archived sessions are hidden
from the list unless asked for, ended_at is recorded, sessions are found by ref_code, and
its end (idle or archived) clears the conversation-tier memories (not promoted or pinned ones)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from memoryhub.models import Fact, FactVersion, Note, ScratchpadItem, Session
from retrieval.models import Chunk
from tests.base import error_code, make_client, make_key, new_session, post_events, search_texts

SESSIONS = "/api/v1/sessions/"


def patch(client: Any, session: str, **body: Any) -> Any:
    return client.patch(f"{SESSIONS}{session}/", body, format="json")


def listed(client: Any, **params: Any) -> list[str]:
    response = client.get(SESSIONS, params)
    assert response.status_code == 200, response.content
    return sorted(s["id"] for s in response.json()["results"])


# --- status moves and ended_at --------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [["active"], ["idle", "idle"], ["archived", "archived"], ["idle", "archived", "idle"]]
)
def test_repeating_or_leaving_a_final_status_is_409_and_changes_nothing(
    alice, path: list[str]
) -> None:
    new_session(alice, "s1")
    *moves, last = path
    for status in moves:
        assert patch(alice, "s1", status=status).status_code == 200
    before = Session.objects.get(external_id="s1")
    response = patch(alice, "s1", status=last, title="not saved either")
    assert response.status_code == 409 and error_code(response) == "invalid_status_transition"
    assert response.json()["error"]["details"] == {"from": before.status, "to": last}
    after = Session.objects.get(external_id="s1")
    assert (after.status, after.title, after.updated_at, after.ended_at) == (
        before.status,
        before.title,
        before.updated_at,
        before.ended_at,
    )


def test_ended_at_is_recorded_when_the_conversation_ends(alice) -> None:
    new_session(alice, "s1")
    assert alice.get(f"{SESSIONS}s1/").json()["ended_at"] is None
    idle = patch(alice, "s1", status="idle").json()
    assert idle["ended_at"] is not None
    archived = patch(alice, "s1", status="archived").json()
    assert archived["ended_at"] == idle["ended_at"]  # it ended when it went idle
    new_session(alice, "s2")
    # archived from active
    assert patch(alice, "s2", status="archived").json()["ended_at"] is not None


def test_a_conversation_active_again_has_no_end(alice) -> None:
    new_session(alice, "s1")
    patch(alice, "s1", status="idle")
    assert patch(alice, "s1", status="active").json()["ended_at"] is None
    patch(alice, "s1", status="idle")
    post_events(alice, "s1", {"role": "user", "content": "back again"})
    session = alice.get(f"{SESSIONS}s1/").json()
    assert session["status"] == "active" and session["ended_at"] is None


# --- listing and lookup ---------------------------------------------------------------------------


def test_archived_sessions_are_hidden_unless_asked_for(alice) -> None:
    for name in ("live", "resting", "old"):
        new_session(alice, name)
    patch(alice, "resting", status="idle")
    patch(alice, "old", status="archived")
    assert listed(alice) == ["live", "resting"]
    assert listed(alice, include_archived="true") == ["live", "old", "resting"]
    assert listed(alice, status="archived") == ["old"]
    assert listed(alice, status="idle") == ["resting"]
    assert alice.get(f"{SESSIONS}old/").status_code == 200  # hidden from the list, not gone


def test_a_session_is_found_by_its_ref_code(alice, bob, cast) -> None:
    new_session(alice, "s1")
    new_session(alice, "s2")
    code = alice.get(f"{SESSIONS}s1/").json()["ref_code"]
    assert len(code) == 11
    assert listed(alice, ref_code=code) == ["s1"]
    patch(alice, "s1", status="archived")
    assert listed(alice, ref_code=code) == ["s1"]  # a lookup finds archived sessions too
    assert listed(alice, ref_code="00000000000") == []
    assert listed(bob, ref_code=code) == []  # another tenant's code finds nothing
    other_workspace = make_client(make_key(cast.alice_tenant, workspace="w2"))
    assert listed(other_workspace, ref_code=code) == []


@pytest.mark.parametrize("params", [{"include_archived": "perhaps"}, {"ref_code": "x" * 12}])
def test_bad_list_parameters_are_400(alice, params: dict[str, str]) -> None:
    response = alice.get(SESSIONS, params)
    assert response.status_code == 400 and error_code(response) == "invalid_parameter"


# --- conversation-tier memories -------------------------------------------------------------------


def remember(client: Any, session: str) -> dict[str, Any]:
    """A conversation's memories: what archiving clears and what it keeps."""

    def note(**body: Any) -> str:
        response = client.post("/api/v1/notes/", {"content": "note", **body}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["note_id"]

    def fact(**body: Any) -> int:
        response = client.post("/api/v1/facts/", body, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]

    ids = {
        "note": note(
            content="Working on the pelican report", session=session, scope="conversation"
        ),
        # no tier asked: long-term
        "note_default": note(content="Pelicans eat fish", session=session),
        "note_workspace": note(content="Pelicans nest in June", session=session, scope="workspace"),
        "fact": fact(content="Draft is in section three", session=session, scope="conversation"),
        "fact_promoted": fact(
            content="User prefers metric units", session=session, scope="conversation"
        ),
        "fact_pinned": fact(content="Deadline is Friday", session=session, scope="conversation"),
    }
    # what consolidation does
    Fact.objects.filter(pk=ids["fact_promoted"]).update(lifetime="long_term")
    Fact.objects.filter(pk=ids["fact_pinned"]).update(pinned=True)
    client.put(
        f"{SESSIONS}{session}/scratchpad/",
        {"items": [{"key": "step", "value": "draft"}]},
        format="json",
    )
    return ids


def test_archiving_clears_the_conversations_memories(
    alice, django_capture_on_commit_callbacks
) -> None:
    new_session(alice, "s1")
    new_session(alice, "s2")
    with django_capture_on_commit_callbacks(execute=True):
        ids = remember(alice, "s1")
        other = remember(alice, "s2")
    # conversation scope, no lifetime given
    assert Fact.objects.get(pk=ids["fact"]).lifetime == "conversation"
    assert "Working on the pelican report" in search_texts(alice, "pelican report")
    assert patch(alice, "s1", status="archived").status_code == 200
    assert not Note.objects.filter(note_id=ids["note"]).exists()
    assert not Fact.objects.filter(pk=ids["fact"]).exists()
    assert Fact.objects.filter(pk__in=[ids["fact_promoted"], ids["fact_pinned"]]).count() == 2
    assert (
        Note.objects.filter(note_id__in=[ids["note_workspace"], ids["note_default"]]).count() == 2
    )
    assert not Chunk.objects.filter(kind="note", source_id=ids["note"]).exists()
    # s2's own copy of the note is all that search still finds.
    hits = alice.post(
        "/api/v1/search/", {"query": "pelican report", "scope": "account"}, format="json"
    ).json()
    assert [
        h["session"] for h in hits["results"] if h["text"] == "Working on the pelican report"
    ] == ["s2"]
    # kept on archive
    assert ScratchpadItem.objects.filter(scratchpad__session__external_id="s1").exists()
    assert (
        Note.objects.filter(note_id=other["note"]).exists()
        and Fact.objects.filter(pk=other["fact"]).exists()
    )


def test_ending_the_conversation_clears_them_too(alice, django_capture_on_commit_callbacks) -> None:
    """Conversation memory is cleared when the conversation ends: idle is its end."""
    new_session(alice, "s1")
    with django_capture_on_commit_callbacks(execute=True):
        ids = remember(alice, "s1")
    fact = Fact.objects.get(pk=ids["fact"])
    assert FactVersion.objects.filter(fact_id=fact.pk, valid_to__isnull=True).exists()
    assert patch(alice, "s1", status="idle").status_code == 200
    assert not Note.objects.filter(note_id=ids["note"]).exists()
    assert not Fact.objects.filter(pk=ids["fact"]).exists()
    assert not Chunk.every_version.filter(kind="fact", source_id=str(ids["fact"])).exists()
    # the fact's history says when it stopped being held, as for any other delete
    assert not FactVersion.objects.filter(fact_id=fact.pk, valid_to__isnull=True).exists()
    assert Fact.objects.filter(pk__in=[ids["fact_promoted"], ids["fact_pinned"]]).count() == 2
    assert (
        Note.objects.filter(note_id__in=[ids["note_workspace"], ids["note_default"]]).count() == 2
    )
    assert ScratchpadItem.objects.filter(scratchpad__session__external_id="s1").exists()
    # Talking again makes it active; what it remembers from then on is cleared at its next end.
    again = alice.post(
        "/api/v1/notes/",
        {"content": "second round", "session": "s1", "scope": "conversation"},
        format="json",
    ).json()
    assert patch(alice, "s1", status="active").status_code == 200
    assert Note.objects.filter(note_id=again["note_id"]).exists()
    assert patch(alice, "s1", status="archived").status_code == 200
    assert not Note.objects.filter(note_id=again["note_id"]).exists()


def test_a_setting_keeps_them(alice, settings, monkeypatch) -> None:
    monkeypatch.setattr("memoryhub.conversations.KEEP_CONVERSATION_MEMORIES", True)
    new_session(alice, "s1")
    ids = remember(alice, "s1")
    patch(alice, "s1", status="archived")
    assert (
        Note.objects.filter(note_id=ids["note"]).exists()
        and Fact.objects.filter(pk=ids["fact"]).exists()
    )


def test_archiving_another_tenants_session_is_404_and_clears_nothing(alice, bob) -> None:
    new_session(alice, "s1")
    ids = remember(alice, "s1")
    response = patch(bob, "s1", status="archived")
    assert response.status_code == 404
    assert Note.objects.filter(note_id=ids["note"]).exists()
    assert Session.objects.get(external_id="s1").status == "active"


def test_a_user_limited_key_archives_its_own_conversation(alice, cast) -> None:
    new_session(alice, "mine", user_id="u1")
    new_session(alice, "theirs", user_id="u2")
    ids = remember(alice, "mine")
    u1 = make_client(make_key(cast.alice_tenant, user="u1"))
    assert patch(u1, "theirs", status="archived").status_code == 404
    assert patch(u1, "mine", status="archived").status_code == 200
    assert not Note.objects.filter(note_id=ids["note"]).exists()


# --- the admin ------------------------------------------------------------------------------------


@pytest.fixture
def _fast_passwords(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.mark.usefixtures("_fast_passwords")
def test_the_admin_archives_like_the_api(admin_client, alice) -> None:
    new_session(alice, "s1")
    new_session(alice, "s2")
    first, second = remember(alice, "s1"), remember(alice, "s2")
    changelist = reverse("admin:memoryhub_session_changelist")
    session = Session.objects.get(external_id="s1")
    admin_client.post(changelist, {"action": "archive_sessions", "_selected_action": [session.pk]})
    session.refresh_from_db()
    assert session.status == "archived" and session.ended_at is not None
    assert not Note.objects.filter(note_id=first["note"]).exists()
    # The change form: a status changed there moves the same way.
    s2 = Session.objects.select_related("tenant", "workspace", "channel").get(external_id="s2")
    form = {
        "tenant": s2.tenant_id,
        "workspace": s2.workspace_id,
        "channel": s2.channel_id,
        "external_id": s2.external_id,
        "user_id": "",
        "persistence_key": "",
        "agent": "",
        "title": "",
        "metadata": "{}",
        "status": "archived",
        "summary_budget": "",
        "created_at_0": s2.created_at.strftime("%Y-%m-%d"),
        "created_at_1": s2.created_at.strftime("%H:%M:%S"),
        "updated_at_0": s2.updated_at.strftime("%Y-%m-%d"),
        "updated_at_1": s2.updated_at.strftime("%H:%M:%S"),
    }
    response = admin_client.post(reverse("admin:memoryhub_session_change", args=[s2.pk]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    s2.refresh_from_db()
    assert s2.status == "archived" and s2.ended_at is not None
    assert not Fact.objects.filter(pk=second["fact"]).exists()
