"""Regression tests: ownership on every write path (docs/memory-model.md#sharing). End users ann and
bob of one tenant collide on the same names; a user-limited key writes only its user's rows, reads
shared ones without changing them, and never learns that another user's row exists."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryhub.models import Event, Note, Session
from tests.base import error_code, make_client, make_key, new_session, post_events

S = "/api/v1/sessions/"


@pytest.fixture
def world(cast) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Sessions of ann, of bob and one shared; a note, a document and a summary in each."""
    admin = cast.alice
    for sid, user in (("ann-trip", "ann"), ("bob-trip", "bob"), ("team-trip", "")):
        new_session(admin, sid, user_id=user)
        assert (
            post_events(
                admin, sid, {"role": "user", "content": f"{user or 'team'} packs for the trip"}
            ).status_code
            == 201
        )
        assert (
            admin.put(
                f"{S}{sid}/summary/",
                {"text": f"{user or 'team'} summary", "expected_epoch": 0},
                format="json",
            ).status_code
            == 200
        )
        assert (
            admin.put(
                f"{S}{sid}/scratchpad/",
                {"items": {"goal": f"{user or 'team'} goal"}},
                format="json",
            ).status_code
            == 200
        )
        assert (
            admin.post(
                "/api/v1/documents/",
                {"source_uri": "kb://trip", "text": f"{user or 'team'} trip doc", "session": sid},
                format="json",
            ).status_code
            == 201
        )
    for note_id, user in (("ann-note", "ann"), ("bob-note", "bob"), ("team-note", "")):
        assert (
            admin.post(
                "/api/v1/notes/",
                {"note_id": note_id, "content": f"{user or 'team'} note", "user_id": user},
                format="json",
            ).status_code
            == 201
        )
    return {
        "admin": admin,
        "tenant": cast.alice_tenant,
        "ann": make_client(make_key(cast.alice_tenant, user="ann")),
        "ann_reader": make_client(make_key(cast.alice_tenant, scopes=("read",), user="ann")),
    }


def _owners(tenant: Any) -> dict[str, Any]:
    return {
        "sessions": sorted(
            Session.objects.filter(tenant=tenant).values_list(
                "external_id", "user_id", "event_count"
            )
        ),
        "events": Event.objects.filter(tenant=tenant).count(),
        "notes": sorted(
            Note.objects.filter(tenant=tenant).values_list("note_id", "user_id", "content")
        ),
    }


# --- export ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"scope": "workspace", "workspace": "default"},
        {"workspace": "default"},
        {"scope": "session", "session": "team-trip"},
    ],
)
def test_a_user_limited_key_exports_only_its_users_and_shared_memory(world, body) -> None:
    response = world["ann_reader"].post("/api/v1/export/", body, format="json")
    if "session" in body:  # a conversation nobody owns is not the user's: it is not there
        assert (response.status_code, response.json()) == (
            404,
            world["ann_reader"].get(f"{S}team-trip/").json(),
        )
        return
    assert response.status_code == 200, response.content
    document = response.json()
    text = json.dumps(document)
    assert "bob" not in text, body
    assert {s["id"] for s in document["sessions"]} == {"ann-trip"}
    # The shared note is exported; the unowned conversation and what hangs off it are not.
    assert "team note" in text
    assert {d["user_id"] for d in document["documents"]} == {"ann"}
    assert {c["user_id"] for c in document["chunks"]} == {"ann", ""}
    assert "ann packs for the trip" in text
    assert "team packs" not in text and "team summary" not in text and "team goal" not in text


def test_a_user_limited_key_cannot_export_another_users_session(world) -> None:
    ann = world["ann_reader"]
    response = ann.post("/api/v1/export/", {"session": "bob-trip"}, format="json")
    assert (response.status_code, response.json()) == (404, ann.get(f"{S}bob-trip/").json())


# --- shared rows are read-only to a user-limited key ---------------------------------------------


def test_shared_rows_are_read_only_to_a_user_limited_key(world) -> None:
    ann, tenant = world["ann"], world["tenant"]
    before = _owners(tenant)
    shared_doc = (
        world["admin"].get("/api/v1/documents/?session=team-trip").json()["results"][0]["id"]
    )
    attempts = {
        "claim": ann.patch(f"{S}team-trip/", {"user_id": "ann"}, format="json"),
        "rename": ann.patch(f"{S}team-trip/", {"title": "mine now"}, format="json"),
        "delete": ann.delete(f"{S}team-trip/"),
        "append": post_events(ann, "team-trip", {"role": "user", "content": "ann's words"}),
        "bulk append": post_events(
            ann, "team-trip", {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
        ),
        "get or create": ann.post(S, {"id": "team-trip", "get_or_create": True}, format="json"),
        "scratchpad": ann.put(
            f"{S}team-trip/scratchpad/", {"items": {"goal": "ann's"}}, format="json"
        ),
        "scratchpad clear": ann.delete(f"{S}team-trip/scratchpad/"),
        "summary": ann.put(
            f"{S}team-trip/summary/", {"text": "ann's", "expected_epoch": 1}, format="json"
        ),
        "note put": ann.put("/api/v1/notes/team-note/", {"content": "ann's now"}, format="json"),
        "note delete": ann.delete("/api/v1/notes/team-note/"),
        "document delete": ann.delete(f"/api/v1/documents/{shared_doc}/"),
    }
    missing = ann.get(f"{S}team-trip/")
    assert missing.status_code == 404 and error_code(missing) == "session_not_found"
    for name, response in attempts.items():
        if name in ("note put", "note delete", "document delete"):  # shared knowledge: read-only
            assert response.status_code == 403 and error_code(response) == "shared_read_only", (
                name,
                response.content,
            )
        else:  # a conversation nobody owns is not the user's: it answers as a missing one
            assert (response.status_code, response.json()) == (404, missing.json()), (
                name,
                response.content,
            )
    assert _owners(tenant) == before
    # Shared knowledge is still readable.
    assert ann.get("/api/v1/notes/team-note/").json()["content"] == "team note"
    assert ann.get(f"/api/v1/documents/{shared_doc}/").status_code == 200


# --- a user-limited key never learns another user's row exists ----------------------------------


def test_another_users_session_id_answers_like_a_missing_one(world) -> None:
    ann, tenant = world["ann"], world["tenant"]
    before = _owners(tenant)
    missing = ann.get(f"{S}bob-trip/")
    assert missing.status_code == 404 and error_code(missing) == "session_not_found"
    for response in (
        post_events(ann, "bob-trip", {"role": "user", "content": "ann's words"}),
        post_events(
            ann, "bob-trip", {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
        ),
        ann.post(S, {"id": "bob-trip"}, format="json"),
        ann.post(S, {"id": "bob-trip", "get_or_create": True}, format="json"),
        ann.patch(f"{S}bob-trip/", {"title": "x"}, format="json"),
        ann.delete(f"{S}bob-trip/"),
        ann.put(f"{S}bob-trip/scratchpad/", {"items": []}, format="json"),
    ):
        assert (response.status_code, response.json()) == (404, missing.json())
    assert _owners(tenant) == before


def test_another_users_note_id_answers_like_a_missing_one(world) -> None:
    ann, tenant = world["ann"], world["tenant"]
    before = _owners(tenant)
    missing = ann.get("/api/v1/notes/bob-note/")
    assert missing.status_code == 404 and error_code(missing) == "note_not_found"
    for response in (
        ann.put("/api/v1/notes/bob-note/", {"content": "ann's"}, format="json"),
        ann.post("/api/v1/notes/", {"note_id": "bob-note", "content": "ann's"}, format="json"),
        ann.delete("/api/v1/notes/bob-note/"),
    ):
        assert (response.status_code, response.json()) == (404, missing.json())
    assert _owners(tenant) == before


# --- appends as a user ----------------------------------------------------------------------------


@pytest.mark.parametrize("bulk", [False, True])
def test_appending_as_a_user_to_a_session_of_another_or_of_no_one_is_owner_mismatch(
    world, bulk
) -> None:
    admin, tenant = world["admin"], world["tenant"]
    before = _owners(tenant)

    def append(session: str, user: str) -> Any:
        event = {"role": "user", "content": f"{user}'s words"}
        body = {"events": [event], "user_id": user} if bulk else {**event, "user_id": user}
        return admin.post(f"{S}{session}/events/", body, format="json")

    for session in ("ann-trip", "team-trip"):
        response = append(session, "bob")
        assert response.status_code == 409 and error_code(response) == "owner_mismatch", session
    assert _owners(tenant) == before
    assert append("bob-trip", "bob").status_code == 201
    created = append("bob-new", "bob")
    assert created.status_code == 201
    # a lazily created session is the user's
    assert admin.get(f"{S}bob-new/").json()["user_id"] == "bob"


def test_a_user_limited_key_appends_to_its_own_and_new_sessions(world) -> None:
    ann = world["ann"]
    assert post_events(ann, "ann-trip", {"role": "user", "content": "more"}).status_code == 201
    assert post_events(ann, "ann-new", {"role": "user", "content": "new"}).status_code == 201
    assert world["admin"].get(f"{S}ann-new/").json()["user_id"] == "ann"


def test_get_or_create_for_another_user_is_owner_mismatch(world) -> None:
    admin, tenant = world["admin"], world["tenant"]
    before = _owners(tenant)
    for session in ("ann-trip", "team-trip"):
        response = admin.post(
            S, {"id": session, "user_id": "bob", "get_or_create": True}, format="json"
        )
        assert response.status_code == 409 and error_code(response) == "owner_mismatch", session
    assert _owners(tenant) == before
    same = admin.post(S, {"id": "ann-trip", "user_id": "ann", "get_or_create": True}, format="json")
    assert same.status_code == 200 and same.json()["user_id"] == "ann"


def test_a_tenant_key_claims_an_unowned_session_but_never_moves_an_owned_one(world) -> None:
    admin, tenant = world["admin"], world["tenant"]
    before = _owners(tenant)
    for body in ({"user_id": "bob"}, {"user_id": ""}):
        response = admin.patch(f"{S}ann-trip/", body, format="json")
        assert response.status_code == 409 and error_code(response) == "owner_mismatch", body
    assert _owners(tenant) == before
    claimed = admin.patch(f"{S}team-trip/", {"user_id": "bob"}, format="json")
    assert claimed.status_code == 200 and claimed.json()["user_id"] == "bob"


def test_a_note_written_without_a_user_keeps_its_owner(world) -> None:
    admin = world["admin"]
    response = admin.put("/api/v1/notes/ann-note/", {"content": "ann note, edited"}, format="json")
    assert response.status_code == 200 and response.json()["user_id"] == "ann"
    for note_id in ("ann-note", "team-note"):
        response = admin.put(
            f"/api/v1/notes/{note_id}/", {"content": "bob's now", "user_id": "bob"}, format="json"
        )
        assert response.status_code == 409 and error_code(response) == "owner_mismatch", note_id
    response = admin.post(
        "/api/v1/notes/", {"content": "x", "user_id": "bob", "session": "ann-trip"}, format="json"
    )
    assert response.status_code == 409 and error_code(response) == "owner_mismatch"


# --- reads ----------------------------------------------------------------------------------------


def test_stats_of_a_user_limited_key_count_its_user_and_shared_rows(world) -> None:
    stats = world["ann_reader"].get("/api/v1/stats/").json()
    assert (stats["sessions"], stats["events"], stats["notes"], stats["documents"]) == (1, 1, 2, 2)
    assert stats["summaries"] == world["ann_reader"].get("/api/v1/summaries/").json()["count"]
    everyone = world["admin"].get("/api/v1/stats/").json()
    assert (everyone["sessions"], everyone["notes"], everyone["documents"]) == (3, 3, 3)


def test_every_read_of_a_user_limited_key_is_its_users_and_shared(world) -> None:
    from memoryhub.models import SummaryNode
    from tests.base import remember

    for session in Session.objects.filter(tenant=world["tenant"]):
        remember(
            SummaryNode.objects.create(
                tenant=world["tenant"],
                workspace_id=session.workspace_id,
                channel_id=session.channel_id,
                session=session,
                user_id=session.user_id,
                level="leaf",
                text=f"{session.user_id or 'team'} leaf",
                sequence_start=1,
                sequence_end=1,
            )
        )
    ann = world["ann_reader"]
    reads = {
        "browse": ann.get("/api/v1/browse/"),
        "summaries": ann.get("/api/v1/summaries/"),
        "documents": ann.get("/api/v1/documents/"),
        "notes": ann.get("/api/v1/notes/"),
        "sessions": ann.get(f"{S}"),
        "stats": ann.get("/api/v1/stats/"),
    }
    for name, response in reads.items():
        assert response.status_code == 200, (name, response.content)
        assert "bob" not in json.dumps(response.json()), name
    assert {r["session"] for r in reads["summaries"].json()["results"]} == {"ann-trip"}
    assert {s["id"] for s in reads["sessions"].json()["results"]} == {"ann-trip"}
    assert {d["user_id"] for d in reads["documents"].json()["results"]} == {"ann", ""}
    for sid in ("bob-trip", "team-trip"):
        for path in ("summary/", "scratchpad/", "events/", "restore/"):
            response = ann.get(f"{S}{sid}/{path}")
            assert (response.status_code, response.json()) == (404, ann.get(f"{S}{sid}/").json()), (
                sid,
                path,
            )
