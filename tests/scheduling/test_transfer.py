"""Export/import (S9) picks schedules and runs up as records of another area and round-trips them."""

from __future__ import annotations

import pytest

from memoryhub.transfer import ExportScope, export_memory, import_memory
from scheduling.models import Run, Schedule
from tests.base import make_tenant

pytestmark = pytest.mark.django_db


def test_schedules_and_runs_round_trip(cast) -> None:  # type: ignore[no-untyped-def]
    body = {"name": "berlin mornings", "action": "consolidate", "params": {"dry_run": True}, "user_id": "u1",
            "cadence": {"type": "cron", "value": "0 7 * * 1-5", "timezone": "Europe/Berlin"}}
    sid = cast.alice.post("/api/v1/schedules/", body, format="json").json()["id"]
    schedule = Schedule.objects.get(pk=sid)
    Run.objects.create(tenant=cast.alice_tenant, schedule=schedule, status="succeeded", output="{}", turn_count=2)
    first = export_memory(tenant=cast.alice_tenant, scope=ExportScope())
    records = first["records"]
    assert [r["fields"]["name"] for r in records["scheduling.Schedule"]] == ["berlin mornings"]
    assert len(records["scheduling.Run"]) == 1
    carol = make_tenant("carol")
    import_memory(tenant=carol, data=first)
    copy = Schedule.objects.get(tenant=carol)
    assert (copy.cadence_value, copy.timezone, copy.params, copy.user_id, copy.next_run_at) == (
        "0 7 * * 1-5", "Europe/Berlin", {"dry_run": True}, "u1", schedule.next_run_at)
    assert copy.runs.get().turn_count == 2 and copy.runs.get().tenant_id == carol.pk
    again = export_memory(tenant=carol, scope=ExportScope())
    assert again["records"]["scheduling.Schedule"] == records["scheduling.Schedule"]
