"""`POST /export/ {"user_id": …}`: everything of one end user (her sessions with their events,
notes, facts, summaries, documents, scratchpad, schedules and runs) and nothing of anyone else,
importable into another tenant; a user-limited key exports its own user and is answered for any
other as for a user with nothing here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduling.models import Run, Schedule
from tests.base import add_memories, error_code, make_client, make_key, make_tenant

API = "/api/v1"


def ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.content
    return response.json()


def fill(
    client: Any,
    tenant: Any,
    *,
    user: str,
    session: str,
    note: str,
    text: str,
    workspace: str = "default",
) -> None:
    """One of everything for `user`, each carrying `text`."""
    ok(
        client.post(
            f"{API}/sessions/",
            {"id": session, "user_id": user, "workspace": workspace},
            format="json",
        )
    )
    ok(
        client.post(
            f"{API}/sessions/{session}/events/",
            {"role": "user", "content": f"{text}: my locker is 4411"},
            format="json",
        )
    )
    ok(
        client.post(
            f"{API}/notes/",
            {"note_id": note, "content": f"{text} note", "user_id": user, "workspace": workspace},
            format="json",
        )
    )
    ok(
        client.post(
            f"{API}/facts/",
            {
                "category": "profile",
                "key": "home",
                "content": f"{text} lives in Porto",
                "user_id": user,
                "workspace": workspace,
            },
            format="json",
        )
    )
    ok(
        client.post(
            f"{API}/documents/",
            {
                "source_uri": f"doc://{note}",
                "text": f"{text} document",
                "workspace": workspace,
                "user_id": user,
            },
            format="json",
        )
    )
    ok(
        client.put(
            f"{API}/sessions/{session}/scratchpad/",
            {"items": [{"key": "plan", "value": f"{text} plan"}]},
            format="json",
        )
    )
    schedule = ok(
        client.post(
            f"{API}/schedules/",
            {
                "name": f"{text} weekly tidy",
                "action": "prune_runs",
                "user_id": user,
                "workspace": workspace,
                "cadence": {"type": "cron", "value": "0 7 * * 1", "timezone": "UTC"},
            },
            format="json",
        )
    )
    # as an import leaves it: round trips
    Schedule.objects.filter(pk=schedule["id"]).update(status="paused")
    Run.objects.create(
        tenant=tenant, schedule_id=schedule["id"], status="succeeded", output=f"{text} run output"
    )


@pytest.fixture
def world(cast: Any, django_capture_on_commit_callbacks: Any) -> Any:
    """Tenant alice: ann (in default and beta), bob and annie beside her, a shared note. Tenant bob:
    a user also named ann, under the same session and note ids as alice's ann. Everything indexed
    and embedded, as the background work leaves it."""
    with django_capture_on_commit_callbacks(execute=True):
        _fill_world(cast)
    return cast


def _fill_world(cast: Any) -> None:
    alice = cast.alice
    fill(alice, cast.alice_tenant, user="ann", session="s1", note="n1", text="ann-alpha")
    fill(
        alice,
        cast.alice_tenant,
        user="ann",
        session="s1-beta",
        note="n1-beta",
        text="ann-beta",
        workspace="beta",
    )
    fill(alice, cast.alice_tenant, user="bob", session="s2", note="n2", text="bob-alpha")
    fill(alice, cast.alice_tenant, user="annie", session="s3", note="n3", text="annie-alpha")
    ok(
        alice.post(
            f"{API}/notes/",
            {"note_id": "shared", "content": "shared-knowledge note"},
            format="json",
        )
    )
    ok(alice.post(f"{API}/sessions/", {"id": "s4", "user_id": "ann"}, format="json"))
    # her summaries (a tree), a scratchpad, a note, a fact
    add_memories(cast.alice_tenant, "s4", user_id="ann")
    fill(cast.bob, cast.bob_tenant, user="ann", session="s1", note="n1", text="other-tenant")


OTHERS = ("bob-alpha", "annie-alpha", "shared-knowledge", "other-tenant")


def export(client: Any, **body: Any) -> Any:
    return client.post(f"{API}/export/", body, format="json")


def test_a_users_export_holds_everything_of_hers_and_nothing_else(world: Any) -> None:
    response = export(world.alice, user_id="ann")
    assert response.status_code == 200, response.content
    body = response.content.decode()
    doc = json.loads(body)
    assert doc["scope"] == {"type": "user", "user_id": "ann"}
    assert [s["id"] for s in doc["sessions"]] == ["s1", "s1-beta", "s4"]
    assert [w["name"] for w in doc["workspaces"]] == ["beta", "default"]
    records = doc["records"]
    assert {r["fields"]["note_id"] for r in records["memoryhub.Note"]} >= {"n1", "n1-beta"}
    assert {
        r["fields"]["user_id"]
        for label in ("memoryhub.Note", "memoryhub.Fact", "memoryhub.SummaryNode")
        for r in records[label]
    } == {"ann"}
    assert len(records["memoryhub.SummaryNode"]) == 3
    assert sorted(i["fields"]["value"] for i in records["memoryhub.ScratchpadItem"]) == [
        "ann-alpha plan",
        "ann-beta plan",
        "buy quinces",
    ]
    assert sorted(r["fields"]["name"] for r in records["scheduling.Schedule"]) == [
        "ann-alpha weekly tidy",
        "ann-beta weekly tidy",
    ]
    assert sorted(r["fields"]["output"] for r in records["scheduling.Run"]) == [
        "ann-alpha run output",
        "ann-beta run output",
    ]
    assert sorted(d["source_uri"] for d in doc["documents"]) == ["doc://n1", "doc://n1-beta"]
    assert doc["chunks"] and {c["user_id"] for c in doc["chunks"]} == {"ann"}
    for mark in ("ann-alpha", "ann-beta"):
        assert mark in body
    for mark in OTHERS:
        assert mark not in body, mark


def test_it_imports_into_another_tenant_and_exports_the_same(
    world: Any, django_capture_on_commit_callbacks: Any
) -> None:
    first = ok(export(world.alice, user_id="ann"))
    carol = make_client(make_key(make_tenant("carol")))
    with django_capture_on_commit_callbacks(execute=True):
        imported = carol.post(f"{API}/import/", json.dumps(first), content_type="application/json")
    assert imported.status_code == 201, imported.content
    assert imported.json()["imported"]["sessions"] == 3
    # An imported schedule acts for no one until a key changes or resumes it (scheduling.authority),
    # and a user's export carries the schedules acting for her: carol's key takes them on.
    for schedule in Schedule.objects.filter(tenant__name="carol"):
        ok(carol.patch(f"{API}/schedules/{schedule.pk}/", {}, format="json"))
    second = ok(export(carol, user_id="ann"))
    # Schedules are listed by id, a random UUID: compared as sets, everything else exactly.
    assert _schedules(second) == _schedules(first) and len(_schedules(first)) == 2
    assert _without_schedules(second) == _without_schedules(first)
    found = ok(
        carol.post(
            f"{API}/search/", {"query": "locker", "user_id": "ann", "mode": "text"}, format="json"
        )
    )
    assert {r["text"] for r in found["results"]} == {
        "ann-alpha: my locker is 4411",
        "ann-beta: my locker is 4411",
    }


SCHEDULING = ("scheduling.Schedule", "scheduling.Run")


def _schedules(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(schedule name, status, its runs' outputs) of an export."""
    records = doc["records"]
    runs = [
        (r["fields"]["schedule"]["key"], r["fields"]["output"]) for r in records["scheduling.Run"]
    ]
    return sorted(
        (
            s["fields"]["name"],
            s["fields"]["status"],
            "|".join(sorted(o for k, o in runs if k == s["key"])),
        )
        for s in records["scheduling.Schedule"]
    )


def _without_schedules(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, "records": {k: v for k, v in doc["records"].items() if k not in SCHEDULING}}


def test_a_user_limited_key_exports_its_own_user_only(world: Any) -> None:
    ann = make_client(make_key(world.alice_tenant, user="ann"))
    own, implied = ok(export(ann, user_id="ann")), ok(export(ann, scope="user"))
    assert own == implied == ok(export(world.alice, user_id="ann"))
    other, absent = export(ann, user_id="bob"), export(ann, user_id="nobody")
    tenant_absent = export(world.alice, user_id="nobody")
    # Another user is answered exactly as a user with nothing here: it tells ann nothing of bob.
    for response, user in ((other, "bob"), (absent, "nobody"), (tenant_absent, "nobody")):
        assert response.status_code == 404 and error_code(response) == "user_not_found"
        assert response.json()["error"]["message"] == f"User {user!r} has nothing in this tenant."
    assert "bob-alpha" not in other.content.decode()


def test_a_tenant_key_exports_any_user_and_bad_requests_are_refused(world: Any) -> None:
    bob = ok(export(world.alice, user_id="bob"))
    assert [s["id"] for s in bob["sessions"]] == ["s2"] and "ann-alpha" not in json.dumps(bob)
    limited = make_client(make_key(world.alice_tenant, workspace="default"))
    assert error_code(export(limited, user_id="ann")) == "workspace_limited_key"
    assert error_code(export(world.alice, user_id="ann", session="s1")) == "user_export_alone"
    assert error_code(export(world.alice, scope="user")) == "user_required"
    assert error_code(export(world.alice, user_id="")) == "validation_error"


def test_the_command_exports_a_user_as_the_api_does(world: Any) -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("export_memory", "--tenant", "alice", "--user", "ann", stdout=out)
    assert json.loads(out.getvalue()) == ok(export(world.alice, user_id="ann"))
    with pytest.raises(CommandError, match="has nothing in this tenant"):
        call_command("export_memory", "--tenant", "alice", "--user", "nobody", stdout=StringIO())
