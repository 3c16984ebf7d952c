"""POST/GET /sessions/, GET/PATCH/DELETE /sessions/{id}/ (docs/event-log.md#append)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from accounts.models import Workspace
from memoryhub.models import Event, RollingSummary, Session
from tests.base import error_code, make_client, make_key, post_events

SESSIONS = "/api/v1/sessions/"


def create(client: Any, **body: Any) -> Any:
    return client.post(SESSIONS, body, format="json")


# --- create ----------------------------------------------------------------------------------


def test_create_with_every_field(alice) -> None:
    response = create(
        alice,
        id="chat-1",
        user_id="u-42",
        persistence_key="slack:C1:T9",
        agent="helper",
        channel="support",
        workspace="research",
        title="First chat",
        metadata={"lang": "en"},
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert {
        k: body[k]
        for k in (
            "id",
            "user_id",
            "persistence_key",
            "agent",
            "channel",
            "workspace",
            "title",
            "metadata",
            "status",
            "event_count",
            "last_sequence",
        )
    } == {
        "id": "chat-1",
        "user_id": "u-42",
        "persistence_key": "slack:C1:T9",
        "agent": "helper",
        "channel": "support",
        "workspace": "research",
        "title": "First chat",
        "metadata": {"lang": "en"},
        "status": "active",
        "event_count": 0,
        "last_sequence": 0,
    }
    assert re.fullmatch(r"[0-9A-Za-z]{11}", body["ref_code"])
    assert body["created_at"].endswith("Z") and body["updated_at"].endswith("Z")
    session = Session.objects.get(external_id="chat-1")
    assert session.workspace.name == "research" and session.channel.name == "support"
    assert session.channel.workspace_id == session.workspace_id


def test_create_without_id_generates_one_in_the_default_placement(alice) -> None:
    response = create(alice)
    assert response.status_code == 201
    body = response.json()
    assert body["id"] and body["workspace"] == "default" and body["channel"] == "general"
    assert alice.get(f"{SESSIONS}{body['id']}/").status_code == 200
    assert create(alice).json()["id"] != body["id"]


def test_null_id_is_generated_like_an_absent_one(alice) -> None:
    response = create(alice, id=None)
    assert response.status_code == 201 and response.json()["id"]


def test_existing_id_is_a_conflict_unless_get_or_create(alice) -> None:
    first = create(alice, id="dup", title="original")
    assert first.status_code == 201
    again = create(alice, id="dup", title="second")
    assert again.status_code == 409
    assert error_code(again) == "session_exists"
    fetched = create(alice, id="dup", title="third", get_or_create=True)
    assert fetched.status_code == 200
    assert fetched.json()["title"] == "original"
    assert fetched.json()["ref_code"] == first.json()["ref_code"]
    assert Session.objects.filter(external_id="dup").count() == 1


def test_get_or_create_creates_when_missing(alice) -> None:
    response = create(alice, id="fresh", get_or_create=True)
    assert response.status_code == 201
    assert Session.objects.filter(external_id="fresh").exists()


def test_two_tenants_may_use_the_same_id(alice, bob) -> None:
    assert create(alice, id="shared", title="alice's").status_code == 201
    assert create(bob, id="shared", title="bob's").status_code == 201
    assert alice.get(f"{SESSIONS}shared/").json()["title"] == "alice's"
    assert bob.get(f"{SESSIONS}shared/").json()["title"] == "bob's"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"id": ""}, "id"),
        ({"id": "has space"}, "id"),
        ({"id": "-starts-with-symbol"}, "id"),
        ({"id": "x" * 201}, "id"),
        ({"id": 12}, "id"),
        ({"title": "t" * 501}, "title"),
        ({"metadata": ["not", "an", "object"]}, "metadata"),
        ({"metadata": "text"}, "metadata"),
        ({"get_or_create": "maybe"}, "get_or_create"),
        ({"agent": {"nested": 1}}, "agent"),
        ({"unknown_field": 1}, "unknown_field"),
        ({"metadata": {"k": "nul\u0000"}}, "metadata"),
        ({"title": "nul\u0000"}, "title"),
    ],
)
def test_bad_create_input_is_a_400_and_stores_nothing(
    alice, body: dict[str, Any], field: str
) -> None:
    response = create(alice, **body)
    assert response.status_code == 400, response.content
    code = error_code(response)
    assert code in {"validation_error", "unknown_field", "null_characters_not_allowed"}
    assert field in response.json()["error"]["details"]["fields"]
    assert not Session.objects.exists()


def test_unknown_field_has_its_own_code(alice) -> None:
    response = create(alice, id="x", titel="typo")
    assert response.status_code == 400
    assert error_code(response) == "unknown_field"
    assert not Session.objects.exists()


def test_create_body_must_be_an_object(alice) -> None:
    response = alice.post(SESSIONS, ["a"], format="json")
    assert response.status_code == 400
    assert error_code(response) == "not_an_object"
    assert not Session.objects.exists()


# --- read ------------------------------------------------------------------------------------


def test_get_one_session(alice) -> None:
    create(alice, id="s1", title="hello")
    response = alice.get(f"{SESSIONS}s1/")
    assert response.status_code == 200
    assert response.json()["id"] == "s1" and response.json()["title"] == "hello"


def test_get_unknown_session_is_404(alice) -> None:
    response = alice.get(f"{SESSIONS}nope/")
    assert response.status_code == 404
    assert error_code(response) == "session_not_found"


def test_list_newest_updated_first(alice) -> None:
    for name in ("a", "b", "c"):
        create(alice, id=name)
    post_events(alice, "a", {"role": "user", "content": "bump a"})
    response = alice.get(SESSIONS)
    assert response.status_code == 200
    body = response.json()
    assert [s["id"] for s in body["results"]] == ["a", "c", "b"]
    assert body["count"] == 3 and body["next"] is None
    alice.patch(f"{SESSIONS}b/", {"title": "bump b"}, format="json")
    assert [s["id"] for s in alice.get(SESSIONS).json()["results"]] == ["b", "a", "c"]


def test_list_filters(alice) -> None:
    create(
        alice,
        id="s1",
        agent="planner",
        channel="ops",
        workspace="w1",
        persistence_key="k:1",
        user_id="u1",
    )
    create(
        alice,
        id="s2",
        agent="coder",
        channel="ops",
        workspace="w1",
        persistence_key="k:2",
        user_id="u2",
    )
    create(alice, id="s3", agent="planner", workspace="w2", persistence_key="k:1")
    alice.patch(f"{SESSIONS}s3/", {"status": "archived"}, format="json")

    def ids(**params: str) -> set[str]:
        response = alice.get(SESSIONS, params)
        assert response.status_code == 200, response.content
        return {s["id"] for s in response.json()["results"]}

    assert ids(agent="planner") == {"s1"}  # s3 is archived: hidden unless asked for
    assert ids(agent="planner", include_archived="true") == {"s1", "s3"}
    assert ids(channel="ops") == {"s1", "s2"}
    assert ids(workspace="w2") == set()
    assert ids(workspace="w2", include_archived="true") == {"s3"}
    assert ids(status="archived") == {"s3"}
    assert ids(status="active") == {"s1", "s2"}
    assert ids(persistence_key="k:1", include_archived="true") == {"s1", "s3"}
    assert ids(user_id="u2") == {"s2"}
    assert ids(agent="planner", workspace="w1") == {"s1"}
    assert ids(agent="nobody") == set()


def test_list_bad_filter_value_is_400(alice) -> None:
    response = alice.get(SESSIONS, {"status": "sleeping"})
    assert response.status_code == 400
    assert error_code(response) == "invalid_parameter"


@pytest.mark.parametrize(
    "params", [{"limit": "0"}, {"limit": "abc"}, {"limit": "100000"}, {"offset": "-1"}]
)
def test_list_bad_paging_is_400(alice, params: dict[str, str]) -> None:
    response = alice.get(SESSIONS, params)
    assert response.status_code == 400
    assert error_code(response) == "invalid_parameter"


def test_list_pages_with_next(alice) -> None:
    for i in range(5):
        create(alice, id=f"s{i}")
    seen: list[str] = []
    url: str | None = f"{SESSIONS}?limit=2"
    pages = 0
    while url:
        body = alice.get(url).json()
        assert body["count"] == 5
        seen += [s["id"] for s in body["results"]]
        url = body["next"]
        pages += 1
    assert pages == 3
    assert seen == ["s4", "s3", "s2", "s1", "s0"]


def test_list_query_count_is_pinned(alice, django_assert_max_num_queries) -> None:
    for i in range(20):
        create(alice, id=f"s{i}", channel=f"c{i % 3}", workspace=f"w{i % 2}")
    alice.get(SESSIONS)  # the key's last-used time is written once, before counting
    with django_assert_max_num_queries(3):  # key, count, page (workspace and channel joined)
        response = alice.get(SESSIONS, {"limit": 20})
    assert len(response.json()["results"]) == 20


# --- update ----------------------------------------------------------------------------------


def test_patch_updates_fields_and_time(alice) -> None:
    created = create(alice, id="s1", title="old").json()
    response = alice.patch(
        f"{SESSIONS}s1/",
        {
            "title": "new",
            "metadata": {"k": "v"},
            "agent": "a2",
            "user_id": "u9",
            "persistence_key": "pk",
        },
        format="json",
    )
    assert response.status_code == 200
    body = response.json()
    assert (
        body["title"],
        body["metadata"],
        body["agent"],
        body["user_id"],
        body["persistence_key"],
    ) == ("new", {"k": "v"}, "a2", "u9", "pk")
    assert body["updated_at"] >= created["updated_at"]
    session = Session.objects.get(external_id="s1")
    assert session.title == "new" and session.metadata == {"k": "v"}


def test_status_moves_and_refusals(alice) -> None:
    create(alice, id="s1")
    assert (
        alice.patch(f"{SESSIONS}s1/", {"status": "idle"}, format="json").json()["status"] == "idle"
    )
    assert (
        alice.patch(f"{SESSIONS}s1/", {"status": "active"}, format="json").json()["status"]
        == "active"
    )
    assert (
        alice.patch(f"{SESSIONS}s1/", {"status": "archived"}, format="json").json()["status"]
        == "archived"
    )
    back = alice.patch(f"{SESSIONS}s1/", {"status": "active"}, format="json")
    assert back.status_code == 409
    assert error_code(back) == "invalid_status_transition"
    assert back.json()["error"]["details"] == {"from": "archived", "to": "active"}
    assert Session.objects.get(external_id="s1").status == "archived"


def test_archive_directly_from_active(alice) -> None:
    create(alice, id="s1")
    response = alice.patch(f"{SESSIONS}s1/", {"status": "archived"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "archived"


@pytest.mark.parametrize(
    "body",
    [
        {"status": "sleeping"},
        {"metadata": [1]},
        {"title": 5 * "x" * 101},
        {"ref_code": "x"},
        {"id": "new"},
        {"workspace": "elsewhere"},
    ],
)
def test_bad_patch_is_400_and_changes_nothing(alice, body: dict[str, Any]) -> None:
    create(alice, id="s1", title="kept")
    response = alice.patch(f"{SESSIONS}s1/", body, format="json")
    assert response.status_code == 400, response.content
    error_code(response)
    session = Session.objects.get(external_id="s1")
    assert session.title == "kept" and session.status == "active"


def test_patch_unknown_session_is_404(alice) -> None:
    response = alice.patch(f"{SESSIONS}nope/", {"title": "x"}, format="json")
    assert response.status_code == 404
    assert error_code(response) == "session_not_found"
    assert not Session.objects.exists()


# --- forget ----------------------------------------------------------------------------------


def test_delete_forgets_the_session_and_what_derives_from_it(alice) -> None:
    create(alice, id="s1")
    create(alice, id="s2")
    post_events(
        alice, "s1", {"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}
    )
    post_events(alice, "s2", {"role": "user", "content": "kept"})
    session = Session.objects.get(external_id="s1")
    RollingSummary.objects.create(session=session, tenant_id=session.tenant_id, text="sum", epoch=1)
    response = alice.delete(f"{SESSIONS}s1/")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == "s1"
    assert body["deleted"]["memoryhub.Event"] == 2
    assert body["deleted"]["memoryhub.Session"] == 1
    assert body["deleted"]["memoryhub.RollingSummary"] == 1
    assert not Session.objects.filter(external_id="s1").exists()
    assert not Event.objects.filter(session_id=session.pk).exists()
    assert not RollingSummary.objects.filter(session_id=session.pk).exists()
    assert Event.objects.filter(session__external_id="s2").count() == 1
    assert alice.get(f"{SESSIONS}s1/").status_code == 404
    assert alice.delete(f"{SESSIONS}s1/").status_code == 404


def test_forget_is_one_transaction(alice, monkeypatch) -> None:
    """A failure half-way through the cascade leaves everything in place."""
    from memoryhub.signals import session_forgotten

    create(alice, id="s1")
    post_events(alice, "s1", {"role": "user", "content": "one"})

    def explode(**kwargs: Any) -> None:
        Event.objects.filter(session=kwargs["session"]).delete()  # part of the work is done…
        raise RuntimeError("boom")  # …then something fails

    session_forgotten.connect(explode, dispatch_uid="test-explode")
    alice.raise_request_exception = False
    try:
        response = alice.delete(f"{SESSIONS}s1/")
    finally:
        session_forgotten.disconnect(dispatch_uid="test-explode")
    assert response.status_code == 500
    assert Session.objects.filter(external_id="s1").exists()
    assert Event.objects.filter(session__external_id="s1").count() == 1


def test_delete_is_refused_with_an_immutable_transcript(alice, cast) -> None:
    create(alice, id="s1")
    post_events(alice, "s1", {"role": "user", "content": "one"})
    cast.alice_tenant.immutable_transcript = True
    cast.alice_tenant.save()
    response = alice.delete(f"{SESSIONS}s1/")
    assert response.status_code == 409
    assert error_code(response) == "immutable_transcript"
    assert Event.objects.filter(session__external_id="s1").count() == 1


# --- isolation -------------------------------------------------------------------------------


def test_bob_never_sees_or_touches_alices_sessions(alice, bob) -> None:
    create(alice, id="secret", title="alice only")
    post_events(alice, "secret", {"role": "user", "content": "private"})
    assert bob.get(SESSIONS).json()["results"] == []
    assert bob.get(SESSIONS).json()["count"] == 0
    for response in (
        bob.get(f"{SESSIONS}secret/"),
        bob.patch(f"{SESSIONS}secret/", {"title": "pwned"}, format="json"),
        bob.delete(f"{SESSIONS}secret/"),
    ):
        assert response.status_code == 404
        assert error_code(response) == "session_not_found"
    # Bob may create his own session with the same id; it is a different one.
    assert create(bob, id="secret").status_code == 201
    session = Session.objects.get(tenant__name="alice", external_id="secret")
    assert session.title == "alice only" and session.events.count() == 1


def test_workspace_limited_key_sees_only_its_workspace(alice, cast) -> None:
    create(alice, id="in-w1", workspace="w1")
    create(alice, id="in-w2", workspace="w2")
    limited = make_client(make_key(cast.alice_tenant, workspace="w1"))
    assert [s["id"] for s in limited.get(SESSIONS).json()["results"]] == ["in-w1"]
    assert limited.get(f"{SESSIONS}in-w2/").status_code == 404
    assert limited.patch(f"{SESSIONS}in-w2/", {"title": "x"}, format="json").status_code == 404
    assert limited.delete(f"{SESSIONS}in-w2/").status_code == 404
    created = create(limited, id="new-one")
    assert created.status_code == 201 and created.json()["workspace"] == "w1"
    refused = create(limited, id="other", workspace="w2")
    assert refused.status_code == 403
    assert error_code(refused) == "workspace_forbidden"
    assert not Session.objects.filter(external_id="other").exists()
    # The id is taken in another workspace of the tenant: the very answer a read of it gets (a 409
    # session_exists would tell the key that the id exists there).
    taken = create(limited, id="in-w2")
    assert (taken.status_code, taken.json()) == (404, limited.get(f"{SESSIONS}in-w2/").json())
    assert error_code(taken) == "session_not_found"
    assert (
        limited.post(
            f"{SESSIONS}in-w2/events/", {"role": "user", "content": "hi"}, format="json"
        ).status_code
        == 404
    )
    assert not Session.objects.get(external_id="in-w2").events.exists()
    assert Workspace.objects.filter(tenant=cast.alice_tenant, name="w2").count() == 1
