"""Schedules belong to a user: forget-user deletes them and their runs (and nothing of others)."""

from __future__ import annotations

import pytest

from scheduling.models import Run, Schedule

pytestmark = pytest.mark.django_db


def schedule_with_run(client, user_id: str) -> str:  # type: ignore[no-untyped-def]
    body = {
        "name": f"job of {user_id}",
        "action": "summarise",
        "user_id": user_id,
        "cadence": {"type": "interval", "value": "1h"},
    }
    sid = client.post("/api/v1/schedules/", body, format="json").json()["id"]
    assert client.post(f"/api/v1/schedules/{sid}/run/").status_code == 202
    return sid


def test_forget_user_deletes_their_schedules_and_runs(cast) -> None:  # type: ignore[no-untyped-def]
    gone = schedule_with_run(cast.alice, "u1")
    kept = schedule_with_run(cast.alice, "u2")
    bobs = schedule_with_run(cast.bob, "u1")
    response = cast.alice.delete("/api/v1/users/u1/")
    assert response.status_code == 200, response.json()
    assert (
        not Schedule.objects.filter(pk=gone).exists()
        and not Run.objects.filter(schedule_id=gone).exists()
    )
    assert Run.objects.filter(schedule_id=kept).count() == 1
    assert Run.objects.filter(schedule_id=bobs).count() == 1
