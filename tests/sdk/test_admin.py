"""Schedules and runs, export/import, forget-user, health/ready/schema through both clients."""

from __future__ import annotations

from typing import Any

import pytest
from memoryhub_client import BadRequestError, NotFoundError, PermissionDeniedError

pytestmark = pytest.mark.django_db(transaction=True)


def test_schedules_and_runs(hub: Any, keys: dict[str, str]) -> None:
    alice = hub(keys["alice"])
    nightly = alice.create_schedule(
        "nightly summary",
        "summarise",
        {"type": "interval", "value": "15m"},
        user_id="u1",
        goal="keep summaries fresh",
    )
    assert (nightly["status"], nightly["cadence"]["description"]) == ("active", "every 15 minutes")
    alice.create_schedule(
        "weekly tidy",
        "consolidate",
        {"type": "cron", "value": "0 3 * * 1"},
        params={"dry_run": True},
    )
    with pytest.raises(BadRequestError) as bad:
        alice.create_schedule("x", "summarise", {"type": "interval", "value": "30s"})
    assert bad.value.code == "interval_too_short"

    assert [s["name"] for s in alice.list_schedules(q="nightly")] == ["nightly summary"]
    assert sorted(s["name"] for s in alice.iter_schedules(limit=1)) == [
        "nightly summary",
        "weekly tidy",
    ]
    assert alice.get_schedule(nightly["id"])["user_id"] == "u1"
    changed = alice.update_schedule(
        nightly["id"], name="hourly summary", cadence={"type": "interval", "value": "1h"}
    )
    assert (changed["name"], changed["cadence"]["value"]) == ("hourly summary", "1h")
    assert alice.pause_schedule(nightly["id"])["status"] == "paused"
    assert alice.resume_schedule(nightly["id"])["status"] == "active"

    run = alice.run_schedule(nightly["id"])
    assert run["schedule"] == nightly["id"] and run["manual"] is True
    alice.run_schedule(nightly["id"])
    runs = alice.list_runs(nightly["id"])
    assert runs.count == 2 and runs.raw["schedule"] == nightly["id"]
    assert len(list(alice.iter_runs(nightly["id"], limit=1))) == 2
    fetched = alice.get_run(run["id"])
    assert fetched["id"] == run["id"] and fetched["status"] in {"queued", "running", "succeeded"}

    assert alice.delete_schedule(nightly["id"]) == {"id": nightly["id"], "deleted": True}
    with pytest.raises(NotFoundError) as gone:
        alice.get_schedule(nightly["id"])
    assert gone.value.code == "schedule_not_found"


def test_export_import_and_forget_user(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    alice.remember("s-u1", ["I am user one."], user_id="u1")
    alice.remember("s-u2", ["I am user two."], user_id="u2")
    alice.create_note("u1's note", user_id="u1")

    exported = alice.export_memory(session="s-u1")
    assert exported["scope"] == {"type": "session", "session": "s-u1"}
    assert [s["id"] for s in exported["sessions"]] == ["s-u1"]
    imported = bob.import_memory(exported)
    assert imported["imported"]["sessions"] == 1
    assert [e["content"] for e in bob.list_events("s-u1")] == ["I am user one."]
    again = bob.import_memory(exported, on_conflict="merge")  # a re-import: nothing twice
    assert again["merged_sessions"] == ["s-u1"] and again["imported"] == {}
    assert [e["content"] for e in bob.list_events("s-u1")] == ["I am user one."]
    u1 = alice.export_memory(user_id="u1")  # everything of one end user
    assert u1["scope"] == {"type": "user", "user_id": "u1"} and [
        s["id"] for s in u1["sessions"]
    ] == ["s-u1"]
    assert [r["fields"]["content"] for r in u1["records"]["memoryhub.Note"]] == ["u1's note"]

    forgotten = alice.forget_user("u1")
    assert forgotten["user_id"] == "u1" and forgotten["total"] >= 3
    with pytest.raises(NotFoundError):
        alice.get_session("s-u1")
    assert alice.get_session("s-u2")["user_id"] == "u2"
    assert alice.list_notes(user_id="u1").count == 0

    reader = hub(keys["alice_read"])
    with pytest.raises(PermissionDeniedError) as denied:
        reader.forget_user("u2")
    assert (denied.value.status, denied.value.code) == (403, "insufficient_scope")


def test_delete_workspace(hub: Any, keys: dict[str, str]) -> None:
    alice, bob = hub(keys["alice"]), hub(keys["bob"])
    alice.remember("s-lab", ["The lab notebook is on shelf 3."], workspace="lab")
    alice.remember("s-home", ["Keep this one."])
    bob.remember("s-lab", ["Bob's lab is elsewhere."], workspace="lab")
    preview = alice.delete_workspace("lab", dry_run=True)
    assert preview["dry_run"] is True and preview["deleted"]["memoryhub.Session"] == 1
    assert alice.get_session("s-lab")["workspace"] == "lab"
    done = alice.delete_workspace("lab")
    assert (
        done["dry_run"] is False
        and done["deleted"] == preview["deleted"]
        and done["total"] == preview["total"]
    )
    with pytest.raises(NotFoundError):
        alice.get_session("s-lab")
    assert alice.get_session("s-home")["id"] == "s-home"
    assert bob.get_session("s-lab")["workspace"] == "lab"  # bob's workspace of the same name stays
    with pytest.raises(NotFoundError) as missing:
        alice.delete_workspace("lab")
    assert missing.value.code == "workspace_not_found"
    with pytest.raises(PermissionDeniedError) as denied:
        hub(keys["alice_read"]).delete_workspace("default")
    assert (denied.value.status, denied.value.code) == (403, "insufficient_scope")


def test_health_ready_and_schema(hub: Any, keys: dict[str, str]) -> None:
    anonymous = hub(None)
    assert anonymous.health()["status"] == "ok"
    ready = anonymous.ready()
    assert ready["status"] == "ready" and ready["checks"] == {"database": "ok", "migrations": "ok"}
    schema = hub(keys["alice"]).openapi()
    assert (
        schema["openapi"].startswith("3.")
        and "/api/v1/sessions/{session_id}/events/" in schema["paths"]
    )
