"""Admin: schedules with their next run in their own zone, runs, actions; django-q2's own admin."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command

from scheduling.models import Run, Schedule

pytestmark = pytest.mark.django_db


def make(cast, **fields):  # type: ignore[no-untyped-def]
    values = {
        "name": "paris job",
        "action": "summarise",
        "cadence_type": "cron",
        "cadence_value": "0 9 * * *",
        "timezone": "Europe/Paris",
        "next_run_at": datetime(2026, 7, 1, 7, tzinfo=UTC),
        "authority_scopes": ["read", "write", "admin"],
    }
    values.update(fields)
    return Schedule.objects.create(tenant=cast.alice_tenant, **values)


def test_schedule_list_shows_next_run_in_its_zone(admin_client, cast) -> None:  # type: ignore[no-untyped-def]
    schedule = make(cast, consecutive_failures=2, last_run_status="failed")
    page = admin_client.get("/admin/scheduling/schedule/").content.decode()
    # the console's one date format and "cron 0 9 * * * (Europe/Paris)" in page
    assert "2026-07-01 09:00 CEST (Europe/Paris)" in page
    run = Run.objects.create(
        tenant=cast.alice_tenant,
        schedule=schedule,
        status="failed",
        output="boom: the whole output",
        output_summary="boom: the summary",
    )
    assert (
        "boom: the summary"
        in admin_client.get(f"/admin/scheduling/schedule/{schedule.pk}/change/").content.decode()
    )
    assert "boom: the summary" in admin_client.get("/admin/scheduling/run/").content.decode()
    assert (
        "boom: the whole output"
        in admin_client.get(f"/admin/scheduling/run/{run.pk}/change/").content.decode()
    )


def test_admin_actions_pause_resume_run_now(
    admin_client, cast, django_capture_on_commit_callbacks
) -> None:  # type: ignore[no-untyped-def]
    schedule = make(cast)
    url = "/admin/scheduling/schedule/"
    admin_client.post(url, {"action": "pause_action", "_selected_action": [str(schedule.pk)]})
    schedule.refresh_from_db()
    assert schedule.status == "paused"
    admin_client.post(url, {"action": "resume_action", "_selected_action": [str(schedule.pk)]})
    schedule.refresh_from_db()
    assert schedule.status == "active" and schedule.next_run_at > datetime.now(UTC)
    page = admin_client.post(
        url, {"action": "run_now_action", "_selected_action": [str(schedule.pk)]}
    )
    assert (
        page.status_code == 200
        and schedule.name in page.content.decode()
        and not schedule.runs.exists()
    )
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            url,
            {"action": "run_now_action", "_selected_action": [str(schedule.pk)], "confirm": "yes"},
        )
    assert schedule.runs.get().status == "succeeded"


def test_django_q_admin_is_there(admin_client) -> None:  # type: ignore[no-untyped-def]
    for path in (
        "/admin/django_q/ormq/",
        "/admin/django_q/success/",
        "/admin/django_q/failure/",
        "/admin/django_q/schedule/",
    ):
        assert admin_client.get(path).status_code == 200, path
    assert "scheduling:dispatch" in admin_client.get("/admin/django_q/schedule/").content.decode()


def test_queue_status_command(cast, capsys) -> None:  # type: ignore[no-untyped-def]
    make(cast, consecutive_failures=1)
    call_command("queue_status", "--json")
    status = json.loads(capsys.readouterr().out)
    assert status["schedules"]["by_status"] == {"active": 1} and status["schedules"]["failing"] == 1
    assert "scheduling:dispatch" in [s["name"] for s in status["cluster_schedules"]]
    call_command("queue_status")
    assert "queued tasks:" in capsys.readouterr().out


def test_admin_form_checks_cadence_and_params_like_the_api(cast) -> None:  # type: ignore[no-untyped-def]
    from django.forms.models import model_to_dict

    from scheduling.admin import ScheduleForm

    schedule = make(cast)
    data = {k: v for k, v in model_to_dict(schedule).items() if v is not None}
    data["params"] = "{}"
    bad = ScheduleForm(data={**data, "cadence_value": "*/1 * * *"}, instance=schedule)
    assert not bad.is_valid() and "cadence_value" in bad.errors
    bad_zone = ScheduleForm(
        data={**data, "timezone": "Atlantis/Central"}, instance=Schedule.objects.get(pk=schedule.pk)
    )
    assert not bad_zone.is_valid() and "timezone" in bad_zone.errors
    bad_params = ScheduleForm(
        data={**data, "params": '{"keep": 2}'}, instance=Schedule.objects.get(pk=schedule.pk)
    )
    assert not bad_params.is_valid() and "params" in bad_params.errors
    good = ScheduleForm(
        data={**data, "cadence_type": "interval", "cadence_value": "2h"},
        instance=Schedule.objects.get(pk=schedule.pk),
    )
    assert good.is_valid(), good.errors
    saved = good.save()
    assert saved.next_run_at > datetime.now(UTC) + timedelta(minutes=119)
    schedule.refresh_from_db()
    assert schedule.cadence_value == "2h"


def test_queue_status_shows_the_lanes_and_the_backlog_per_tenant(cast, capsys, settings) -> None:  # type: ignore[no-untyped-def]
    from memoryhub.models import Worker
    from tests.base import post_events

    settings.MEMORYHUB_TASKS_EAGER = False
    post_events(cast.alice, "s1", *[{"role": "user", "content": f"message {i}"} for i in range(3)])
    Worker.objects.create(lane="embed", name="box:7", rate=1.5, busy=True)
    call_command("queue_status", "--json")
    status = json.loads(capsys.readouterr().out)
    assert status["embedding_backlog"] == [
        {
            "tenant": "alice",
            "waiting": 3,
            "set_aside": 0,
            "eta_seconds": 2.0,
            "sentences_waiting": 0,
        }
    ]
    assert [w["worker"] for w in status["lanes"]] == ["box:7"] and status[
        "embedding_rate_per_second"
    ] == 1.5
    call_command("queue_status")
    out = capsys.readouterr().out
    assert (
        "embed on box:7: busy" in out
        and "alice: 3 waiting (ETA 2 s), 0 set aside, 0 waiting for" in out
    )
