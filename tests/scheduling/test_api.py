"""REST contract of schedules and runs: happy paths, bad input, tenant isolation."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryhub.session_work import summarise_due
from scheduling.models import Run, Schedule
from tests.base import error_code, make_client, make_key

pytestmark = pytest.mark.django_db

URL = "/api/v1/schedules/"


def create(client, **overrides):  # type: ignore[no-untyped-def]
    body = {
        "name": "nightly summary",
        "action": "summarise",
        "cadence": {"type": "interval", "value": "15m"},
    }
    body.update(overrides)
    return client.post(URL, body, format="json")


def test_create_interval_schedule(alice) -> None:  # type: ignore[no-untyped-def]
    before = timezone.now()
    response = create(alice, user_id="u1", channel="slack", goal="keep summaries fresh")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "active"
    assert body["cadence"] == {
        "type": "interval",
        "value": "15m",
        "timezone": "UTC",
        "description": "every 15 minutes",
    }
    assert body["user_id"] == "u1" and body["channel"] == "slack" and body["workspace"] == "default"
    next_run = Schedule.objects.get(pk=body["id"]).next_run_at
    assert before + timedelta(minutes=15) <= next_run <= timezone.now() + timedelta(minutes=15)
    assert body["next_run_local"].endswith("(UTC)")


def test_create_cron_in_zone_formats_next_run_locally(alice) -> None:  # type: ignore[no-untyped-def]
    response = create(
        alice, cadence={"type": "cron", "value": "0 9 * * *", "timezone": "Europe/Paris"}
    )
    assert response.status_code == 201
    body = response.json()
    assert ", 09:00 CE" in body["next_run_local"] and body["next_run_local"].endswith(
        "(Europe/Paris)"
    )


@pytest.mark.parametrize(
    "cadence, code",
    [
        ({"type": "cron", "value": "0 9 * * *", "timezone": "Mars/Olympus"}, "invalid_timezone"),
        ({"type": "cron", "value": "61 * * * *"}, "invalid_cron"),
        ({"type": "cron", "value": "* * * * * *"}, "invalid_cron"),
        ({"type": "interval", "value": "30s"}, "interval_too_short"),
        ({"type": "interval", "value": "soon"}, "invalid_interval"),
        ({"type": "once", "value": "2001-01-01T00:00:00Z"}, "once_in_past"),
        ({"type": "once", "value": "tomorrow"}, "invalid_once_time"),
        ({"type": "weekly", "value": "x"}, "validation_error"),
    ],
)
def test_bad_cadence_is_400_with_code_and_stores_nothing(alice, cadence, code) -> None:  # type: ignore[no-untyped-def]
    response = create(alice, cadence=cadence)
    assert response.status_code == 400, response.json()
    assert error_code(response) == code
    assert not Schedule.objects.exists()


@pytest.mark.parametrize(
    "overrides, code",
    [
        ({"action": "launch_rockets"}, "unknown_action"),
        ({"params": {"dry_run": "yes"}, "action": "consolidate"}, "invalid_params"),
        ({"params": {"unknown": 1}}, "invalid_params"),
        ({"params": [1]}, "invalid_params"),
        ({"action": "agent_goal", "goal": ""}, "goal_required"),
        ({"colour": "red"}, "unknown_field"),
        ({"name": ""}, "validation_error"),
        ({"notification_policy": "sometimes"}, "validation_error"),
    ],
)
def test_bad_fields_are_400(alice, overrides, code) -> None:  # type: ignore[no-untyped-def]
    response = create(alice, **overrides)
    assert response.status_code == 400, response.json()
    assert error_code(response) == code
    assert not Schedule.objects.exists()


def test_get_list_search_filters_and_pagination(alice) -> None:  # type: ignore[no-untyped-def]
    ids = [
        create(alice, name=f"job {i}", user_id="u1" if i % 2 else "u2").json()["id"]
        for i in range(5)
    ]
    create(alice, name="backfill", action="embed_backfill")
    assert alice.get(f"{URL}{ids[0]}/").json()["name"] == "job 0"
    page = alice.get(URL, {"limit": 2}).json()
    assert page["count"] == 6 and len(page["results"]) == 2 and page["next"]
    assert alice.get(URL, {"q": "JOB"}).json()["count"] == 5
    assert alice.get(URL, {"user_id": "u1"}).json()["count"] == 2
    assert alice.get(URL, {"action": "embed_backfill"}).json()["results"][0]["name"] == "backfill"
    assert alice.get(URL, {"status": "paused"}).json()["count"] == 0
    bad = alice.get(URL, {"status": "sleeping"})
    assert bad.status_code == 400 and error_code(bad) == "invalid_parameter"


def test_patch_changes_cadence_and_recomputes_next_run(alice) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    response = alice.patch(
        f"{URL}{sid}/",
        {"cadence": {"type": "interval", "value": "2h"}, "name": "renamed"},
        format="json",
    )
    assert response.status_code == 200
    schedule = Schedule.objects.get(pk=sid)
    assert schedule.name == "renamed" and schedule.cadence_value == "2h"
    assert schedule.next_run_at > timezone.now() + timedelta(minutes=119)


def test_bad_patch_changes_nothing(alice) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    for body, code in [
        ({"cadence": {"type": "interval", "value": "1s"}, "name": "x"}, "interval_too_short"),
        ({"status": "active"}, "unknown_field"),
        ({"params": {"keep": 0}, "action": "prune_runs"}, "invalid_params"),
        ({"action": "launch_rockets"}, "unknown_action"),
    ]:
        response = alice.patch(f"{URL}{sid}/", body, format="json")
        assert response.status_code == 400 and error_code(response) == code
    schedule = Schedule.objects.get(pk=sid)
    assert (schedule.name, schedule.cadence_value, schedule.action) == (
        "nightly summary",
        "15m",
        "summarise",
    )


def test_delete_removes_schedule_and_runs(alice) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    assert alice.post(f"{URL}{sid}/run/").status_code == 202
    assert alice.delete(f"{URL}{sid}/").json() == {"id": sid, "deleted": True}
    assert not Schedule.objects.exists() and not Run.objects.exists()
    assert error_code(alice.get(f"{URL}{sid}/")) == "schedule_not_found"


def test_pause_resume(alice) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    Schedule.objects.filter(pk=sid).update(consecutive_failures=2)
    assert alice.post(f"{URL}{sid}/pause/").json()["status"] == "paused"
    assert alice.post(f"{URL}{sid}/pause/").json()["status"] == "paused"  # idempotent
    body = alice.post(f"{URL}{sid}/resume/").json()
    assert body["status"] == "active" and body["consecutive_failures"] == 0


def test_resume_of_completed_schedule_is_409(alice) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    Schedule.objects.filter(pk=sid).update(status="completed")
    response = alice.post(f"{URL}{sid}/resume/")
    assert response.status_code == 409 and error_code(response) == "schedule_completed"


def test_run_now_runs_at_once_and_lists_runs(alice, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = alice.post(f"{URL}{sid}/run/")
    assert callbacks  # the run is enqueued once it is committed
    assert response.status_code == 202
    run = response.json()
    assert run["schedule"] == sid and run["manual"] is True
    # Tests run tasks eagerly: the run has completed with what summarise_due reported.
    detail = alice.get(f"/api/v1/runs/{run['id']}/").json()
    assert detail["status"] == "succeeded" and detail["finished_at"]
    # Policy "always", but alice has no notification webhook: nothing was sent, and the run says
    # why.
    assert detail["notified"] is False
    assert (
        detail["delivery"]["status"] == "no_webhook"
        and "No notification webhook" in detail["delivery"]["last_error"]
    )
    assert json.loads(detail["output"]) == summarise_due(
        tenant_id=Schedule.objects.get(pk=sid).tenant_id
    )
    runs = alice.get(f"{URL}{sid}/runs/").json()
    assert runs["count"] == 1 and runs["results"][0]["id"] == run["id"]
    assert alice.get(f"{URL}{sid}/runs/", {"status": "failed"}).json()["count"] == 0
    schedule = alice.get(f"{URL}{sid}/").json()
    assert schedule["last_run_status"] == "succeeded"


def test_unknown_ids_are_404(alice) -> None:  # type: ignore[no-untyped-def]
    for path in (
        f"{URL}not-a-uuid/",
        f"{URL}00000000-0000-0000-0000-000000000000/runs/",
        "/api/v1/runs/nope/",
    ):
        response = alice.get(path)
        assert response.status_code == 404, path


def test_bob_never_sees_alice_schedules_or_runs(alice, bob) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    run_id = alice.post(f"{URL}{sid}/run/").json()["id"]
    assert bob.get(URL).json()["count"] == 0
    assert bob.get(URL, {"q": "nightly"}).json()["count"] == 0
    for method, path in [
        ("get", f"{URL}{sid}/"),
        ("patch", f"{URL}{sid}/"),
        ("delete", f"{URL}{sid}/"),
        ("post", f"{URL}{sid}/pause/"),
        ("post", f"{URL}{sid}/resume/"),
        ("post", f"{URL}{sid}/run/"),
        ("get", f"{URL}{sid}/runs/"),
        ("get", f"/api/v1/runs/{run_id}/"),
    ]:
        response = getattr(bob, method)(
            path, {"name": "stolen"} if method == "patch" else None, format="json"
        )
        assert response.status_code == 404, (method, path)
    schedule = Schedule.objects.get(pk=sid)
    assert schedule.name == "nightly summary" and schedule.status == "active"
    assert Run.objects.filter(schedule=schedule).count() == 1


def test_workspace_key_sees_only_its_workspace(cast) -> None:  # type: ignore[no-untyped-def]
    other = cast.alice.post(
        URL,
        {
            "name": "other ws",
            "action": "prune_runs",
            "workspace": "research",
            "cadence": {"type": "interval", "value": 3600},
        },
        format="json",
    ).json()
    assert other["workspace"] == "research"
    create(cast.alice, name="default ws", action="prune_runs")
    # A tenant-wide job labelled with the workspace still works on the whole tenant: not the
    # workspace key's to see (its runs report on every workspace).
    create(cast.alice, name="tenant job in research", workspace="research")
    limited = make_client(make_key(cast.alice_tenant, workspace="research"))
    names = [s["name"] for s in limited.get(URL).json()["results"]]
    assert names == ["other ws"]
    forbidden = create(limited, workspace="default", action="prune_runs")
    assert forbidden.status_code == 403 and error_code(forbidden) == "workspace_forbidden"


def test_read_only_key_cannot_write(cast) -> None:  # type: ignore[no-untyped-def]
    reader = make_client(make_key(cast.alice_tenant, scopes=("read",)))
    response = create(reader)
    assert response.status_code == 403 and error_code(response) == "insufficient_scope"
    assert reader.get(URL).status_code == 200


def test_new_cadence_revives_a_completed_schedule_and_expired_one_shot_cannot_resume(alice) -> None:  # type: ignore[no-untyped-def]
    at = (timezone.now() + timedelta(hours=1)).isoformat()
    sid = create(alice, cadence={"type": "once", "value": at}).json()["id"]
    Schedule.objects.filter(pk=sid).update(
        status="paused", cadence_value=(timezone.now() - timedelta(hours=1)).isoformat()
    )
    response = alice.post(f"{URL}{sid}/resume/")
    assert response.status_code == 409 and error_code(response) == "schedule_expired"
    Schedule.objects.filter(pk=sid).update(status="completed", next_run_at=None)
    body = alice.patch(
        f"{URL}{sid}/", {"cadence": {"type": "interval", "value": "1h"}}, format="json"
    ).json()
    assert body["status"] == "active" and body["next_run_at"]


def test_bad_run_list_parameters_are_400(alice) -> None:  # type: ignore[no-untyped-def]
    sid = create(alice).json()["id"]
    for params in ({"status": "done"}, {"limit": 0}, {"offset": -1}):
        response = alice.get(f"{URL}{sid}/runs/", params)
        assert response.status_code == 400 and error_code(response) == "invalid_parameter", params
    pause_completed = Schedule.objects.filter(pk=sid).update(status="completed")
    assert pause_completed == 1
    response = alice.post(f"{URL}{sid}/pause/")
    assert response.status_code == 409 and error_code(response) == "schedule_completed"
