"""Sharing is explicit on the session endpoints too: a conversation nobody owns ("trip-1", made
without a user) is the tenant's. To a key limited to one user it is not there, exactly as another
user's: not listed, every read of it 404 session_not_found, not counted in stats, not exported.
A tenant-wide key still sees it. ann and bob each hold a conversation with the same words."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memoryhub.models import Session, SummaryNode
from tests.base import error_code, make_client, make_key, new_session, post_events

S = "/api/v1/sessions/"
READS = ("", "events/", "restore/", "scratchpad/", "summary/")
WORDS = "Noted: Lisbon, 3 May, aisle seat."


@pytest.fixture
def world(cast) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """trip-1 (no owner), ann-1 (ann's) and bob-1 (bob's): the same message, rolling summary,
    scratchpad and summary-tree leaf in each."""
    admin = cast.alice
    for sid, user in (("trip-1", ""), ("ann-1", "ann"), ("bob-1", "bob")):
        new_session(admin, sid, user_id=user)
        assert (
            post_events(admin, sid, {"role": "user", "content": f"{sid}: {WORDS}"}).status_code
            == 201
        )
        assert (
            admin.put(
                f"{S}{sid}/summary/", {"text": f"{sid} summary", "expected_epoch": 0}, format="json"
            ).status_code
            == 200
        )
        assert (
            admin.put(
                f"{S}{sid}/scratchpad/", {"items": {"seat": f"{sid} aisle"}}, format="json"
            ).status_code
            == 200
        )
        session = Session.objects.get(tenant=cast.alice_tenant, external_id=sid)
        SummaryNode.objects.create(
            tenant=cast.alice_tenant,
            workspace_id=session.workspace_id,
            channel_id=session.channel_id,
            session=session,
            user_id=user,
            level="leaf",
            text=f"{sid} leaf",
            sequence_start=1,
            sequence_end=1,
        )
    nodes = dict(
        SummaryNode.objects.filter(tenant=cast.alice_tenant).values_list(
            "session__external_id", "pk"
        )
    )
    return {
        "admin": admin,
        "nodes": nodes,
        "ann": make_client(make_key(cast.alice_tenant, user="ann")),
        "bob": make_client(make_key(cast.alice_tenant, user="bob")),
    }


@pytest.mark.parametrize("user", ["ann", "bob"])
def test_an_unowned_session_is_not_there_for_a_user_limited_key(world, user: str) -> None:
    key, own, other = world[user], f"{user}-1", ("bob-1" if user == "ann" else "ann-1")
    listed = key.get(S)
    assert listed.status_code == 200
    assert {s["id"] for s in listed.json()["results"]} == {own}
    for sid in ("trip-1", other):
        missing = key.get(f"{S}{sid}/")
        assert missing.status_code == 404 and error_code(missing) == "session_not_found", (
            sid,
            missing.content,
        )
        for path in READS:
            response = key.get(f"{S}{sid}/{path}")
            # The very answer a missing id gets: nothing says the conversation exists.
            assert (response.status_code, response.json()) == (404, missing.json()), (sid, path)
    for path in READS:
        response = key.get(f"{S}{own}/{path}")
        assert response.status_code == 200, (path, response.content)
        assert "trip-1" not in json.dumps(response.json()), path

    summaries = key.get("/api/v1/summaries/")
    assert summaries.status_code == 200
    assert {r["session"] for r in summaries.json()["results"]} == {own}
    for sid in ("trip-1", other):
        node = key.get(f"/api/v1/summaries/{world['nodes'][sid]}/")
        assert node.status_code == 404 and error_code(node) == "summary_not_found", sid
    assert key.get(f"/api/v1/summaries/{world['nodes'][own]}/").status_code == 200

    stats = key.get("/api/v1/stats/").json()
    assert (stats["sessions"], stats["events"], stats["summaries"]) == (1, 1, 1), stats
    assert stats["chunks"]["by_kind"].get("event", 0) <= 1, stats["chunks"]

    exported = key.post("/api/v1/export/", {"workspace": "default"}, format="json")
    assert exported.status_code == 200, exported.content
    assert {s["id"] for s in exported.json()["sessions"]} == {own}
    text = json.dumps(exported.json())
    assert f"{own}: {WORDS}" in text
    assert "trip-1" not in text and other not in text
    refused = key.post("/api/v1/export/", {"scope": "session", "session": "trip-1"}, format="json")
    assert (refused.status_code, refused.json()) == (404, key.get(f"{S}trip-1/").json())


def test_a_tenant_wide_key_still_sees_an_unowned_session(world) -> None:
    admin = world["admin"]
    assert {s["id"] for s in admin.get(S).json()["results"]} == {"trip-1", "ann-1", "bob-1"}
    for path in READS:
        assert admin.get(f"{S}trip-1/{path}").status_code == 200, path
    assert {r["session"] for r in admin.get("/api/v1/summaries/").json()["results"]} == {
        "trip-1",
        "ann-1",
        "bob-1",
    }
    assert admin.get(f"/api/v1/summaries/{world['nodes']['trip-1']}/").status_code == 200
    stats = admin.get("/api/v1/stats/").json()
    assert (stats["sessions"], stats["events"], stats["summaries"]) == (3, 3, 3)
    exported = admin.post(
        "/api/v1/export/", {"scope": "session", "session": "trip-1"}, format="json"
    )
    assert exported.status_code == 200 and f"trip-1: {WORDS}" in json.dumps(exported.json())


def test_writes_to_an_unowned_session_by_a_user_limited_key_answer_as_a_missing_one(world) -> None:
    ann = world["ann"]
    missing = ann.get(f"{S}trip-1/").json()
    attempts = {
        "append": post_events(ann, "trip-1", {"role": "user", "content": "ann's words"}),
        "patch": ann.patch(f"{S}trip-1/", {"title": "mine"}, format="json"),
        "delete": ann.delete(f"{S}trip-1/"),
        "scratchpad": ann.put(
            f"{S}trip-1/scratchpad/", {"items": {"seat": "window"}}, format="json"
        ),
        "summary": ann.put(
            f"{S}trip-1/summary/", {"text": "ann's", "expected_epoch": 1}, format="json"
        ),
        "summary tree build": ann.post(f"{S}trip-1/summary/tree/"),
        "get or create": ann.post(S, {"id": "trip-1", "get_or_create": True}, format="json"),
    }
    for name, response in attempts.items():
        assert (response.status_code, response.json()) == (404, missing), name
    trip = Session.objects.get(external_id="trip-1", tenant__sessions__external_id="ann-1")
    assert (trip.user_id, trip.event_count, trip.title) == ("", 1, "")
